package migrate

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

const (
	catNS = "catalog-system"
	ns    = "dev"
)

type fixture struct {
	t       *testing.T
	cluster *storetest.Cluster
	st      *store.Store
	dyn     *dynamicfake.FakeDynamicClient
	b       *broker.Broker
	m       *Migrator
	objects []runtime.Object
	// unreadable are the Secrets the migrator may not get.
	unreadable map[string]bool
}

var listKinds = map[schema.GroupVersionResource]string{
	ClusterServiceBrokers: "ClusterServiceBrokerList", ServiceBrokers: "ServiceBrokerList",
	ClusterServiceClasses: "ClusterServiceClassList", ClusterServicePlans: "ClusterServicePlanList",
	ServiceClasses: "ServiceClassList", ServicePlans: "ServicePlanList",
	ServiceInstances: "ServiceInstanceList", ServiceBindings: "ServiceBindingList",
}

func old(kind, namespace, name string, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": GroupVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "uid": "old-" + name, "generation": int64(1)},
		"spec":     spec,
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func provisioned(planID string) map[string]any {
	return map[string]any{
		"conditions":      []any{map[string]any{"type": "Ready", "status": "True", "reason": "ProvisionedSuccessfully"}},
		"provisionStatus": "Provisioned", "reconciledGeneration": int64(1),
		"externalProperties": map[string]any{"clusterServicePlanExternalID": planID},
	}
}

// newFixture is a cluster serving the old API with a broker "acme" whose credentials
// are in the catalog namespace.
// migrator is the user who runs the migration in these tests.
const migrator = "migrator"

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, b: broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", RetryAfter: -1})}
	f.cluster = storetest.NewCluster(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: "acme-auth"},
		Data:       map[string][]byte{"username": []byte("u"), "password": []byte("p")},
	}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: catNS}})
	f.st = f.cluster.Store(store.WithIdentity(func(context.Context) (*store.Identity, error) {
		return &store.Identity{Username: migrator}, nil
	}))
	acme := old("ClusterServiceBroker", "", "acme", map[string]any{
		"url":            f.b.URL(),
		"authInfo":       map[string]any{"basic": map[string]any{"secretRef": map[string]any{"namespace": catNS, "name": "acme-auth"}}},
		"relistBehavior": "Duration", "relistDuration": "15m0s",
		"catalogRestrictions": map[string]any{"servicePlan": []any{"name!=ha"}},
	}, nil)
	f.objects = append([]runtime.Object{acme}, objs...)
	scheme := runtime.NewScheme()
	f.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, listKinds, f.objects...)
	disco := f.cluster.Core.Discovery().(*fakediscovery.FakeDiscovery)
	disco.Resources = []*metav1.APIResourceList{{GroupVersion: GroupVersion, APIResources: []metav1.APIResource{{Name: "serviceinstances", Kind: "ServiceInstance", Namespaced: true}}}}
	clients := brokerclient.New(f.cluster.Core)
	var eng *engine.Engine
	syncer := catalogsync.New(f.st, clients, catalogsync.WithCore(f.cluster.Core), catalogsync.WithBrokerCheck(func(ctx context.Context, b *v1alpha1.Broker) error {
		return eng.CheckBroker(ctx, b)
	}))
	eng = engine.New(engine.Config{Store: f.st, Brokers: clients, Platform: engine.StaticPlatform{Cluster: "c"}, CatalogNamespace: catNS, Catalogs: syncer})
	f.m = New(Config{Dynamic: f.dyn, Discovery: disco, Core: f.cluster.Core, Store: f.st, Syncer: syncer, Engine: eng, CatalogNamespace: catNS})
	// The migrator's own questions (SelfSubjectAccessReviews): every Secret but those of
	// f.unreadable.
	f.cluster.Core.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = ra != nil && !(ra.Resource == "secrets" && f.unreadable[ra.Name])
		return true, r, nil
	})
	return f
}

func (f *fixture) run(o Options) map[string]Outcome {
	f.t.Helper()
	out, err := f.m.Run(context.Background(), o)
	assert.NilError(f.t, err)
	got := map[string]Outcome{}
	for _, oc := range out {
		got[oc.Kind+"/"+oc.Name] = oc
	}
	return got
}

