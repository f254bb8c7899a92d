package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestMigrateSvcat_NotServed runs in the every-namespace group, between tests that install the CRDs
// and remove them again.
func TestMigrateSvcat_NotServed_SaysSoAndExits1(t *testing.T) {
	serial(t, retiredCatalogCRDs)
	ns := cp.NewNamespace(t)
	r := kubectl(t, controlplane.AdminUser, "catalog", "migrate", "svcat", "-n", ns)
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, "servicecatalog.k8s.io/v1beta1) is not served by this cluster"))
	r = kubectl(t, controlplane.AdminUser, "catalog", "migrate", "svcat", "-n", ns, "-o", "xml")
	assert.Equal(t, r.ExitCode, 2, "a usage error")
	r = kubectl(t, controlplane.AdminUser, "catalog", "migrate", "svcat", "--dry-run=server")
	assert.Equal(t, r.ExitCode, 2, "a usage error")
}

func TestMigrateSvcat_MigratesThenReconcileAndVerbsFinishUnderTheOriginalIDs(t *testing.T) {
	serial(t, retiredCatalogCRDs)
	e := newSvcatEnv(t)
	f := e.seed(t)
	ctx := context.Background()
	acme, down := "acme"+suffix(e.ns), "down"+suffix(e.ns)
	e.b.ClearRequests()

	r, got := e.migrate(t)
	assert.Equal(t, r.ExitCode, 1, "skipped objects need a person: %s", r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "need a person"))
	want := map[string]struct {
		result, reason string
		person         bool
	}{
		"ClusterServiceBroker/" + acme: {"migrated", "", false},
		"ClusterServiceBroker/" + down: {"skipped", "cannot be fetched", true},
		"ServiceInstance/ready":        {"migrated", "", false},
		"ServiceInstance/async":        {"migrated", "provision in progress", false},
		"ServiceInstance/leaving":      {"migrated", "deprovision pending", false},
		"ServiceInstance/failed":       {"skipped", "never provisioned", false},
		"ServiceInstance/oldplan":      {"skipped", `plan "discontinued" of class "postgresql" no longer exists`, true},
		"ServiceInstance/unreachable":  {"skipped", fmt.Sprintf("its broker %q is not migrated", down), true},
		"ServiceBinding/ready-creds":   {"migrated", `Secret "ready-creds" adopted`, false},
		"ServiceBinding/lost-creds":    {"skipped", `credentials Secret "lost-creds" is missing`, true},
	}
	for key, w := range want {
		o, ok := got[key]
		assert.Assert(t, ok, "no outcome for %s in %v", key, got)
		assert.Equal(t, o.Result, w.result, "%s: %s", key, o.Reason)
		assert.Assert(t, is.Contains(o.Reason, w.reason), key)
		assert.Equal(t, o.NeedsPerson, w.person, key)
	}
	onlyCatalogGETs(t, e.b)

	// The records, under the original ids.
	ready, err := e.st.Instances().Get(ctx, e.ns, "ready")
	assert.NilError(t, err)
	assert.Equal(t, ready.Spec.ExternalID, f.readyID)
	assert.Equal(t, ready.Spec.PlanID, broker.DemoPostgresHobbyPlanID)
	assert.Equal(t, string(ready.Status.Phase), "Ready")
	assert.Equal(t, ready.Status.Provisioned.DashboardURL, "https://dash.example/ready")
	assert.Assert(t, ready.Annotations[store.AnnotationAuthor] != "", "written on the user's command, with the author stamp")
	async, err := e.st.Instances().Get(ctx, e.ns, "async")
	assert.NilError(t, err)
	assert.Assert(t, async.Status.InFlight != nil && async.Status.InFlight.Async)
	assert.Equal(t, async.Status.InFlight.OperationKey, f.asyncKey)
	leaving, err := e.st.Instances().Get(ctx, e.ns, "leaving")
	assert.NilError(t, err)
	assert.Assert(t, leaving.DeletionTimestamp != nil, "a deletion in progress is a pending deprovision")
	bnd, err := e.st.Bindings().Get(ctx, e.ns, "ready-creds")
	assert.NilError(t, err)
	assert.Equal(t, bnd.Spec.ExternalID, f.bindingID)
	secret, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "ready-creds", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, secret.Data, f.creds)
	assert.Assert(t, store.OwnedBy(secret, bnd))
	assert.Equal(t, len(secret.OwnerReferences), 1, "the old binding no longer owns the Secret")

	// A second run changes nothing and says so.
	before := e.state(t)
	r, got = e.migrate(t)
	assert.Equal(t, r.ExitCode, 1)
	for _, key := range []string{"ClusterServiceBroker/" + acme, "ServiceInstance/ready", "ServiceInstance/async", "ServiceInstance/leaving", "ServiceBinding/ready-creds"} {
		assert.Equal(t, got[key].Result, "already migrated", key)
	}
	assert.DeepEqual(t, e.state(t), before)
	onlyCatalogGETs(t, e.b)

	// reconcile polls the async provision with its key and deprovisions the deleted one.
	r = e.catalog(t, "reconcile", asRunner)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	deadline := time.Now().Add(slow(60 * time.Second))
	for {
		async, err = e.st.Instances().Get(ctx, e.ns, "async")
		assert.NilError(t, err)
		_, lerr := e.st.Instances().Get(ctx, e.ns, "leaving")
		if string(async.Status.Phase) == "Ready" && store.IsNotFound(lerr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reconcile did not finish: async %s, leaving %v", async.Status.Phase, lerr)
		}
		// The first poll of the adopted operation is due a while later: a run of a few
		// minutes on (instReconcileEnv) polls at once.
		r = instRun(t, e.ns, instReconcileEnv, "--catalog-namespace", e.catNS, "reconcile", asRunner, "--interval", "200ms")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	polls := e.b.RequestsFor(broker.OpLastOperation)
	assert.Assert(t, len(polls) > 0)
	for _, p := range polls {
		assert.Equal(t, p.InstanceID, f.asyncID)
		assert.DeepEqual(t, p.Query["operation"], []string{f.asyncKey})
	}
	dels := e.b.RequestsFor(broker.OpDeprovision)
	assert.Assert(t, is.Len(dels, 1))
	assert.Equal(t, dels[0].InstanceID, f.leavingID)
	_, still := e.b.Instance(f.leavingID)
	assert.Assert(t, !still)
	for _, op := range []broker.Op{broker.OpProvision, broker.OpUpdate, broker.OpBind} {
		assert.Assert(t, is.Len(e.b.RequestsFor(op), 0), "no %s after migration", op)
	}
	secret, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, "ready-creds", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, secret.Data, f.creds)

	// Unbind and deprovision with the product, under the original ids.
	r = e.catalog(t, "unbind", "ready-creds", "--yes", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	unbinds := e.b.RequestsFor(broker.OpUnbind)
	assert.Assert(t, is.Len(unbinds, 1))
	assert.Equal(t, unbinds[0].BindingID, f.bindingID)
	_, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, "ready-creds", metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "the unbind deletes the adopted Secret")
	// The binding whose Secret was lost is still the broker's: unbind it there by hand,
	// as the outcome said, before the instance goes.
	status, _ := e.osbCall(t, http.MethodDelete, "/v2/service_instances/"+f.readyID+"/service_bindings/"+f.lostBindingID+
		"?service_id="+broker.DemoPostgresServiceID+"&plan_id="+broker.DemoPostgresHobbyPlanID, nil)
	assert.Equal(t, status, http.StatusOK)
	for _, name := range []string{"ready", "async"} {
		r = e.catalog(t, "deprovision", name, "--yes", "--wait", "--interval", "200ms")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	var deleted []string
	for _, d := range e.b.RequestsFor(broker.OpDeprovision) {
		if d.Status == http.StatusOK || d.Status == http.StatusAccepted {
			deleted = append(deleted, d.InstanceID)
		}
	}
	deleted = slices.Compact(sorted(deleted))
	assert.DeepEqual(t, deleted, sorted([]string{f.readyID, f.asyncID, f.leavingID}))
	for _, id := range []string{f.readyID, f.asyncID, f.leavingID} {
		_, held := e.b.Instance(id)
		assert.Assert(t, !held, "instance %s is gone at the broker", id)
	}
	for _, op := range []broker.Op{broker.OpProvision, broker.OpUpdate, broker.OpBind} {
		assert.Assert(t, is.Len(e.b.RequestsFor(op), 0), "no %s at all", op)
	}
	assert.Assert(t, is.Len(e.b.Violations(), 0))
}

