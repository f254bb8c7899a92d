package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// TestDeregister_AProvisionStartedMeanwhile_IsRefusedAndCanBeDeprovisioned: a
// "deregister" stopped after its last look for the broker's instances, just before it
// deletes anything; a "provision" made then is refused before its call (the broker is
// marked as being deregistered), so no instance exists at the broker that nobody could
// deprovision. The interrupted deregister leaves the mark; run again, it is refused for
// the new (never provisioned) instance, which is deprovisioned without the broker, and
// then it deregisters.
func TestDeregister_AProvisionStartedMeanwhile_IsRefusedAndCanBeDeprovisioned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := instSetupCatalog(t, nil)

	cmd, lines := instStartKillable(t, e.ns, []string{cmdutil.TestPauseEnv + "=" + string(engine.HookDeregisterChecked)}, "deregister", "acme")
	ccAwaitLine(t, lines, "test hook: paused at "+string(engine.HookDeregisterChecked), 45*time.Second)

	r := instCatalog(t, e.ns, "provision", "db", "--class", "postgresql", "--plan", "standard")
	inst, err := e.st.Instances().Get(ctx, e.ns, "db")
	assert.NilError(t, err, "exit %d: %s", r.ExitCode, r.Stderr)
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	assert.Assert(t, c != nil, "%+v", inst.Status)
	assert.Check(t, is.Contains(c.Message, `broker "acme" is being deregistered`))
	assert.Check(t, is.Contains(r.Stdout+r.Stderr, `broker "acme" is being deregistered`))
	assert.Equal(t, len(e.b.RequestsFor(broker.OpProvision)), 0, "no provision reaches a broker being deregistered")
	assert.Equal(t, len(inst.Status.ExternalIDs), 0)

	ccKill(t, cmd)
	b, err := e.st.Brokers().Get(ctx, e.ns, "acme")
	assert.NilError(t, err)
	assert.Check(t, b.Annotations[store.AnnotationDeregistering] != "", "an interrupted deregister leaves its mark")

	r = instCatalog(t, e.ns, "deregister", "acme")
	assert.Check(t, r.ExitCode != 0)
	assert.Check(t, is.Contains(r.Stderr, `broker "acme" still has 1 instance: `+e.ns+`/db`))
	r = instCatalog(t, e.ns, "deprovision", "db", "--yes", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, e.ns, "deregister", "acme")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err = e.st.Brokers().Get(ctx, e.ns, "acme")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpProvision)), 0)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpDeprovision)), 0, "nothing reached the broker, so nothing is deleted there")
}