func instanceSpec(plan, id string) map[string]any {
	return map[string]any{"clusterServiceClassExternalName": "postgresql", "clusterServicePlanExternalName": plan, "externalID": id}
}

func TestRun_NotServed(t *testing.T) {
	f := newFixture(t)
	f.cluster.Core.Discovery().(*fakediscovery.FakeDiscovery).Resources = nil
	_, err := f.m.Run(context.Background(), Options{})
	var ns *NotServedError
	assert.Assert(t, is.ErrorType(err, ns))
	assert.ErrorContains(t, err, "not served by this cluster")
}

func TestRun_BrokerMapping(t *testing.T) {
	ca := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	nsBroker := old("ServiceBroker", ns, "team", map[string]any{
		"url": "https://team.example", "caBundle": base64.StdEncoding.EncodeToString([]byte(ca)),
		"authInfo": map[string]any{"bearer": map[string]any{"secretRef": map[string]any{"name": "team-token"}}},
	}, nil)
	f := newFixture(t, nsBroker)
	got := f.run(Options{Namespace: ns, DryRun: true})
	assert.Equal(t, got["ClusterServiceBroker/acme"].Result, ResultWouldMigrate)
	assert.Equal(t, got["ServiceBroker/team"].Result, ResultWouldMigrate)
	_, err := f.st.Brokers().Get(context.Background(), catNS, "acme")
	assert.Assert(t, store.IsNotFound(err), "a dry run writes nothing")
	assert.Assert(t, is.Len(f.b.Requests(), 0), "a dry run calls no broker")

	b, err := f.m.brokerRecord(nsBroker)
	assert.NilError(t, err)
	assert.Equal(t, b.Namespace, ns)
	assert.Equal(t, b.Spec.Scope, v1alpha1.ScopeNamespace)
	assert.Equal(t, b.Spec.CABundle, ca)
	assert.DeepEqual(t, b.Spec.Auth, &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "team-token"}})

	got = f.run(Options{})
	assert.Equal(t, got["ClusterServiceBroker/acme"].Result, ResultMigrated, got["ClusterServiceBroker/acme"].Reason)
	rec, err := f.st.Brokers().Get(context.Background(), catNS, "acme")
	assert.NilError(t, err)
	assert.Equal(t, rec.Spec.Scope, v1alpha1.ScopeCluster)
	assert.Equal(t, rec.Spec.RelistInterval.Duration, 15*time.Minute)
	assert.DeepEqual(t, rec.Spec.CatalogRestrictions, &v1alpha1.CatalogRestrictions{ServicePlan: []string{"name!=ha"}})
	assert.DeepEqual(t, rec.Spec.Auth, &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "acme-auth"}})
	assert.Equal(t, rec.Annotations[store.AnnotationMigratedFrom], "ClusterServiceBroker//acme/old-acme")
	assert.Assert(t, rec.Status.LastCatalogFetch != nil)
	for _, r := range f.b.Requests() {
		assert.Equal(t, r.Method, http.MethodGet)
	}
	got = f.run(Options{})
	assert.Equal(t, got["ClusterServiceBroker/acme"].Result, ResultAlreadyMigrated)
}

func TestRun_ClusterBrokerSecretOutsideCatalogNamespaceIsSkipped(t *testing.T) {
	f := newFixture(t, old("ClusterServiceBroker", "", "other", map[string]any{
		"url":      "https://other.example",
		"authInfo": map[string]any{"basic": map[string]any{"secretRef": map[string]any{"namespace": "brokers", "name": "other-auth"}}},
	}, nil))
	got := f.run(Options{})
	o := got["ClusterServiceBroker/other"]
	assert.Equal(t, o.Result, ResultSkipped)
	assert.Assert(t, o.NeedsPerson)
	assert.Assert(t, is.Contains(o.Reason, `copy the Secret there`))
	_, err := f.st.Brokers().Get(context.Background(), catNS, "other")
	assert.Assert(t, store.IsNotFound(err))
}

