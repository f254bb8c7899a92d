package e2e

import (
	"context"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// TestInstance_KillTheCLI_AtEveryStep_ReconcileFinishesWithoutOrphan SIGKILLs the CLI
// at every step of a provision and of a deprovision (sync and async plans): after the
// write-ahead, while the broker hangs on a request it has acted on, and after the broker
// answered but before the outcome is stored. "kubectl catalog reconcile" (the engine's step)
// must then finish the record: nothing left at the broker that the record does not
// hold, nothing stuck, the finalizer gone after a deprovision.
func TestInstance_KillTheCLI_AtEveryStep_ReconcileFinishesWithoutOrphan(t *testing.T) {
	t.Parallel()
	type killCase struct {
		verb, plan string
		point      instKillPoint
	}
	var cases []killCase
	for _, verb := range []string{"provision", "deprovision"} {
		for _, plan := range []string{"hobby", "standard"} {
			for _, point := range []instKillPoint{instKillBefore, instKillDuring, instKillAfter} {
				cases = append(cases, killCase{verb, plan, point})
			}
		}
	}
	var ran atomic.Int32
	t.Cleanup(func() { t.Logf("%d of %d kill-the-CLI cases ran to the end", ran.Load(), len(cases)) })
	for _, tc := range cases {
		t.Run(tc.verb+" "+tc.plan+" "+string(tc.point), func(t *testing.T) {
			t.Parallel()
			e := instSetupCatalog(t, nil)
			ctx := context.Background()
			if tc.verb == "deprovision" {
				r := instCatalog(t, e.ns, "provision", "db", "--class", "postgresql", "--plan", tc.plan, "--wait", "--timeout", "60s", "--interval", "200ms")
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
			}
			before, err := e.st.Instances().Get(ctx, e.ns, "db")
			if tc.verb == "provision" {
				assert.Assert(t, store.IsNotFound(err))
			} else {
				assert.NilError(t, err)
			}

			var env []string
			op := broker.OpProvision
			args := []string{"provision", "db", "--class", "postgresql", "--plan", tc.plan}
			if tc.verb == "deprovision" {
				op = broker.OpDeprovision
				args = []string{"deprovision", "db", "--yes"}
			}
			if tc.point == instKillDuring {
				_, err := e.b.InjectFault(broker.Fault{Op: op, When: broker.After, Action: broker.ActionHang})
				assert.NilError(t, err)
			} else {
				env = append(env, cmdutil.TestPauseEnv+"="+string(tc.point))
			}
			cmd, lines := instStartKillable(t, e.ns, env, args...)

			if tc.point == instKillDuring {
				instWaitFor(t, "the broker to act and hang", 30*time.Second, func() bool {
					if len(e.b.Faults()) > 0 {
						return false
					}
					if tc.verb == "provision" {
						return len(e.b.Instances()) == 1
					}
					i, ok := e.b.Instance(before.Spec.ExternalID)
					return !ok || i.State == broker.InstanceDeprovisioning
				})
			} else {
				timeout := time.After(slow(30 * time.Second))
			wait:
				for {
					select {
					case l, ok := <-lines:
						assert.Assert(t, ok, "the CLI ended before pausing at %s", tc.point)
						if strings.Contains(l, "test hook: paused at "+string(tc.point)) {
							break wait
						}
					case <-timeout:
						t.Fatalf("the CLI did not pause at %s", tc.point)
					}
				}
			}
			assert.NilError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			assert.Equal(t, cmd.ProcessState.Sys().(syscall.WaitStatus).Signal(), syscall.SIGKILL)

			// The record is left pending, with the call it was making written ahead.
			inst, err := e.st.Instances().Get(ctx, e.ns, "db")
			assert.NilError(t, err)
			assert.Assert(t, inst.HasPendingWork(), "the record must show it has work left")
			assert.Assert(t, inst.Status.InFlight != nil, "the write-ahead is stored")
			if tc.verb == "deprovision" {
				assert.Assert(t, inst.DeletionTimestamp != nil)
				assert.Assert(t, is.Contains(inst.Finalizers, store.Finalizer))
			}
			id := inst.Spec.ExternalID

			res := instReconcile(t, e.st, e.ns, "db")
			switch tc.verb {
			case "provision":
				assert.Equal(t, res.State, engine.StateSettled, res.Message)
				assert.Equal(t, res.Instance.Spec.ExternalID, id)
				instAssertBrokerHolds(t, e.b, id)
				// The interrupted call was re-sent identically: one instance id, one
				// request id.
				reqIDs := map[string]bool{}
				for _, r := range e.b.RequestsFor(broker.OpProvision) {
					assert.Equal(t, r.InstanceID, id)
					reqIDs[r.RequestIdentity] = true
				}
				assert.Equal(t, len(reqIDs), 1, "a re-send keeps the request id")
			case "deprovision":
				assert.Equal(t, res.State, engine.StateDeleted, res.Message)
				_, err := e.st.Instances().Get(ctx, e.ns, "db")
				assert.Assert(t, store.IsNotFound(err), "the finalizer is removed and the record gone")
				instAssertBrokerHolds(t, e.b)
			}
			assert.Assert(t, is.Len(e.b.Violations(), 0))
			ran.Add(1)
		})
	}
}
