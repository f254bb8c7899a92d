package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// rqQuestion starts a plain reconcile at a terminal, with no trust policy in force and an
// instance of a namespace broker with credentials left polling by its provision: it
// checks that the record is listed with the Secret that would go to the broker's URL,
// then answers the one question with keys.
func rqQuestion(t *testing.T, e *instEnv, env []string, keys string) *instTerminal {
	t.Helper()
	cmd, term := startInPTY(t, e.ns, env, 200, "reconcile", "--interval", "200ms")
	term.answer("with your own rights, trusting everyone who may write ConfigMaps in namespace "+e.ns+"?", keys)
	_ = term.exited(cmd, 60*time.Second, "reconcile did not finish")
	term.waitShows("1 record: ")
	out := term.text()
	assert.Check(t, is.Contains(out, "  serviceinstance "+e.ns+"/db\r\n"))
	assert.Check(t, is.Contains(out, `      Secret "broker-auth" (credentials of broker "acme") goes to `+e.b.URL()))
	assert.Check(t, is.Contains(out, "Act on this record with your own rights"))
	return term
}

// At a terminal, with no trust policy, plain reconcile names the record it cannot verify
// and what your rights would do for it; a yes finishes it.
func TestReconcileQuestion_YesFinishesTheRecordsShown(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	rtAsyncInstances(t, e, "db")

	term := rqQuestion(t, e, rtEnv, "y\r")

	term.waitShows("1 record: 1 done")
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
}

// Without a terminal there is no question, and the refusal names the flag. At a
// terminal a no refuses the same way: the broker hears nothing and the operation stays
// as it was, the record refused.
func TestReconcileQuestion_NoRefusesAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	rtAsyncInstances(t, e, "db")
	before, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	e.b.ClearRequests()

	// No terminal: no question; the refusal names the flag.
	r := instRun(t, e.ns, rtEnv, "reconcile", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, !strings.Contains(r.Stderr, "Act on "), "no question without a terminal: %s", r.Stderr)
	assert.Check(t, is.Contains(r.Stderr, "1 record: 1 refused"))
	assert.Check(t, is.Contains(r.Stderr, "run again with --trust-namespace-writers"))

	// At a terminal, once the refusal's retry is due: a no.
	term := rqQuestion(t, e, []string{cmdutil.TestBrokerTimeoutEnv + "=30s", cmdutil.TestClockSkewEnv + "=2m"}, "n\r")

	term.waitShows("1 record: 1 refused")
	assert.Check(t, is.Contains(term.text(), "Your rights are not lent"))
	assert.Equal(t, len(e.b.Requests()), 0, "the broker hears nothing")
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.Status.InFlight != nil, "%+v", inst.Status)
	assert.Equal(t, inst.Status.InFlight.RequestID, before.Status.InFlight.RequestID, "the same operation, polled later")
	assert.Equal(t, instConditionReason(inst, v1alpha1.ConditionRefused), "True/RefusedAuthorUnverified")
}