func TestRun_InstanceMappings(t *testing.T) {
	deleting := old("ServiceInstance", ns, "leaving", instanceSpec("hobby", "id-leaving"), provisioned(broker.DemoPostgresHobbyPlanID))
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	deleting.SetFinalizers([]string{"kubernetes-incubator/service-catalog"})
	updating := old("ServiceInstance", ns, "updating", instanceSpec("standard", "id-updating"), map[string]any{
		"provisionStatus": "Provisioned", "asyncOpInProgress": true, "currentOperation": "Update", "lastOperation": "op-7",
		"externalProperties":   map[string]any{"clusterServicePlanExternalID": broker.DemoPostgresHobbyPlanID},
		"inProgressProperties": map[string]any{"clusterServicePlanExternalID": broker.DemoPostgresStandardPlanID},
	})
	withParams := instanceSpec("hobby", "id-params")
	withParams["parameters"] = map[string]any{"storage_gb": int64(5)}
	withParams["parametersFrom"] = []any{map[string]any{"secretKeyRef": map[string]any{"name": "db-params", "key": "extra"}}}
	withParams["userInfo"] = map[string]any{"username": migrator}
	f := newFixture(t,
		old("ServiceInstance", ns, "params", withParams, provisioned(broker.DemoPostgresHobbyPlanID)),
		old("ServiceInstance", ns, "provisioning", instanceSpec("standard", "id-prov"), map[string]any{
			"asyncOpInProgress": true, "currentOperation": "Provision", "lastOperation": "op-1", "operationStartTime": "2021-03-01T10:00:00Z",
		}),
		updating, deleting,
	)
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-params"}, Data: map[string][]byte{"extra": []byte(`{"tier":"gold"}`)},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	got := f.run(Options{Namespace: ns})
	for _, name := range []string{"params", "provisioning", "updating", "leaving"} {
		assert.Equal(t, got["ServiceInstance/"+name].Result, ResultMigrated, "%s: %s", name, got["ServiceInstance/"+name].Reason)
	}
	ctx := context.Background()
	p, err := f.st.Instances().Get(ctx, ns, "params")
	assert.NilError(t, err)
	assert.Equal(t, p.Spec.ExternalID, "id-params")
	assert.Equal(t, p.Spec.ClassID, broker.DemoPostgresServiceID)
	assert.Equal(t, string(p.Spec.Parameters.Raw), `{"storage_gb":5}`)
	assert.DeepEqual(t, p.Spec.ParametersFrom, []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-params", Key: "extra"}}})
	assert.Assert(t, strings.HasPrefix(p.Status.Provisioned.ParametersChecksum, "hmac-sha256:") || p.Status.Provisioned.ParametersChecksum != "", "the checksum of the parameters held")
	assert.Assert(t, p.Status.InFlight == nil)
	assert.DeepEqual(t, p.Status.ExternalIDs, []string{"id-params"})
	assert.Assert(t, p.Annotations[store.AnnotationMigratedFrom] != "")

	prov, err := f.st.Instances().Get(ctx, ns, "provisioning")
	assert.NilError(t, err)
	assert.Assert(t, prov.Status.Provisioned == nil)
	assert.Equal(t, prov.Status.InFlight.Type, v1alpha1.OperationProvision)
	assert.Equal(t, prov.Status.InFlight.OperationKey, "op-1")
	assert.Assert(t, prov.Status.InFlight.Async)
	assert.Equal(t, prov.Status.InFlight.InstanceID, "id-prov")
	assert.Equal(t, prov.Status.InFlight.StartedAt.UTC().Format(time.RFC3339), "2021-03-01T10:00:00Z")
	assert.Assert(t, prov.Status.InFlight.PollDeadline != nil)

	upd, err := f.st.Instances().Get(ctx, ns, "updating")
	assert.NilError(t, err)
	assert.Equal(t, upd.Status.Provisioned.PlanID, broker.DemoPostgresHobbyPlanID, "the broker holds the plan before the update")
	assert.Equal(t, upd.Status.InFlight.Type, v1alpha1.OperationUpdate)
	assert.Equal(t, upd.Status.InFlight.PlanID, broker.DemoPostgresStandardPlanID)
	assert.Equal(t, upd.Status.InFlight.OperationKey, "op-7")

	leaving, err := f.st.Instances().Get(ctx, ns, "leaving")
	assert.NilError(t, err)
	assert.Assert(t, leaving.DeletionTimestamp != nil, "recorded as a pending deprovision")
	assert.Assert(t, leaving.Status.Provisioned != nil)

	// Idempotent: nothing is written again.
	before := configMapVersions(t, f)
	got = f.run(Options{Namespace: ns})
	for _, name := range []string{"params", "provisioning", "updating", "leaving"} {
		assert.Equal(t, got["ServiceInstance/"+name].Result, ResultAlreadyMigrated, name)
	}
	assert.DeepEqual(t, configMapVersions(t, f), before)
	for _, r := range f.b.Requests() {
		assert.Equal(t, r.Op, broker.OpCatalog)
	}
}

func configMapVersions(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range []string{ns, catNS} {
		l, err := f.cluster.Core.CoreV1().ConfigMaps(n).List(context.Background(), metav1.ListOptions{})
		assert.NilError(t, err)
		for _, cm := range l.Items {
			out[n+"/"+cm.Name] = cm.ResourceVersion
		}
	}
	return out
}

func TestRun_InstanceSkipReasons(t *testing.T) {
	noID := instanceSpec("hobby", "")
	syncCall := provisioned(broker.DemoPostgresHobbyPlanID)
	syncCall["currentOperation"] = "Update"
	f := newFixture(t,
		old("ServiceInstance", ns, "failed", instanceSpec("hobby", "id-f"), map[string]any{
			"provisionStatus": "NotProvisioned",
			"conditions":      []any{map[string]any{"type": "Failed", "status": "True", "reason": "ProvisionCallFailed", "message": "400"}},
		}),
		old("ServiceInstance", ns, "noplan", instanceSpec("gone", "id-g"), provisioned("gone-id")),
		old("ServiceInstance", ns, "noclass", map[string]any{"clusterServiceClassExternalName": "nosuch", "clusterServicePlanExternalName": "x", "externalID": "id-n"}, provisioned("x")),
		old("ServiceInstance", ns, "noid", noID, provisioned(broker.DemoPostgresHobbyPlanID)),
		old("ServiceInstance", ns, "synccall", instanceSpec("hobby", "id-s"), syncCall),
		old("ServiceInstance", ns, "taken", instanceSpec("hobby", "id-taken"), provisioned(broker.DemoPostgresHobbyPlanID)),
	)
	ctx := context.Background()
	_, err := f.st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"},
		Spec:       v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "acme", ClassID: "c", PlanID: "p", ExternalID: "id-taken"},
	})
	assert.NilError(t, err)
	got := f.run(Options{Namespace: ns})
	for name, want := range map[string]struct {
		reason string
		person bool
	}{
		"failed":   {"never provisioned (ProvisionCallFailed: 400)", false},
		"noplan":   {`plan "gone" of class "postgresql" no longer exists`, true},
		"noclass":  {`class "nosuch" is not offered`, true},
		"noid":     {"no spec.externalID", true},
		"synccall": {"outcome was never recorded", true},
		"taken":    {`OSB id id-taken is already used by instance "other"`, true},
	} {
		o := got["ServiceInstance/"+name]
		assert.Equal(t, o.Result, ResultSkipped, name)
		assert.Assert(t, is.Contains(o.Reason, want.reason), name)
		assert.Equal(t, o.NeedsPerson, want.person, name)
		if name != "taken" {
			_, err := f.st.Instances().Get(ctx, ns, name)
			assert.Assert(t, store.IsNotFound(err), "%s: nothing recorded", name)
		}
	}
}

