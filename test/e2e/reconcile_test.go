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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// recAwaitFinalizersHold waits until the namespace controller reports that the catalog's
// finalizers are what keeps the terminating namespace ns from going.
func recAwaitFinalizersHold(t *testing.T, ns string) {
	t.Helper()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	var last *corev1.Namespace
	instWaitFor(t, "the namespace controller to report the catalog's finalizers", 30*time.Second, func() bool {
		nsObj, err := admin.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		assert.NilError(t, err)
		last = nsObj
		for _, c := range nsObj.Status.Conditions {
			if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue {
				return strings.Contains(c.Message, store.Finalizer)
			}
		}
		return false
	})
	assert.Equal(t, last.Status.Phase, corev1.NamespaceTerminating)
}

// (2) A plain "kubectl delete configmap" of an instance record: the finalizer holds it
// until reconcile has deprovisioned it at the broker.
func TestReconcile_PlainDeleteOfTheConfigMap_DeprovisionsAtTheBroker(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	recProvision(t, e.ns, "db")
	recDeleteConfigMaps(t, e.ns, "db")
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err, "the finalizer holds the record")
	assert.Assert(t, inst.DeletionTimestamp != nil)
	assert.Equal(t, len(e.b.Instances()), 1, "nothing told the broker yet")

	sum, r := recRun(t, e.ns, nil)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	it, ok := recItem(sum, e.ns, "db")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
	recAssertGone(t, e.st, e.ns, "db")
	instAssertBrokerHolds(t, e.b)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpDeprovision)), 1)

	// Nothing is left: a second run has nothing to do.
	sum, r = recRun(t, e.ns, nil)
	assert.Equal(t, r.ExitCode, 0)
	assert.Assert(t, is.Len(sum.Items, 0))
}

