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

// An update the broker applied but answered 500 (or never answered) is not forgotten:
// it stays in flight, "update --revert" cannot settle the instance on a plan the broker
// no longer holds, reconcile sends the same update again, and every later call (a
// change back, the deprovision) names the plan the broker holds.
func TestUncertainUpdate_AppliedButAnsweredAnError_StaysInFlightUntilTheBrokerSays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault broker.Fault
	}{
		{name: "500 after applying", fault: broker.Fault{Op: broker.OpUpdate, When: broker.After, Action: broker.ActionRespond, Status: 500, Description: "lost the answer"}},
		{name: "connection closed after applying", fault: broker.Fault{Op: broker.OpUpdate, When: broker.After, Action: broker.ActionClose}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns, b, st := openBrokerSetup(t)
			ctx := context.Background()
			r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=5", "--wait")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			_, err := b.InjectFault(tc.fault)
			assert.NilError(t, err)

			// A request that got no answer is sent again once the broker's work on it
			// may be over (3s here).
			r = instRun(t, ns, []string{cmdutil.TestMitigationGraceEnv + "=3s"}, "update", "db", "--plan", "standard", "-p", "storage_gb=20")
			t.Logf("update: exit %d: %s", r.ExitCode, r.Stderr)

			inst, err := st.Instances().Get(ctx, ns, "db")
			assert.NilError(t, err)
			// The broker applies the update (an asynchronous one, done in 300ms).
			deadline := time.Now().Add(slow(10 * time.Second))
			for {
				held, ok := b.Instance(inst.Spec.ExternalID)
				assert.Assert(t, ok)
				if held.PlanID == broker.DemoPostgresStandardPlanID {
					break
				}
				assert.Assert(t, time.Now().Before(deadline), "the broker did not apply the update: plan %s", held.PlanID)
				time.Sleep(50 * time.Millisecond)
			}
			assert.Assert(t, inst.Status.InFlight != nil, "the update whose outcome is unknown stays in flight")
			assert.Assert(t, inst.HasPendingWork())
			r = instCatalog(t, ns, "describe", "instance", "db")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			assert.Assert(t, is.Contains(r.Stdout, "Operation in flight"))
			assert.Assert(t, is.Contains(r.Stdout, "whether the broker applied the update is unknown"))

			r = instCatalog(t, ns, "update", "db", "--revert")

			assert.Assert(t, r.ExitCode != 0, "a revert to a plan the broker may no longer hold: %s", r.Stdout)
			assert.Assert(t, is.Contains(r.Stderr, "still updating"))
			res := instReconcile(t, st, ns, "db")
			assert.Equal(t, string(res.State), "Settled")
			assert.Equal(t, res.Instance.Status.Provisioned.PlanID, broker.DemoPostgresStandardPlanID, "the record says what the broker holds")

			r = instCatalog(t, ns, "update", "db", "--revert")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			r = instCatalog(t, ns, "update", "db", "--plan", "hobby", "-p", "storage_gb=5", "--wait")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			held, _ := b.Instance(inst.Spec.ExternalID)
			assert.Equal(t, held.PlanID, broker.DemoPostgresHobbyPlanID)
			r = instCatalog(t, ns, "deprovision", "db", "--yes", "--wait")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			instAssertBrokerHolds(t, b)
			assert.Assert(t, is.Len(b.Violations(), 0), "every call named the plan the broker held")
		})
	}
}