// TestRun_OrphanMitigationGoesOnAsAPendingDeprovision: an instance svcat was cleaning
// up after a failed provision (its flag set; or an asynchronous deprovision under way on
// an object not being deleted) is recorded as a pending deprovision of the same id, the
// operation key kept; driving it deprovisions at the broker, which answers 410 Gone for
// an instance it does not hold, and the record goes. Only catalog requests are sent by
// the migration itself.
func TestRun_OrphanMitigationGoesOnAsAPendingDeprovision(t *testing.T) {
	flagged := map[string]any{"provisionStatus": "NotProvisioned", "orphanMitigationInProgress": true}
	async := map[string]any{"asyncOpInProgress": true, "currentOperation": "Deprovision", "lastOperation": "op-9"}
	f := newFixture(t,
		old("ServiceInstance", ns, "flagged", instanceSpec("hobby", "id-flagged"), flagged),
		old("ServiceInstance", ns, "async", instanceSpec("hobby", "id-async"), async),
	)
	got := f.run(Options{Namespace: ns})
	ctx := context.Background()
	for _, name := range []string{"flagged", "async"} {
		o := got["ServiceInstance/"+name]
		assert.Equal(t, o.Result, ResultMigrated, "%s: %s", name, o.Reason)
		assert.Assert(t, is.Contains(o.Reason, "orphan mitigation goes on"), name)
		inst, err := f.st.Instances().Get(ctx, ns, name)
		assert.NilError(t, err)
		assert.Assert(t, inst.DeletionTimestamp != nil, "%s: recorded as a pending deprovision", name)
		assert.Equal(t, inst.Spec.ExternalID, "id-"+name)
	}
	inst, err := f.st.Instances().Get(ctx, ns, "async")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.InFlight.Type, v1alpha1.OperationDeprovision)
	assert.Equal(t, inst.Status.InFlight.OperationKey, "op-9")
	for _, r := range f.b.Requests() {
		assert.Equal(t, r.Op, broker.OpCatalog)
	}

	// Idempotent.
	before := configMapVersions(t, f)
	got = f.run(Options{Namespace: ns})
	for _, name := range []string{"flagged", "async"} {
		assert.Equal(t, got["ServiceInstance/"+name].Result, ResultAlreadyMigrated, name)
	}
	assert.DeepEqual(t, configMapVersions(t, f), before)

	// The deprovision is sent under the original id and finishes.
	res, err := f.m.cfg.Engine.DriveInstance(ctx, ns, "flagged", engine.DriveOptions{})
	assert.NilError(t, err)
	assert.Equal(t, res.State, engine.StateDeleted, res.Message)
	var ids []string
	for _, r := range f.b.RequestsFor(broker.OpDeprovision) {
		ids = append(ids, r.InstanceID)
	}
	assert.DeepEqual(t, ids, []string{"id-flagged"})
	_, err = f.st.Instances().Get(ctx, ns, "flagged")
	assert.Assert(t, store.IsNotFound(err))
}