// (3) Deleting a namespace that holds instances: it stays Terminating until
// a reconcile of the namespace has deprovisioned them at the broker, then the namespace goes.
func TestReconcile_NamespaceDeletion_WaitsForDeprovisionThenFinishes(t *testing.T) {
	t.Parallel()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	ctx := context.Background()
	// The broker is cluster-scoped, in a catalog namespace of this test's own (a
	// namespace-scoped one: namespace_broker_test.go).
	catalogNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	b := broker.NewTestBroker(t, broker.Options{AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
	withCatalog := func(args ...string) []string { return append(args, "--catalog-namespace", catalogNS) }
	r := instCatalog(t, ns, withCatalog("register", "acme", "--url", b.URL(), "--scope", "cluster")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, n := range []string{"db", "cache"} {
		r := instCatalog(t, ns, withCatalog("provision", n, "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "60s")...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	assert.Equal(t, len(b.Instances()), 2)

	assert.NilError(t, admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	st := recStore(t)
	instWaitFor(t, "the namespace controller to mark the records deleted", 2*time.Minute, func() bool {
		for _, n := range []string{"db", "cache"} {
			if inst, err := st.Instances().Get(ctx, ns, n); err != nil || inst.DeletionTimestamp == nil {
				return false
			}
		}
		return true
	})
	// The finalizers hold the namespace.
	recAwaitFinalizersHold(t, ns)
	assert.Equal(t, len(b.Instances()), 2)

	sum, _ := recRun(t, ns, nil, withCatalog("--max-duration", "60s")...)
	for _, n := range []string{"db", "cache"} {
		it, ok := recItem(sum, ns, n)
		assert.Assert(t, ok, "%s: %+v", n, sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
	}
	instAssertBrokerHolds(t, b)
	instWaitFor(t, "the namespace to finish deleting", 90*time.Second, func() bool {
		_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// (1) A broker down for a while, then back: the deprovision left pending backs off
// visibly and reconcile finishes it once the broker answers again.
func TestReconcile_BrokerDownThenBack_FinishesThePendingDeprovision(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	ids := recProvision(t, e.ns, "db")
	// Down: every DELETE answers 503 for the next three requests.
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpDeprovision, Action: broker.ActionRespond, Status: 503, Times: 3})
	assert.NilError(t, err)
	r := instCatalog(t, e.ns, "deprovision", "db", "--yes")
	assert.Assert(t, is.Contains(r.Stderr, "kubectl catalog reconcile"))
	inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.Status.Retry != nil && inst.Status.Retry.Attempts == 1, "%+v", inst.Status.Retry)

	// The retry is not due yet (about 2 s): reconcile leaves it alone and says until when.
	// (Its clock runs a minute behind: on a busy machine the 2 s can pass before it starts.)
	sum, r := recRun(t, e.ns, []string{cmdutil.TestClockSkewEnv + "=-1m"})
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	it, _ := recItem(sum, e.ns, "db")
	assert.Equal(t, it.Outcome, reconcile.Waiting, it.Detail)
	assert.Assert(t, it.Until != nil)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpDeprovision)), 1, "not due: not driven")
	d := instCatalog(t, e.ns, "describe", "instance", "db")
	assert.Assert(t, is.Contains(d.Stdout, "attempts: 1"))
	assert.Assert(t, is.Contains(d.Stdout, "next retry:"))

	// A later run (clock ahead, short backoffs): the broker is down twice more, then back.
	sum, r = recRun(t, e.ns, []string{cmdutil.TestClockSkewEnv + "=1m", cmdutil.TestRetryBackoffEnv + "=1s,8s"}, "--max-duration", "60s")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	it, _ = recItem(sum, e.ns, "db")
	assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
	assert.Equal(t, it.Steps, 3, "two more failures, then success")
	recAssertGone(t, e.st, e.ns, "db")
	instAssertBrokerHolds(t, e.b)
	reqs := e.b.RequestsFor(broker.OpDeprovision)
	assert.Equal(t, len(reqs), 4)
	for _, req := range reqs {
		assert.Equal(t, req.InstanceID, ids["db"])
	}
	// The retries backed off: 2 s, then 4 s (±20%, less up to a second: the record keeps
	// times to the second). A busy machine only delays a retry, so each gap is held to its
	// least: the second is longer than a backoff that did not grow (2 s + 20%) can be.
	gap2, gap3 := reqs[2].Time.Sub(reqs[1].Time), reqs[3].Time.Sub(reqs[2].Time)
	assert.Assert(t, gap2 >= 600*time.Millisecond && gap3 >= 2200*time.Millisecond, "gaps %s then %s", gap2, gap3)
}

// (4) Two reconciles at once on the same pending records: the claims keep them from
// sending a broker operation twice at once for one record; the end state is the same.
func TestReconcile_TwoAtOnce_NeverDriveOneRecordConcurrently(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	names := []string{"a", "b", "c", "d"}
	ids := recProvision(t, e.ns, names...)
	// A slow DELETE widens the window in which both could try.
	_, err := e.b.InjectFault(broker.Fault{Op: broker.OpDeprovision, Action: broker.ActionDelay, Delay: broker.Duration(400 * time.Millisecond), Times: len(names)})
	assert.NilError(t, err)
	recDeleteConfigMaps(t, e.ns, names...)

	var wg sync.WaitGroup
	sums := make([]reconcile.Summary, 2)
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() {
			var r result
			sums[i], r = recRun(t, e.ns, nil, "--workers", "4")
			codes[i] = r.ExitCode
		})
	}
	wg.Wait()
	assert.DeepEqual(t, codes, []int{0, 0})
	recAssertGone(t, e.st, e.ns, names...)
	instAssertBrokerHolds(t, e.b)
	for _, n := range names {
		assert.Assert(t, e.b.MaxConcurrent(ids[n]) <= 1, "%s: %d requests at once", n, e.b.MaxConcurrent(ids[n]))
	}
	assert.Equal(t, len(e.b.RequestsFor(broker.OpDeprovision)), len(names), "one DELETE per record")
	assert.Assert(t, is.Len(e.b.Violations(), 0))
	for _, n := range names {
		outcomes := ""
		for _, s := range sums {
			if it, ok := recItem(s, e.ns, n); ok {
				outcomes += string(it.Outcome) + ";"
			}
		}
		t.Logf("%s: %s", n, outcomes)
	}
}

// (5) and (6): --dry-run changes nothing; --shard i/n splits the records without overlap
// and together covers all of them.
func TestReconcile_DryRunChangesNothing_ShardsSplitAndCoverAll(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("db-%d", i))
	}
	recProvision(t, e.ns, names...)
	recDeleteConfigMaps(t, e.ns, names...)
	ctx := context.Background()
	rv := map[string]string{}
	for _, n := range names {
		inst, err := e.st.Instances().Get(ctx, e.ns, n)
		assert.NilError(t, err)
		rv[n] = inst.ResourceVersion
	}
	requests := len(e.b.Requests())

	sum, r := recRun(t, e.ns, nil, "--dry-run")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, sum.Counts[reconcile.WouldDrive], len(names), "%+v", sum.Items)
	for _, n := range names {
		inst, err := e.st.Instances().Get(ctx, e.ns, n)
		assert.NilError(t, err)
		assert.Equal(t, inst.ResourceVersion, rv[n], "%s was written", n)
	}
	assert.Equal(t, len(e.b.Requests()), requests, "no broker call")

	owner := map[string]string{}
	for i := range 3 {
		shard := fmt.Sprintf("%d/3", i)
		sum, r := recRun(t, e.ns, nil, "--shard", shard)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		for _, it := range sum.Items {
			prev, seen := owner[it.Name]
			assert.Assert(t, !seen, "%s in shard %s and %s", it.Name, prev, shard)
			owner[it.Name] = shard
			assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
		}
	}
	assert.Equal(t, len(owner), len(names), "%v", owner)
	recAssertGone(t, e.st, e.ns, names...)
	instAssertBrokerHolds(t, e.b)
}

