package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// TestClaimTakeover_KilledWaitIsTakenOverAtOnce: a "provision --wait" killed (kill -9)
// while the broker works on its asynchronous provision leaves its claim behind. A
// reconcile run at once on the same host takes the claim over, since its process has
// ended, rather than skipping the record until the claim runs out, and finishes the
// instance.
func TestClaimTakeover_KilledWaitIsTakenOverAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := instSetupCatalog(t, nil)
	e.b.SetAsyncDelay(time.Hour)

	s := startCatalog(t, e.ns, "provision", "db", "--class", "postgresql", "--plan", "standard", "--wait", "--interval", "200ms")
	var held store.Lease
	var inst *v1alpha1.ServiceInstance
	instWaitFor(t, "the provision to be polled under the command's claim", 30*time.Second, func() bool {
		var err error
		inst, err = e.st.Instances().Get(ctx, e.ns, "db")
		if err != nil || inst.Status.InFlight == nil || !inst.Status.InFlight.Async {
			return false
		}
		l, ok := store.LeaseOf(inst)
		held = l
		return ok && strings.HasPrefix(l.Holder, "kubectl-catalog@") && l.Live(time.Now())
	})
	assert.NilError(t, s.cmd.Process.Kill())
	<-s.done
	killed, err := e.st.Instances().Get(ctx, e.ns, "db")
	assert.NilError(t, err)
	l, ok := store.LeaseOf(killed)
	assert.Assert(t, ok && l.Holder == held.Holder && l.Live(time.Now()), "the killed command's claim is left: %+v", l)
	assert.Assert(t, l.Abandoned(), "its process has ended: %+v", l.Process)
	// A run never polls sooner than the record says: the poll the killed command would
	// have made next is due first.
	if at := killed.Status.InFlight.NextPollAt; at != nil {
		instWaitFor(t, "the next poll to be due", 10*time.Second, func() bool { return time.Now().After(at.Add(time.Second)) })
	}
	e.b.FinishOperations()

	r := instRun(t, e.ns, nil, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "30s")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stderr, "took over the claim of "+held.Holder+", whose process has ended"))
	assert.Check(t, !strings.Contains(r.Stdout+r.Stderr, "skipped"), "%s\n%s", r.Stdout, r.Stderr)
	done, err := e.st.Instances().Get(ctx, e.ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, done.Status.Phase, v1alpha1.PhaseReady, "%+v", done.Status)
	_, claimed := store.LeaseOf(done)
	assert.Check(t, !claimed, "the run released the claim it took over")
}

// TestRefused_ShownAsARefusalNotAFailure: a record reconcile refuses (no trust policy
// vouches for its author) while its asynchronous provision is under way at the broker
// is "Refused (…)" in get, described with the reason, the operation held back and the
// command that resolves it, and carries a Refused condition in -o json.
func TestRefused_ShownAsARefusalNotAFailure(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	rtAsyncInstances(t, e, "db")
	r := instRun(t, e.ns, rtEnv, "reconcile", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "1 record: 1 refused"))

	r = instCatalog(t, e.ns, "get", "instances")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stdout, "Refused (AuthorUnverified)"))
	assert.Check(t, !strings.Contains(r.Stdout, "Failed"), r.Stdout)

	r = instCatalog(t, e.ns, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stdout, "Status:           Refused (AuthorUnverified)"))
	assert.Check(t, is.Contains(r.Stdout, "Refused:          RefusedAuthorUnverified (not a broker failure"))
	assert.Check(t, is.Contains(r.Stdout, "  held back:      the provision begun at "))
	assert.Check(t, is.Contains(r.Stdout, "  resolve:        kubectl catalog init\n"))

	r = instCatalog(t, e.ns, "get", "instances", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	var list struct {
		Items []v1alpha1.ServiceInstance `json:"items"`
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &list))
	assert.Assert(t, is.Len(list.Items, 1))
	assert.Equal(t, instConditionReason(&list.Items[0], v1alpha1.ConditionRefused), "True/RefusedAuthorUnverified")
}