func TestRun_BindingAdoptsItsSecretAndSkipsWhatItCannot(t *testing.T) {
	bound := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	f := newFixture(t,
		old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID)),
		old("ServiceInstance", ns, "failed", instanceSpec("hobby", "id-f"), map[string]any{"provisionStatus": "NotProvisioned"}),
		old("ServiceBinding", ns, "db-creds", map[string]any{
			"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-1", "secretName": "db-secret",
			"secretTransforms": []any{map[string]any{"renameKey": map[string]any{"from": "uri", "to": "DATABASE_URL"}}},
		}, bound),
		old("ServiceBinding", ns, "lost", map[string]any{"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-2"}, bound),
		old("ServiceBinding", ns, "orphaned", map[string]any{"instanceRef": map[string]any{"name": "failed"}, "externalID": "bid-3"}, bound),
		old("ServiceBinding", ns, "unbound", map[string]any{"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-4"},
			map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "BindCallFailed", "message": "500"}}}),
	)
	ctx := context.Background()
	yes := true
	data := map[string][]byte{"DATABASE_URL": []byte("postgres://x")}
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-secret", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: GroupVersion, Kind: "ServiceBinding", Name: "db-creds", UID: "old-db-creds", Controller: &yes},
		}},
		Data: data,
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	got := f.run(Options{Namespace: ns})
	assert.Equal(t, got["ServiceBinding/db-creds"].Result, ResultMigrated, got["ServiceBinding/db-creds"].Reason)
	b, err := f.st.Bindings().Get(ctx, ns, "db-creds")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.ExternalID, "bid-1")
	assert.Equal(t, b.Spec.SecretName, "db-secret")
	assert.DeepEqual(t, b.Spec.SecretTransforms, []v1alpha1.SecretTransform{{RenameKey: &v1alpha1.RenameKeyTransform{From: "uri", To: "DATABASE_URL"}}})
	assert.Equal(t, b.Status.Bound.BindingID, "bid-1")
	assert.DeepEqual(t, b.Status.Secret.Keys, []string{"DATABASE_URL"})
	secret, err := f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, "db-secret", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, secret.Data, data)
	assert.Assert(t, store.OwnedBy(secret, b))
	assert.Equal(t, len(secret.OwnerReferences), 1, "the old binding's owner reference is gone")

	for name, want := range map[string]struct {
		reason string
		person bool
	}{
		"lost":     {`credentials Secret "lost" is missing`, true},
		"orphaned": {`its instance "failed" is not migrated`, true},
		"unbound":  {"never bound (BindCallFailed: 500)", false},
	} {
		o := got["ServiceBinding/"+name]
		assert.Equal(t, o.Result, ResultSkipped, name)
		assert.Assert(t, is.Contains(o.Reason, want.reason), name)
		assert.Equal(t, o.NeedsPerson, want.person, name)
	}
	got = f.run(Options{Namespace: ns})
	assert.Equal(t, got["ServiceBinding/db-creds"].Result, ResultAlreadyMigrated)
}

