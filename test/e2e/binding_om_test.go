package e2e

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// bomCase is one binding row of the spec's orphan-mitigation and polling tables.
type bomCase struct {
	name string
	// plan is the demo plan of instance "db": hobby (a bindings_retrievable service,
	// synchronous bind) or ha (asynchronous bind and unbind).
	plan    string
	catalog func(t *testing.T, c *broker.Catalog)
	// unbind: the faults strike "unbind app" of a bound binding; else "bind db --name app".
	unbind bool
	faults []broker.Fault
	// heldBind: the broker's async operations (the bind) run until the test has seen
	// the record fail its first orphan-mitigation unbind; then they end, and the
	// command's --wait goes on.
	heldBind bool
	// wait runs the faulted command with --wait and this --timeout.
	wait string
	env  []string
	// maxTook bounds how long the faulted command may run.
	maxTook time.Duration

	// After the faulted command: exit code, phase, "Status/Reason" of the Ready and
	// OrphanMitigation conditions ("" when absent), and the retry's reason ("" for none).
	exit        int
	phase       v1alpha1.Phase
	ready, om   string
	retryReason string

	// mitigation: an unbind without originating identity reached the broker (bind rows;
	// false means no unbind at all). minUnbinds: the unbind rows' DELETEs.
	mitigation bool
	minUnbinds int
	// final is the state reconcile leaves the binding in.
	final engine.State
}