// recBind creates the binding record name of instance inst in ns with the store and
// drives it to Ready with an engine in this process, as "kubectl catalog bind --wait"
// does. catalogNS is the catalog namespace of cluster-scoped brokers.
func recBind(t *testing.T, ns, catalogNS, inst, name string) *v1alpha1.ServiceBinding {
	t.Helper()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	meta, err := metadata.NewForConfig(cp.RESTConfig(controlplane.AdminUser))
	assert.NilError(t, err)
	// As the bind command: a store that finds the records using an OSB id, and a write
	// that is the user's own intent.
	st := store.New(admin, meta)
	eng := engine.New(engine.Config{
		Store: st, Brokers: brokerclient.New(admin, brokerclient.WithTimeout(5*time.Second)),
		Platform: kube.NewPlatform(admin, catalogNS), CatalogNamespace: catalogNS,
		Holder: "e2e-bind", PollInterval: 200 * time.Millisecond,
	})
	_, err = st.Bindings().Create(store.WithIntent(ctx), engine.NewBinding(engine.BindingIntent{
		Namespace: ns, Name: name, Instance: inst, SecretName: name,
	}))
	assert.NilError(t, err)
	dctx, cancel := context.WithTimeout(engine.WithRunnersRights(ctx), slow(time.Minute))
	defer cancel()
	res, err := eng.DriveBinding(dctx, ns, name, engine.DriveOptions{})
	assert.NilError(t, err)
	assert.Equal(t, res.State, engine.StateSettled, res.Message)
	_, err = admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err, "the credentials Secret")
	return res.Binding
}