func TestRun_ResumesABindingWhoseSecretWasNotAdoptedYet(t *testing.T) {
	bound := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	f := newFixture(t,
		old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID)),
		old("ServiceBinding", ns, "db", map[string]any{"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-1"}, bound),
	)
	ctx := context.Background()
	yes := true
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: GroupVersion, Kind: "ServiceBinding", Name: "db", UID: "old-db", Controller: &yes},
		}},
		Data: map[string][]byte{"k": []byte("v")},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	// A run killed between the binding's record and its Secret's adoption: the record
	// is there, the Secret still the old binding's.
	got := f.run(Options{Namespace: ns})
	assert.Equal(t, got["ServiceBinding/db"].Result, ResultMigrated)
	b, err := f.st.Bindings().Get(ctx, ns, "db")
	assert.NilError(t, err)
	secret, err := f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	assert.NilError(t, err)
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: GroupVersion, Kind: "ServiceBinding", Name: "db", UID: "old-db", Controller: &yes}}
	_, err = f.cluster.Core.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{})
	assert.NilError(t, err)

	got = f.run(Options{Namespace: ns})
	assert.Equal(t, got["ServiceBinding/db"].Result, ResultMigrated, "the interrupted adoption is finished")
	secret, err = f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Assert(t, store.OwnedBy(secret, b))
	assert.Equal(t, len(secret.OwnerReferences), 1)
	assert.DeepEqual(t, secret.Data, map[string][]byte{"k": []byte("v")})
	got = f.run(Options{Namespace: ns})
	assert.Equal(t, got["ServiceBinding/db"].Result, ResultAlreadyMigrated)
}

func TestRun_CleanupDeletesMigratedOldObjects(t *testing.T) {
	inst := old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID))
	inst.SetFinalizers([]string{"kubernetes-incubator/service-catalog"})
	f := newFixture(t, inst,
		old("ServiceInstance", ns, "noplan", instanceSpec("gone", "id-g"), provisioned("gone-id")))
	got := f.run(Options{Namespace: ns, Cleanup: true, DryRun: true})
	assert.Assert(t, is.Contains(got["ServiceInstance/db"].Reason, "old object would delete"))
	got = f.run(Options{Namespace: ns})
	assert.Equal(t, got["ServiceInstance/db"].Result, ResultMigrated)
	got = f.run(Options{Namespace: ns, Cleanup: true})
	assert.Assert(t, is.Contains(got["ServiceInstance/db"].Reason, "old object deleted"))
	assert.Assert(t, is.Contains(got["ClusterServiceBroker/acme"].Reason, "old object kept"), "an instance left behind may still use the broker")
	ctx := context.Background()
	_, err := f.dyn.Resource(ServiceInstances).Namespace(ns).Get(ctx, "db", metav1.GetOptions{})
	assert.Assert(t, err != nil, "the old instance is deleted")
	_, err = f.dyn.Resource(ServiceInstances).Namespace(ns).Get(ctx, "noplan", metav1.GetOptions{})
	assert.NilError(t, err, "what was not migrated stays")
	_, err = f.st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err, "the record stays")
}

