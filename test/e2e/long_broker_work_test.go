package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// longWorkDone waits until the broker has acted on every request it worked on longer
// than its client waited.
func longWorkDone(t *testing.T, b *broker.Broker, n int) {
	t.Helper()
	deadline := time.Now().Add(slow(30 * time.Second))
	for b.SlowWorkDone() < n {
		assert.Assert(t, time.Now().Before(deadline), "the broker did not finish its work")
		time.Sleep(50 * time.Millisecond)
	}
}

// A provision the broker works on longer than the client's timeout is sent again, the
// identical request, once the grace for the broker's work has passed (6s here), instead
// of being deleted (orphan mitigation) while the broker still creates it, or sent again
// while it still works: the broker is left with the one instance the record names.
func TestLongBrokerWork_ProvisionOutlastsTheClientTimeout_LeavesNoOrphan(t *testing.T) {
	t.Parallel()
	ns, b, st := openBrokerSetup(t)
	assert.NilError(t, b.AddSlowWork(broker.SlowWork{Op: broker.OpProvision, Delay: 5 * time.Second}))

	r := instRun(t, ns, []string{cmdutil.TestBrokerTimeoutEnv + "=2s", cmdutil.TestMitigationGraceEnv + "=6s"},
		"provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "60s")

	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	longWorkDone(t, b, 1)
	inst, err := st.Instances().Get(context.Background(), ns, "db")
	assert.NilError(t, err)
	instAssertBrokerHolds(t, b, inst.CurrentExternalID())
	assert.Equal(t, len(b.RequestsFor(broker.OpDeprovision)), 0, "nothing was deleted at the broker")
	assert.Assert(t, is.Len(b.Violations(), 0))
}

// A deletion while the broker may still be creating the instance (its provision got no
// answer) waits out the grace for the broker's work before its DELETE, so a 410 given
// before the instance exists never lets the record go while the instance appears after.
func TestLongBrokerWork_DeprovisionWhileTheBrokerStillCreates_DeletesWhatItCreated(t *testing.T) {
	t.Parallel()
	ns, b, st := openBrokerSetup(t)
	assert.NilError(t, b.AddSlowWork(broker.SlowWork{Op: broker.OpProvision, Delay: 6 * time.Second}))
	env := []string{cmdutil.TestBrokerTimeoutEnv + "=2s", cmdutil.TestMitigationGraceEnv + "=12s"}
	r := instRun(t, ns, env, "provision", "db", "--class", "postgresql", "--plan", "hobby")
	t.Logf("provision: exit %d: %s", r.ExitCode, r.Stderr)
	inst, err := st.Instances().Get(context.Background(), ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.Status.InFlight != nil, "the provision got no answer and stays in flight")
	id := inst.CurrentExternalID()

	r = instRun(t, ns, env, "deprovision", "db", "--yes", "--wait", "--timeout", "60s")

	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	longWorkDone(t, b, 1)
	instAssertBrokerHolds(t, b)
	dels := b.RequestsFor(broker.OpDeprovision)
	assert.Assert(t, len(dels) > 0)
	assert.Equal(t, dels[0].InstanceID, id)
	assert.Assert(t, !dels[0].Time.Before(inst.Status.InFlight.StartedAt.Add(12*time.Second)), "the DELETE waited out the grace")
}
