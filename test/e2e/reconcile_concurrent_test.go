package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestReconcile_TwoReconcilesAndUserCommands_NeverSendOneRecordTwiceAtOnce runs two
// "kubectl catalog reconcile" processes, a user's "unbind --wait" and a user's
// "deprovision --wait" at the same time on the same records, with a slow broker
// widening the window in which two drivers could both call it. The claims must keep
// every instance and binding id to one request at a time at the broker, and the end
// state must be the one a single reconcile reaches from the same intents.
func TestReconcile_TwoReconcilesAndUserCommands_NeverSendOneRecordTwiceAtOnce(t *testing.T) {
	t.Parallel()
	// setup provisions a, b and c (hobby) with bindings a-app, a-two and b-app, and
	// returns the ids the broker knows them by.
	setup := func(t *testing.T) (*instEnv, map[string]string) {
		e := instSetupCatalog(t, nil)
		ids := map[string]string{}
		for _, n := range []string{"a", "b", "c"} {
			r := instCatalog(t, e.ns, append([]string{"provision", n, "--class", "postgresql", "--plan", "hobby"}, ccWaitArgs...)...)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
		}
		for _, bnd := range [][2]string{{"a", "a-app"}, {"a", "a-two"}, {"b", "b-app"}} {
			r := instCatalog(t, e.ns, append([]string{"bind", bnd[0], "--name", bnd[1]}, ccWaitArgs...)...)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
		}
		ctx := context.Background()
		for _, n := range []string{"a", "b", "c"} {
			i, err := e.st.Instances().Get(ctx, e.ns, n)
			assert.NilError(t, err)
			ids[n] = i.CurrentExternalID()
		}
		for _, n := range []string{"a-app", "a-two", "b-app"} {
			b, err := e.st.Bindings().Get(ctx, e.ns, n)
			assert.NilError(t, err)
			ids[n] = b.CurrentExternalID()
		}
		return e, ids
	}
	// The intents: deprovision a (with its two bindings), unbind b-app, deprovision c.
	want := ccWant{
		instances: map[string]string{"a": "gone", "b": "ready", "c": "gone"},
		bindings:  map[string]string{"a-app": "gone", "a-two": "gone", "b-app": "gone"},
	}

	// The intents are recorded the way "kubectl delete configmap" records them, before
	// any driver starts, so that every driver finds the same records to work on.
	intend := func(t *testing.T, ns string) {
		r := kubectl(t, controlplane.AdminUser, "delete", "configmap", "-n", ns, "--wait=false",
			store.ConfigMapName(v1alpha1.KindServiceInstance, "a"), store.ConfigMapName(v1alpha1.KindServiceInstance, "c"),
			store.ConfigMapName(v1alpha1.KindServiceBinding, "b-app"))
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}

	// What one reconcile reaches from those intents.
	ref, _ := setup(t)
	intend(t, ref.ns)
	sums := ccReconcileUntilSettled(t, ref.st, ref.ns, recEnv, 1)
	assert.Assert(t, !sums[0].Failed(), "%+v", sums[0])
	ccAssertConverged(t, ref, want)

	e, ids := setup(t)
	// Every unbind and deprovision is slow; concurrent requests for one id would overlap.
	for _, op := range []broker.Op{broker.OpUnbind, broker.OpDeprovision} {
		_, err := e.b.InjectFault(broker.Fault{Op: op, Action: broker.ActionDelay, Delay: broker.Duration(time.Second), Times: 20})
		assert.NilError(t, err)
	}
	intend(t, e.ns)

	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]int{}
	record := func(what string, code int) {
		mu.Lock()
		defer mu.Unlock()
		results[what] = code
	}
	for i := range 2 {
		wg.Go(func() {
			r := instRun(t, e.ns, recEnv, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "50s", "--workers", "4", "-o", "json")
			record(fmt.Sprintf("reconcile %d", i), r.ExitCode)
		})
	}
	wg.Go(func() {
		r := instRun(t, e.ns, nil, "deprovision", "a", "--yes", "--wait", "--timeout", "50s", "--interval", "200ms")
		record("deprovision a --wait", r.ExitCode)
	})
	wg.Go(func() {
		r := instRun(t, e.ns, nil, "unbind", "b-app", "--wait", "--timeout", "50s", "--interval", "200ms")
		record("unbind b-app --wait", r.ExitCode)
	})
	wg.Wait()
	t.Logf("all four commands ended after %s: %v", time.Since(start).Round(100*time.Millisecond), results)
	for what, code := range results {
		assert.Equal(t, code, 0, what)
	}
	if p := ccPending(t, e.st, e.ns); len(p) > 0 {
		// A record one driver skipped while the other held it is finished by the next
		// run, as a CronJob's next run would.
		t.Logf("pending after the concurrent commands: %v", p)
		ccReconcileUntilSettled(t, e.st, e.ns, recEnv, 2)
	}
	ccAssertConverged(t, e, want)
	for name, id := range ids {
		assert.Assert(t, e.b.MaxConcurrent(id) <= 1, "%s: %d requests at once at the broker", name, e.b.MaxConcurrent(id))
	}
	assert.Assert(t, is.Len(e.b.Violations(), 0))
	// Nothing was sent twice that did not need to be: one DELETE per binding and per
	// deprovisioned instance (a re-send would only follow a failure, and none was
	// injected).
	perID := map[string]int{}
	for _, u := range e.b.RequestsFor(broker.OpUnbind) {
		perID[u.BindingID]++
	}
	for _, d := range e.b.RequestsFor(broker.OpDeprovision) {
		perID[d.InstanceID]++
	}
	for _, n := range []string{"a-app", "a-two", "b-app", "a", "c"} {
		assert.Equal(t, perID[ids[n]], 1, "DELETEs of %s", n)
	}
}

