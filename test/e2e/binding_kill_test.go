package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// bkKillPoint is where the bind or unbind CLI is killed; the same three points as for
// instances.
type bkKillPoint = instKillPoint

// TestBinding_KillTheCLI_AtEveryStep_ReconcileFinishesWithoutOrphan SIGKILLs "bind" and
// "unbind" at every step: after the write-ahead, while the broker hangs on a request it
// has acted on, and after the broker answered but before the outcome is stored. It does
// so for the hobby plan (a service with bindings_retrievable, but a synchronous bind)
// and the ha plan (asynchronous bind and unbind). "kubectl catalog reconcile" must then
// finish the binding: the broker holds exactly the bindings the records say are bound,
// every ready binding has its Secret with the broker's credentials, no Secret is left
// without its binding, nothing is stuck, and no finalizer outlives an unbind.
func TestBinding_KillTheCLI_AtEveryStep_ReconcileFinishesWithoutOrphan(t *testing.T) {
	t.Parallel()
	type killCase struct {
		verb, plan string
		point      bkKillPoint
	}
	var cases []killCase
	for _, verb := range []string{"bind", "unbind"} {
		for _, plan := range []string{"hobby", "ha"} {
			for _, point := range []bkKillPoint{instKillBefore, instKillDuring, instKillAfter} {
				cases = append(cases, killCase{verb, plan, point})
			}
		}
	}
	var ran atomic.Int32
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("%d of %d kill-the-CLI binding cases ran to the end in %s", ran.Load(), len(cases), time.Since(start).Round(time.Second))
	})
	for _, tc := range cases {
		t.Run(tc.verb+" "+tc.plan+" "+string(tc.point), func(t *testing.T) {
			t.Parallel()
			e := bndSetup(t, tc.plan, nil)
			ctx := context.Background()
			if tc.verb == "unbind" {
				r := e.run(t, "bind", "db", "--name", "app", "--wait", "--timeout", "60s", "--interval", "200ms")
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
			}

			op, args := broker.OpBind, []string{"bind", "db", "--name", "app"}
			if tc.verb == "unbind" {
				op, args = broker.OpUnbind, []string{"unbind", "app"}
			}
			if tc.point == instKillDuring {
				_, err := e.b.InjectFault(broker.Fault{Op: op, When: broker.After, Action: broker.ActionHang})
				assert.NilError(t, err)
				cmd, _ := instStartKillable(t, e.ns, nil, args...)
				instWaitFor(t, "the broker to act and hang", 30*time.Second, func() bool {
					if len(e.b.Faults()) > 0 {
						return false
					}
					bs := e.b.Bindings()
					if tc.verb == "bind" {
						return len(bs) == 1
					}
					return len(bs) == 0 || bs[0].State == broker.BindingDeleting
				})
				ccKill(t, cmd)
			} else {
				ccKillAtPause(t, e.ns, nil, engine.HookPoint(tc.point), 0, args...)
			}

			// The record is left pending, with the call it was making written ahead.
			b, err := e.st.Bindings().Get(ctx, e.ns, "app")
			assert.NilError(t, err)
			assert.Assert(t, b.HasPendingWork(), "the record must show it has work left")
			assert.Assert(t, b.Status.InFlight != nil, "the write-ahead is stored")
			assert.Equal(t, b.Status.InFlight.BindingID, b.Spec.ExternalID)
			id := b.Spec.ExternalID
			if tc.verb == "unbind" {
				assert.Assert(t, b.DeletionTimestamp != nil)
				assert.Assert(t, is.Contains(b.Finalizers, store.Finalizer))
				_, ok := e.secret(t, "app")
				assert.Assert(t, !ok, "the credentials leave the cluster before the broker is asked")
			} else {
				_, ok := e.secret(t, "app")
				assert.Assert(t, !ok, "no Secret before the outcome is stored")
			}

			ccReconcileUntilSettled(t, e.st, e.ns, instReconcileEnv, 3)
			switch tc.verb {
			case "bind":
				ccAssertConverged(t, e.instEnv, ccWant{instances: map[string]string{"db": "ready"}, bindings: map[string]string{"app": "ready"}})
				assert.DeepEqual(t, bndBrokerBindings(e.b), []string{id})
				// The interrupted bind was re-sent identically: one binding id, one
				// request id, and never an unbind (nothing was uncertain enough to
				// mitigate).
				reqIDs := map[string]bool{}
				for _, r := range e.b.RequestsFor(broker.OpBind) {
					assert.Equal(t, r.BindingID, id)
					reqIDs[r.RequestIdentity] = true
				}
				assert.Equal(t, len(reqIDs), 1, "a re-send keeps the request id")
				assert.Assert(t, is.Len(e.b.RequestsFor(broker.OpUnbind), 0))
			case "unbind":
				ccAssertConverged(t, e.instEnv, ccWant{instances: map[string]string{"db": "ready"}, bindings: map[string]string{"app": "gone"}})
				e.bndGone(t, "app", "app")
				assert.DeepEqual(t, bndBrokerBindings(e.b), []string{})
				for _, r := range e.b.RequestsFor(broker.OpUnbind) {
					assert.Equal(t, r.BindingID, id)
					assert.Assert(t, r.OriginatingIdentity != nil, "a user's unbind is no orphan mitigation, even re-sent")
				}
			}
			held, err := e.st.Instances().Get(ctx, e.ns, "db")
			assert.NilError(t, err)
			assert.Equal(t, held.Status.Phase, v1alpha1.PhaseReady, "the instance is untouched")
			ran.Add(1)
		})
	}
}