func TestMigrateSvcat_KilledAtEveryWriteThenRunAgain_SameEndStateThenCleanup(t *testing.T) {
	serial(t, retiredCatalogCRDs)
	e := newSvcatEnv(t)
	f := e.seed(t)
	ctx := context.Background()
	e.b.ClearRequests()

	kills := 0
	for e.migrateKilledAfter(t, 1) {
		kills++
		assert.Assert(t, kills < 20, "migrate never finished")
	}
	assert.Assert(t, kills >= 6, "killed at each write (brokers, instances, a deletion, a binding): %d", kills)
	r, got := e.migrate(t)
	assert.Equal(t, r.ExitCode, 1)
	for _, key := range []string{"ClusterServiceBroker/acme" + suffix(e.ns), "ServiceInstance/ready", "ServiceInstance/async", "ServiceInstance/leaving", "ServiceBinding/ready-creds"} {
		assert.Equal(t, got[key].Result, "already migrated", "%s: %s", key, got[key].Reason)
	}
	for _, key := range []string{"ServiceInstance/failed", "ServiceInstance/oldplan", "ServiceInstance/unreachable", "ServiceBinding/lost-creds"} {
		assert.Equal(t, got[key].Result, "skipped", key)
	}
	onlyCatalogGETs(t, e.b)

	// The same end state as one uninterrupted run: one record per object, the original ids.
	insts, err := e.st.Instances().List(ctx, e.ns, store.Filter{})
	assert.NilError(t, err)
	ids := map[string]string{}
	for _, i := range insts {
		ids[i.Name] = i.Spec.ExternalID
	}
	assert.DeepEqual(t, ids, map[string]string{"ready": f.readyID, "async": f.asyncID, "leaving": f.leavingID})
	leaving, err := e.st.Instances().Get(ctx, e.ns, "leaving")
	assert.NilError(t, err)
	assert.Assert(t, leaving.DeletionTimestamp != nil, "the deletion recorded by the run after the kill")
	bs, err := e.st.Bindings().List(ctx, e.ns, store.Filter{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(bs, 1))
	secret, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "ready-creds", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, secret.Data, f.creds)
	assert.Assert(t, store.OwnedBy(secret, bs[0]))
	assert.Equal(t, len(secret.OwnerReferences), 1)

	// --cleanup deletes the migrated old objects; the Secret stays with the new record.
	r, got = e.migrate(t, "--cleanup")
	assert.Equal(t, r.ExitCode, 1, "what needs a person still does")
	for _, key := range []string{"ServiceInstance/async", "ServiceInstance/leaving", "ServiceBinding/ready-creds", "ServiceInstance/failed"} {
		assert.Assert(t, is.Contains(got[key].Reason, "old object deleted"), key)
	}
	// Binding lost-creds, skipped (its Secret is missing), still names instance ready:
	// the old instance stays until a later run migrates that binding through it.
	assert.Assert(t, is.Contains(got["ServiceInstance/ready"].Reason, "old object kept: a binding of it that was not migrated still names it"))
	assert.Assert(t, is.Contains(got["ClusterServiceBroker/acme"+suffix(e.ns)].Reason, "old object kept"))
	for _, res := range []struct{ resource, name string }{{"serviceinstances", "leaving"}, {"servicebindings", "ready-creds"}} {
		_, err := e.dyn.Resource(svcatGVR(res.resource)).Namespace(e.ns).Get(ctx, res.name, metav1.GetOptions{})
		assert.Assert(t, apierrors.IsNotFound(err), "old %s %s deleted: %v", res.resource, res.name, err)
	}
	_, err = e.dyn.Resource(svcatGVR("serviceinstances")).Namespace(e.ns).Get(ctx, "oldplan", metav1.GetOptions{})
	assert.NilError(t, err, "an object that needs a person stays")
	_, err = e.dyn.Resource(svcatGVR("serviceinstances")).Namespace(e.ns).Get(ctx, "ready", metav1.GetOptions{})
	assert.NilError(t, err, "the old instance a binding left behind names stays")
	secret, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, "ready-creds", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, secret.Data, f.creds)
	_, err = e.st.Bindings().Get(ctx, e.ns, "ready-creds")
	assert.NilError(t, err)
	onlyCatalogGETs(t, e.b)
}