// TestReconcile_UserWaitOnAClaimedRecord_EndsWhenTheClaimHolderFinishes: a user's
// "unbind --wait" that finds a reconcile in the middle of the same unbind (its claim
// live for two minutes) must end once the reconcile has finished the record, not sleep
// out the claim.
func TestReconcile_UserWaitOnAClaimedRecord_EndsWhenTheClaimHolderFinishes(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	ctx := context.Background()
	ccProvisionDB(t, e)
	ccBindApp(t, e)
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpUnbind, Action: broker.ActionDelay, Delay: broker.Duration(3 * time.Second)})
	assert.NilError(t, err)
	r := kubectl(t, controlplane.AdminUser, "delete", "configmap", "-n", e.ns, "--wait=false",
		store.ConfigMapName(v1alpha1.KindServiceBinding, "app"))
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	done := make(chan result, 1)
	go func() {
		done <- instRun(t, e.ns, recEnv, "reconcile", asRunner, "--interval", "100ms", "--max-duration", "30s")
	}()
	// The reconcile has written its unbind ahead and holds the claim while the broker
	// is slow to answer.
	instWaitFor(t, "reconcile to claim the binding and call the broker", 60*time.Second, func() bool {
		b, err := e.st.Bindings().Get(ctx, e.ns, "app")
		if err != nil {
			return false
		}
		l, ok := store.LeaseOf(b)
		return ok && b.Status.InFlight != nil && strings.HasPrefix(l.Holder, "reconcile")
	})
	start := time.Now()
	u := instRun(t, e.ns, nil, "unbind", "app", "--wait", "--timeout", "30s", "--interval", "200ms")
	took := time.Since(start)
	assert.Equal(t, u.ExitCode, 0, u.Stderr)
	assert.Assert(t, took < 15*time.Second, "the user's unbind --wait took %s: it slept out the reconcile's claim", took)
	rec := <-done
	assert.Equal(t, rec.ExitCode, 0, rec.Stderr)
	ccAssertConverged(t, e, ccWant{instances: map[string]string{"db": "ready"}, bindings: map[string]string{"app": "gone"}})
	assert.Equal(t, len(e.b.RequestsFor(broker.OpUnbind)), 1, "one unbind: the user's command did not send another")
}