func bomCases() []bomCase {
	const (
		bind, unbind, blo, get = broker.OpBind, broker.OpUnbind, broker.OpBindingLastOperation, broker.OpGetBinding
		before, after          = broker.Before, broker.After
	)
	fault := func(op broker.Op, when broker.When, action broker.Action, status int) []broker.Fault {
		return []broker.Fault{{Op: op, When: when, Action: action, Status: status}}
	}
	respond := func(op broker.Op, when broker.When, status int, code string) []broker.Fault {
		f := broker.Fault{Op: op, When: when, Action: broker.ActionRespond, Status: status, Error: code, Description: "injected by the e2e test"}
		return []broker.Fault{f}
	}
	wait := "60s"
	omDone := "False/" + engine.ReasonOrphanMitigationSucceeded
	bindRetry := "False/" + engine.ReasonBindCallFailed
	bound := "True/" + engine.ReasonBound
	unbindRetry := "False/" + engine.ReasonUnbindCallFailed
	return []bomCase{
		// Bind, synchronous plan: what the bind's answer says about what the broker holds.
		{name: "bind 201 malformed body: mitigate", plan: "hobby", faults: fault(bind, after, broker.ActionMalformed, 0),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: bindRetry, om: omDone, retryReason: engine.ReasonBindCallFailed,
			mitigation: true, final: engine.StateSettled},
		{name: "bind 200 malformed body: failure without mitigation", plan: "hobby", faults: fault(bind, before, broker.ActionMalformed, 200),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: bindRetry, retryReason: engine.ReasonBindCallFailed,
			final: engine.StateSettled},
		{name: "bind other 2xx (204): mitigate", plan: "hobby", faults: respond(bind, after, 204, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: bindRetry, om: omDone, retryReason: engine.ReasonBindCallFailed,
			mitigation: true, final: engine.StateSettled},
		{name: "bind 408: retry without mitigation", plan: "hobby", faults: respond(bind, before, 408, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: bindRetry, retryReason: engine.ReasonBindCallFailed,
			final: engine.StateSettled},
		{name: "bind 422 ConcurrencyError: retry without mitigation", plan: "hobby", faults: respond(bind, before, 422, "ConcurrencyError"),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonBindBlockedByConcurrentOperation,
			retryReason: engine.ReasonBindBlockedByConcurrentOperation, final: engine.StateSettled},
		{name: "bind 400: rejected, nothing to mitigate", plan: "hobby", faults: respond(bind, before, 400, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonBindRejected, final: engine.StateNeedsUser},
		{name: "bind 409: rejected, nothing to mitigate", plan: "hobby", faults: respond(bind, before, 409, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonBindRejected, final: engine.StateNeedsUser},
		{name: "bind 500 before acting: mitigate", plan: "hobby", faults: respond(bind, before, 500, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: bindRetry, om: omDone, retryReason: engine.ReasonBindCallFailed,
			mitigation: true, final: engine.StateSettled},
		{name: "bind 503 after acting: mitigate", plan: "hobby", faults: respond(bind, after, 503, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: bindRetry, om: omDone, retryReason: engine.ReasonBindCallFailed,
			mitigation: true, final: engine.StateSettled},
		// The bind command builds its broker clients like the instance commands, so the
		// test-only timeout applies: a minute otherwise.
		// No answer: the broker may still be working, so the identical request is sent
		// again (once the grace for the broker's work has passed, 3s here) instead of an
		// unbind.
		{name: "bind client timeout (hang): sent again, not mitigated", plan: "hobby", faults: fault(bind, after, broker.ActionHang, 0),
			env: []string{cmdutil.TestBrokerTimeoutEnv + "=2s", cmdutil.TestMitigationGraceEnv + "=3s"}, maxTook: 30 * time.Second,
			exit: 1, phase: v1alpha1.PhaseFailed, ready: bindRetry, retryReason: engine.ReasonBindCallFailed,
			final: engine.StateSettled},
		{name: "bind connection closed: sent again, not mitigated", plan: "hobby", faults: fault(bind, after, broker.ActionClose, 0),
			env: []string{cmdutil.TestMitigationGraceEnv + "=3s"}, exit: 1, phase: v1alpha1.PhaseFailed, ready: bindRetry, retryReason: engine.ReasonBindCallFailed,
			final: engine.StateSettled},
		// Bind, asynchronous plan.
		{name: "bind 202 malformed body: mitigate", plan: "ha", faults: fault(bind, after, broker.ActionMalformed, 0),
			wait: wait, exit: 0, phase: v1alpha1.PhaseReady, ready: bound, mitigation: true, final: engine.StateSettled},
		{name: "binding last_operation failed: mitigate, then bound", plan: "ha",
			faults: []broker.Fault{{Op: bind, Action: broker.ActionFailOperation, Description: "out of connection slots"}},
			wait:   wait, exit: 0, phase: v1alpha1.PhaseReady, ready: bound, mitigation: true, final: engine.StateSettled},
		// The bind outlives the plan's maximum_polling_duration (2 s): it counts as
		// failed, so the binding is unbound; the broker refuses that while its bind
		// still runs (ConcurrencyError: the record shows the failed mitigation, retried),
		// and once the bind ended the unbind goes through and the binding is made again.
		{name: "maximum_polling_duration expired: mitigate", plan: "ha",
			catalog: func(t *testing.T, c *broker.Catalog) {
				instSetMaxPolling(t, c, broker.DemoPostgresHAPlanID, 2)
			},
			heldBind: true, wait: wait,
			exit: 0, phase: v1alpha1.PhaseReady, ready: bound, mitigation: true, final: engine.StateSettled},
		{name: "410 while polling a bind: keep polling", plan: "ha",
			faults: []broker.Fault{{Op: blo, Action: broker.ActionGone, Times: 2}},
			wait:   wait, exit: 0, phase: v1alpha1.PhaseReady, ready: bound, final: engine.StateSettled},
		{name: "get_binding 404 right after succeeded: keep trying, then bound", plan: "ha",
			faults: []broker.Fault{{Op: get, Action: broker.ActionRespond, Status: 404, Times: 2, Description: "not visible yet"}},
			wait:   wait, exit: 0, phase: v1alpha1.PhaseReady, ready: bound, final: engine.StateSettled},
		// Unbind: the record and its finalizer stay until the broker confirms.
		{name: "unbind 410: done", plan: "hobby", unbind: true, faults: fault(unbind, before, broker.ActionDropState, 0),
			exit: 0, minUnbinds: 1, final: engine.StateDeleted},
		{name: "unbind 500: retried, record and finalizer kept meanwhile", plan: "hobby", unbind: true,
			faults: []broker.Fault{{Op: unbind, Action: broker.ActionRespond, Status: 500, Times: 2}},
			exit:   1, phase: v1alpha1.PhaseFailed, ready: unbindRetry, retryReason: engine.ReasonUnbindCallFailed,
			minUnbinds: 3, final: engine.StateDeleted},
		{name: "unbind other 2xx (204) after acting: retried, then 410", plan: "hobby", unbind: true, faults: respond(unbind, after, 204, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: unbindRetry, retryReason: engine.ReasonUnbindCallFailed,
			minUnbinds: 2, final: engine.StateDeleted},
		{name: "unbind 422 ConcurrencyError: retried", plan: "hobby", unbind: true, faults: respond(unbind, before, 422, "ConcurrencyError"),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonUnbindBlockedByConcurrentOperation,
			retryReason: engine.ReasonUnbindBlockedByConcurrentOperation, minUnbinds: 2, final: engine.StateDeleted},
		{name: "410 while polling an unbind: done", plan: "ha", unbind: true,
			faults: []broker.Fault{{Op: blo, Action: broker.ActionGone}},
			wait:   wait, exit: 0, minUnbinds: 1, final: engine.StateDeleted},
		{name: "unbind last_operation failed: retried", plan: "ha", unbind: true,
			faults: []broker.Fault{{Op: unbind, Action: broker.ActionFailOperation, Description: "revocation refused"}},
			wait:   wait, exit: 0, minUnbinds: 2, final: engine.StateDeleted},
	}
}

// bomUnbinds counts the unbinds of binding id that reached the broker, and of those the
// ones without an originating identity (orphan mitigation sends none).
func bomUnbinds(b *broker.Broker, id string) (all, mitigation int) {
	for _, r := range b.RequestsFor(broker.OpUnbind) {
		if r.BindingID != id {
			continue
		}
		all++
		if r.OriginatingIdentity == nil {
			mitigation++
		}
	}
	return all, mitigation
}

// TestBinding_OrphanMitigationAndPollingTable drives one binding per row of the spec's
// orphan-mitigation and polling tables (binding column) through "kubectl catalog bind"
// and "unbind", with the test broker's faults, then finishes it with "kubectl catalog
// reconcile", and checks the record right after the command, the unbinds the broker
// saw, and that the broker is left holding exactly what the records say.
func TestBinding_OrphanMitigationAndPollingTable(t *testing.T) {
	t.Parallel()
	cases := bomCases()
	var ran atomic.Int32
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("%d of %d binding orphan-mitigation and polling cases ran to the end in %s", ran.Load(), len(cases), time.Since(start).Round(time.Second))
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var edit func(*broker.Catalog)
			if tc.catalog != nil {
				edit = func(c *broker.Catalog) { tc.catalog(t, c) }
			}
			e := bndSetup(t, tc.plan, edit)
			ctx := context.Background()
			waitArgs := func(timeout string) []string { return []string{"--wait", "--timeout", timeout, "--interval", "200ms"} }
			if tc.unbind {
				r := e.run(t, append([]string{"bind", "db", "--name", "app"}, waitArgs("60s")...)...)
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
			}
			for _, f := range tc.faults {
				_, err := e.b.InjectFault(f)
				assert.NilError(t, err)
			}
			args := []string{"bind", "db", "--name", "app"}
			if tc.unbind {
				args = []string{"unbind", "app"}
			}
			if tc.wait != "" {
				args = append(args, waitArgs(tc.wait)...)
			}
			sawMitigationFail := func() bool { return true }
			if tc.heldBind {
				e.b.SetAsyncDelay(time.Hour)
				sawMitigationFail = bomReleaseAfterFailedMitigation(t, e)
			}
			began := time.Now()
			r := instRun(t, e.ns, tc.env, args...)
			took := time.Since(began)
			assert.Assert(t, sawMitigationFail(), "the record never showed the failed orphan-mitigation unbind while the bind ran")
			assert.Equal(t, r.ExitCode, tc.exit, r.Stderr)
			if tc.exit == 1 && tc.retryReason != "" {
				// The way out is named, and it is one that works: a bind cannot be
				// repeated (its name is taken), so the hint is reconcile.
				assert.Assert(t, is.Contains(r.Stderr, `"kubectl catalog reconcile"`))
				assert.Assert(t, !strings.Contains(r.Stderr, `"kubectl catalog bind`), "a hint to bind again: %s", r.Stderr)
			}
			if tc.maxTook > 0 {
				assert.Assert(t, took < tc.maxTook, "the command took %s", took)
			}

			b, err := e.st.Bindings().Get(ctx, e.ns, "app")
			if tc.final == engine.StateDeleted && tc.exit == 0 {
				assert.Assert(t, store.IsNotFound(err), "the record is gone: %v", err)
			} else {
				assert.NilError(t, err)
				assert.Equal(t, b.Status.Phase, tc.phase)
				assert.Equal(t, bomConditionReason(b.Status.Conditions, v1alpha1.ConditionReady), tc.ready)
				assert.Equal(t, bomConditionReason(b.Status.Conditions, v1alpha1.ConditionOrphanMitigation), tc.om)
				retry := ""
				if b.Status.Retry != nil {
					retry = b.Status.Retry.Reason
					assert.Assert(t, b.Status.Retry.LastError != "", "the failure is shown")
				}
				assert.Equal(t, retry, tc.retryReason)
				if tc.unbind {
					// Until the broker confirms, the record and its finalizer stay; the
					// credentials are gone from the cluster already.
					assert.Assert(t, b.DeletionTimestamp != nil)
					assert.Assert(t, is.Contains(b.Finalizers, store.Finalizer))
					_, ok := e.secret(t, "app")
					assert.Assert(t, !ok, "the Secret is deleted before the broker is asked")
				}
			}
			id := ""
			if b != nil {
				id = b.Spec.ExternalID
			} else if us := e.b.RequestsFor(broker.OpUnbind); len(us) > 0 {
				id = us[0].BindingID
			}

			ccReconcileUntilSettled(t, e.st, e.ns, instReconcileEnv, 3)
			assert.Assert(t, is.Len(e.b.Faults(), 0), "every fault struck")

			all, mitigation := bomUnbinds(e.b, id)
			switch {
			case tc.unbind:
				assert.Assert(t, all >= tc.minUnbinds, "want at least %d unbinds, got %d", tc.minUnbinds, all)
				assert.Equal(t, mitigation, 0, "a user's unbind carries the identity")
			case tc.mitigation:
				assert.Assert(t, mitigation >= 1, "orphan mitigation should have sent an unbind")
			default:
				assert.Equal(t, all, 0, "no unbind may reach the broker")
			}

			want := ccWant{instances: map[string]string{"db": "ready"}, bindings: map[string]string{}}
			switch tc.final {
			case engine.StateSettled:
				want.bindings["app"] = "ready"
			case engine.StateNeedsUser:
				want.bindings["app"] = "failed"
			case engine.StateDeleted:
				want.bindings["app"] = "gone"
			}
			ccAssertConverged(t, e.instEnv, want)
			switch tc.final {
			case engine.StateSettled:
				got := e.binding(t, "app")
				assert.Equal(t, got.Status.Phase, v1alpha1.PhaseReady)
				assert.Assert(t, got.Status.OrphanMitigation == nil)
				// After orphan mitigation the binding is bound again under a new id.
				assert.DeepEqual(t, bndBrokerBindings(e.b), []string{got.CurrentExternalID()})
				if tc.mitigation {
					assert.Assert(t, got.CurrentExternalID() != id, "an id unbound by orphan mitigation is not reused")
				}
			case engine.StateNeedsUser:
				got := e.binding(t, "app")
				assert.Equal(t, bomConditionReason(got.Status.Conditions, v1alpha1.ConditionFailed), "True/"+engine.ReasonBindRejected)
				assert.DeepEqual(t, bndBrokerBindings(e.b), []string{})
			case engine.StateDeleted:
				e.bndGone(t, "app", "app")
				assert.DeepEqual(t, bndBrokerBindings(e.b), []string{})
			}
			ran.Add(1)
		})
	}
}

// bomReleaseAfterFailedMitigation watches binding "app" until it is Failed with its
// orphan-mitigation unbind refused (the held bind still runs at the broker), then lets
// the broker's operations end, with short ones from then on. The function it returns
// stops the watch and says whether that state was seen.
func bomReleaseAfterFailedMitigation(t *testing.T, e *bndEnv) func() bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var seen atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		want := "True/" + engine.ReasonOrphanMitigationCallFailed
		for {
			b, err := e.st.Bindings().Get(ctx, e.ns, "app")
			if err == nil && b.Status.Phase == v1alpha1.PhaseFailed && bomConditionReason(b.Status.Conditions, v1alpha1.ConditionOrphanMitigation) == want {
				seen.Store(true)
				e.b.SetAsyncDelay(300 * time.Millisecond)
				e.b.FinishOperations()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	stop := func() bool {
		cancel()
		<-done
		return seen.Load()
	}
	t.Cleanup(func() { stop() })
	return stop
}

// bomConditionReason is "Status/Reason" of a condition, "" when absent.
func bomConditionReason(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}