// A binding svcat gave up unbinding (status.unbindStatus Failed) may still be held by
// the broker: with its Secret it becomes a pending unbind; without it, it is left for a
// person and --cleanup keeps the old object.
func TestRun_ABindingSvcatGaveUpUnbinding_IsAPendingUnbindOrLeftForAPerson(t *testing.T) {
	gaveUp := map[string]any{"unbindStatus": "Failed", "conditions": []any{
		map[string]any{"type": "Ready", "status": "False", "reason": "UnbindCallFailed", "message": "500"},
		map[string]any{"type": "Failed", "status": "True", "reason": "UnbindCallFailed"},
	}}
	var objs []runtime.Object
	objs = append(objs, old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID)))
	for _, name := range []string{"kept", "gone"} {
		b := old("ServiceBinding", ns, name, map[string]any{"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-" + name}, gaveUp)
		b.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		b.SetFinalizers([]string{"kubernetes-incubator/service-catalog"})
		objs = append(objs, b)
	}
	f := newFixture(t, objs...)
	ctx := context.Background()
	yes := true
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: GroupVersion, Kind: "ServiceBinding", Name: "kept", UID: "old-kept", Controller: &yes},
		}}, Data: map[string][]byte{"password": []byte("x")},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	got := f.run(Options{Namespace: ns, Cleanup: true})

	kept := got["ServiceBinding/kept"]
	assert.Equal(t, kept.Result, ResultMigrated, kept.Reason)
	assert.Assert(t, is.Contains(kept.Reason, "unbind pending"))
	b, err := f.st.Bindings().Get(ctx, ns, "kept")
	assert.NilError(t, err)
	assert.Assert(t, b.DeletionTimestamp != nil, "reconcile unbinds it")
	assert.Equal(t, b.Status.Bound.BindingID, "bid-kept")

	gone := got["ServiceBinding/gone"]
	assert.Equal(t, gone.Result, ResultSkipped)
	assert.Assert(t, gone.NeedsPerson)
	assert.Assert(t, is.Contains(gone.Reason, "svcat gave up unbinding it"))
	_, err = f.dyn.Resource(ServiceBindings).Namespace(ns).Get(ctx, "gone", metav1.GetOptions{})
	assert.NilError(t, err, "the old object is kept")
}

func TestRun_AnObjectWhoseParametersComeFromSecrets_IsMigratedOnlyByItsAuthor(t *testing.T) {
	spec := func(id, author string) map[string]any {
		sp := instanceSpec("hobby", id)
		sp["parametersFrom"] = []any{map[string]any{"secretKeyRef": map[string]any{"name": "root", "key": "token"}}}
		if author != "" {
			sp["userInfo"] = map[string]any{"username": author}
		}
		return sp
	}
	f := newFixture(t,
		old("ServiceInstance", ns, "bobs", spec("id-bobs", "bob"), provisioned(broker.DemoPostgresHobbyPlanID)),
		old("ServiceInstance", ns, "nobodys", spec("id-nobodys", ""), provisioned(broker.DemoPostgresHobbyPlanID)),
		old("ServiceInstance", ns, "plain", instanceSpec("hobby", "id-plain"), provisioned(broker.DemoPostgresHobbyPlanID)),
	)
	got := f.run(Options{Namespace: ns})

	bobs := got["ServiceInstance/bobs"]
	assert.Equal(t, bobs.Result, ResultSkipped, bobs.Reason)
	assert.Assert(t, bobs.NeedsPerson)
	assert.Assert(t, strings.Contains(bobs.Reason, `svcat recorded "bob" as its author: bob migrates it`), bobs.Reason)
	nobodys := got["ServiceInstance/nobodys"]
	assert.Equal(t, nobodys.Result, ResultSkipped, nobodys.Reason)
	assert.Assert(t, strings.Contains(nobodys.Reason, "recorded no author"), nobodys.Reason)
	for _, name := range []string{"bobs", "nobodys"} {
		_, err := f.st.Instances().Get(context.Background(), ns, name)
		assert.Assert(t, store.IsNotFound(err), "%s: no record is written in the migrator's name: %v", name, err)
	}
	assert.Equal(t, got["ServiceInstance/plain"].Result, ResultMigrated, got["ServiceInstance/plain"].Reason)
}