// A plain "kubectl delete configmap" of a binding record: the finalizer holds it until
// reconcile has deleted its Secret and unbound it at the broker.
func TestReconcile_PlainDeleteOfABindingConfigMap_UnbindsAtTheBroker(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	recProvision(t, e.ns, "db")
	b := recBind(t, e.ns, "catalog-system", "db", "app")
	assert.Equal(t, len(e.b.Bindings()), 1)

	r := kubectl(t, controlplane.AdminUser, "delete", "configmap", "-n", e.ns, "--wait=false",
		store.ConfigMapName(v1alpha1.KindServiceBinding, "app"))
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	held, err := e.st.Bindings().Get(context.Background(), e.ns, "app")
	assert.NilError(t, err, "the finalizer holds the record")
	assert.Assert(t, held.DeletionTimestamp != nil)

	sum, r := recRun(t, e.ns, nil)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	it, ok := recKindItem(sum, v1alpha1.KindServiceBinding, e.ns, "app")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
	recAssertBindingGone(t, e.ns, "app")
	assert.Equal(t, len(e.b.Bindings()), 0, "unbound at the broker")
	unbinds := e.b.RequestsFor(broker.OpUnbind)
	assert.Equal(t, len(unbinds), 1)
	assert.Equal(t, unbinds[0].BindingID, b.Spec.ExternalID)
	// The instance is untouched.
	instAssertBrokerHolds(t, e.b, recProvisionedID(t, e.st, e.ns, "db"))
}

func recProvisionedID(t *testing.T, st *store.Store, ns, name string) string {
	t.Helper()
	inst, err := st.Instances().Get(context.Background(), ns, name)
	assert.NilError(t, err)
	return inst.Spec.ExternalID
}

// Deleting a namespace that holds an instance and a binding of it: it stays
// Terminating until one reconcile of the namespace has unbound, then deprovisioned, at the broker.
func TestReconcile_NamespaceDeletionWithABinding_UnbindsThenDeprovisions(t *testing.T) {
	t.Parallel()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	ctx := context.Background()
	catalogNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	b := broker.NewTestBroker(t, broker.Options{AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
	withCatalog := func(args ...string) []string { return append(args, "--catalog-namespace", catalogNS) }
	r := instCatalog(t, ns, withCatalog("register", "acme", "--url", b.URL(), "--scope", "cluster")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, ns, withCatalog("provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "60s")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	recBind(t, ns, catalogNS, "db", "app")
	assert.Equal(t, len(b.Instances()), 1)
	assert.Equal(t, len(b.Bindings()), 1)

	assert.NilError(t, admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	st := recStore(t)
	instWaitFor(t, "the namespace controller to mark the records deleted", 2*time.Minute, func() bool {
		inst, err := st.Instances().Get(ctx, ns, "db")
		if err != nil || inst.DeletionTimestamp == nil {
			return false
		}
		bnd, err := st.Bindings().Get(ctx, ns, "app")
		return err == nil && bnd.DeletionTimestamp != nil
	})
	recAwaitFinalizersHold(t, ns)
	assert.Equal(t, len(b.Bindings()), 1, "nothing told the broker yet")

	sum, _ := recRun(t, ns, nil, withCatalog("--max-duration", "60s", "--interval", "200ms")...)
	for _, kind := range []string{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding} {
		name := map[string]string{v1alpha1.KindServiceInstance: "db", v1alpha1.KindServiceBinding: "app"}[kind]
		it, ok := recKindItem(sum, kind, ns, name)
		assert.Assert(t, ok, "%s %s: %+v", kind, name, sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, "%s %s: %s", kind, name, it.Detail)
	}
	assert.Equal(t, len(b.Bindings()), 0)
	instAssertBrokerHolds(t, b)
	unbinds, deprovisions := b.RequestsFor(broker.OpUnbind), b.RequestsFor(broker.OpDeprovision)
	assert.Equal(t, len(unbinds), 1)
	assert.Assert(t, len(deprovisions) >= 1)
	assert.Assert(t, unbinds[0].Time.Before(deprovisions[0].Time), "unbound before the deprovision")
	instWaitFor(t, "the namespace to finish deleting", 90*time.Second, func() bool {
		_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