// A binding makes the catalog read Secrets through its transforms (addKeysFrom, copied
// into its credentials Secret) and, by adopting it, hands its credentials Secret to the
// catalog: both are checked as parametersFrom is. Only the author svcat recorded
// migrates such a binding, and only when she may read each Secret herself; a Secret the
// binding does not own (svcat's controller made its own) is no credentials Secret of it.
func TestRun_ABindingReadingSecrets_IsMigratedOnlyByItsAuthorWhoMayReadThem(t *testing.T) {
	bound := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	addKeysFrom := []any{map[string]any{"addKeysFrom": map[string]any{"secretRef": map[string]any{"name": "root"}}}}
	binding := func(name, author string, transforms []any, secretName string) *unstructured.Unstructured {
		sp := map[string]any{"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-" + name, "secretName": secretName}
		if transforms != nil {
			sp["secretTransforms"] = transforms
		}
		if author != "" {
			sp["userInfo"] = map[string]any{"username": author}
		}
		return old("ServiceBinding", ns, name, sp, bound)
	}
	cases := []struct {
		name       string
		author     string
		transforms []any
		owned      bool // the credentials Secret is owned by the svcat binding
		unreadable bool // the migrator may not get Secret "root" (or the credentials Secret)
		want       string
		reason     string
	}{
		{name: "plain", owned: true, want: ResultMigrated},
		{name: "transform-by-another", author: "bob", transforms: addKeysFrom, owned: true, want: ResultSkipped,
			reason: `its credentials take keys from Secrets (spec.secretTransforms addKeysFrom: "root"), which the catalog reads with the rights of the record's author, and svcat recorded "bob" as its author: bob migrates it`},
		{name: "transform-by-nobody", transforms: addKeysFrom, owned: true, want: ResultSkipped, reason: "svcat recorded no author for it"},
		{name: "transform-by-migrator", author: migrator, transforms: addKeysFrom, owned: true, want: ResultMigrated},
		{name: "transform-unreadable", author: migrator, transforms: addKeysFrom, owned: true, unreadable: true, want: ResultSkipped,
			reason: `you may not get Secret "root" in namespace "dev"`},
		{name: "foreign-secret-by-another", author: "bob", want: ResultSkipped,
			reason: `its credentials Secret "foreign-secret-by-another-creds" is not owned by it`},
		{name: "foreign-secret-by-migrator", author: migrator, want: ResultMigrated},
		{name: "foreign-secret-unreadable", author: migrator, unreadable: true, want: ResultSkipped,
			reason: `you may not get Secret "foreign-secret-unreadable-creds"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID)),
				binding(tc.name, tc.author, tc.transforms, tc.name+"-creds"))
			ctx := context.Background()
			yes := true
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name + "-creds"}, Data: map[string][]byte{"k": []byte("v")}}
			if tc.owned {
				s.OwnerReferences = []metav1.OwnerReference{{APIVersion: GroupVersion, Kind: "ServiceBinding", Name: tc.name, UID: types.UID("old-" + tc.name), Controller: &yes}}
			}
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
			assert.NilError(t, err)
			_, err = f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root"},
				Data: map[string][]byte{"token": []byte("hunter2")}}, metav1.CreateOptions{})
			assert.NilError(t, err)
			f.unreadable = map[string]bool{}
			if tc.unreadable {
				f.unreadable["root"], f.unreadable[tc.name+"-creds"] = true, true
			}

			got := f.run(Options{Namespace: ns})["ServiceBinding/"+tc.name]

			assert.Equal(t, got.Result, tc.want, got.Reason)
			_, err = f.st.Bindings().Get(ctx, ns, tc.name)
			if tc.want == ResultSkipped {
				assert.Assert(t, got.NeedsPerson)
				assert.Assert(t, is.Contains(got.Reason, tc.reason))
				assert.Assert(t, store.IsNotFound(err), "no record is written in the migrator's name: %v", err)
				s, err := f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, tc.name+"-creds", metav1.GetOptions{})
				assert.NilError(t, err)
				assert.Assert(t, len(s.OwnerReferences) == 0 || s.OwnerReferences[0].UID == types.UID("old-"+tc.name), "its Secret is not adopted")
				return
			}
			assert.NilError(t, err)
		})
	}
}
