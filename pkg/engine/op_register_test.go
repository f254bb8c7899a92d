package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// brokerFixture is a fake cluster, a test broker over HTTP asking for basic
// authentication, and an engine whose catalog syncer carries its CheckBroker, as the one
// cmdutil.Factory.Engine builds.
type brokerFixture struct {
	t       *testing.T
	cluster *storetest.Cluster
	st      *store.Store
	tb      *broker.Broker
	engine  *Engine
	notes   []string
}

func newBrokerFixture(t *testing.T, objects ...runtime.Object) *brokerFixture {
	t.Helper()
	f := &brokerFixture{t: t, tb: broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})}
	f.cluster = storetest.NewCluster(objects...)
	f.st = f.cluster.Store()
	clients := brokerclient.New(f.cluster.Core, brokerclient.WithTimeout(5*time.Second))
	var e *Engine
	syncer := catalogsync.New(f.st, clients, catalogsync.WithCore(f.cluster.Core),
		catalogsync.WithBrokerCheck(func(ctx context.Context, b *v1alpha1.Broker) error { return e.CheckBroker(ctx, b) }))
	e = New(Config{Store: f.st, Brokers: clients, Platform: StaticPlatform{Cluster: "cluster-1", User: testUser},
		CatalogNamespace: storetest.CatalogNamespace, Holder: "test", Catalogs: syncer})
	f.engine = e
	return f
}

// authSecret is the test broker's credentials in namespace ns.
func authSecret(ns string) *corev1.Secret {
	s := secret("acme-auth", map[string]string{"username": "u", "password": "p"})
	s.Namespace = ns
	return s
}

func catalogNamespace() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: storetest.CatalogNamespace}}
}

func (f *brokerFixture) note(line string) { f.notes = append(f.notes, line) }

// registerRequest registers the test broker "acme" in the cluster scope, with its Secret.
func (f *brokerFixture) registerRequest() RegisterBrokerRequest {
	return RegisterBrokerRequest{Name: brokerName, URL: f.tb.URL(), Scope: v1alpha1.ScopeCluster, Namespace: ns,
		BasicAuthSecret: "acme-auth", DryRun: DryRunNone, Note: f.note}
}

// registered registers the test broker with the catalog fetched, and forgets the calls.
func (f *brokerFixture) registered() *v1alpha1.Broker {
	f.t.Helper()
	res, err := f.engine.RegisterBroker(context.Background(), f.registerRequest())
	assert.NilError(f.t, err)
	f.tb.ClearRequests()
	f.notes = nil
	return res.Broker
}

// catalogCalls counts the catalog requests the test broker has had.
func (f *brokerFixture) catalogCalls() int {
	return len(f.tb.RequestsFor(broker.OpCatalog))
}

// snapshot is every ConfigMap, Secret and Namespace of the cluster with its
// resourceVersion and finalizers.
func (f *brokerFixture) snapshot() []string {
	f.t.Helper()
	ctx := context.Background()
	var out []string
	cms, err := f.cluster.Core.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, o := range cms.Items {
		out = append(out, fmt.Sprintf("configmap %s/%s %s %v %v", o.Namespace, o.Name, o.ResourceVersion, o.Finalizers, o.DeletionTimestamp))
	}
	secrets, err := f.cluster.Core.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, o := range secrets.Items {
		out = append(out, fmt.Sprintf("secret %s/%s %s %v %v", o.Namespace, o.Name, o.ResourceVersion, o.Finalizers, o.DeletionTimestamp))
	}
	nss, err := f.cluster.Core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, o := range nss.Items {
		out = append(out, "namespace "+o.Name)
	}
	sort.Strings(out)
	return out
}

func (f *brokerFixture) classes(namespace string) []*v1alpha1.ServiceClass {
	f.t.Helper()
	cs, err := f.st.Classes().List(context.Background(), namespace, store.Filter{Broker: brokerName})
	assert.NilError(f.t, err)
	return cs
}

func TestRegisterBroker_ClusterScope_CreatesTheCatalogNamespaceRecordsAndFetches(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace))
	res, err := f.engine.RegisterBroker(context.Background(), f.registerRequest())
	assert.NilError(t, err)

	assert.Equal(t, res.Broker.Namespace, storetest.CatalogNamespace)
	assert.Assert(t, res.Catalog != nil && res.Catalog.Classes > 0, "%+v", res.Catalog)
	assert.Equal(t, len(f.classes(storetest.CatalogNamespace)), res.Catalog.Classes)
	assert.Equal(t, f.catalogCalls(), 1)
	_, err = f.cluster.Core.CoreV1().Namespaces().Get(context.Background(), storetest.CatalogNamespace, metav1.GetOptions{})
	assert.NilError(t, err, "the catalog namespace was not created")

	b, err := f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.NilError(t, err)
	assert.Assert(t, meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionReady), "%+v", b.Status.Conditions)
	assert.DeepEqual(t, f.notes, []string{
		fmt.Sprintf("Registering broker %q at %s (cluster scope, namespace %q)...", brokerName, f.tb.URL(), storetest.CatalogNamespace),
		fmt.Sprintf("Fetching the catalog of broker %q...", brokerName),
	})
}

func TestRegisterBroker_NamespaceScope_RecordsInTheUsersNamespaceAndProtectsTheSecret(t *testing.T) {
	f := newBrokerFixture(t, authSecret(ns))
	req := f.registerRequest()
	req.Scope = v1alpha1.ScopeNamespace
	req.RelistInterval = time.Hour
	req.PlanRestrictions = []string{"free==true"}
	res, err := f.engine.RegisterBroker(context.Background(), req)
	assert.NilError(t, err)

	b := res.Broker
	assert.Equal(t, b.Namespace, ns)
	assert.Equal(t, b.Spec.Scope, v1alpha1.ScopeNamespace)
	assert.DeepEqual(t, b.Spec.Auth, &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "acme-auth"}})
	assert.Equal(t, b.Spec.RelistInterval.Duration, time.Hour)
	assert.DeepEqual(t, b.Spec.CatalogRestrictions, &v1alpha1.CatalogRestrictions{ServicePlan: []string{"free==true"}})
	assert.Equal(t, len(f.classes(ns)), res.Catalog.Classes)
	s, err := f.cluster.Core.CoreV1().Secrets(ns).Get(context.Background(), "acme-auth", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Assert(t, len(s.Finalizers) > 0, "the credentials Secret has no finalizer")
}

func TestRegisterBroker_FetchFails_TheBrokerStaysRecordedWithTheError(t *testing.T) {
	f := newBrokerFixture(t, catalogNamespace())
	req := f.registerRequest()
	req.BasicAuthSecret = ""
	// The broker asks for credentials that are not sent.
	_, err := f.engine.RegisterBroker(context.Background(), req)
	assert.ErrorContains(t, err, fmt.Sprintf("broker %q is registered, but", brokerName))
	assert.ErrorContains(t, err, fmt.Sprintf("Fix the cause, then run \"kubectl catalog sync broker %s\"", brokerName))
	b, err := f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.NilError(t, err)
	assert.Assert(t, b.Status.LastCatalogError != "")
	assert.Equal(t, len(f.classes(storetest.CatalogNamespace)), 0)
}

func TestRegisterBroker_BadInput_ChangesNothingAndCallsNoBroker(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*RegisterBrokerRequest)
		before  func(*brokerFixture)
		wantErr string
	}{
		{name: "already registered", before: func(f *brokerFixture) { f.registered() },
			wantErr: `broker "acme" is already registered in namespace "catalog-system": run "kubectl catalog sync broker acme" to fetch its catalog again, or "kubectl catalog deregister acme" first to register it anew`},
		{name: "missing Secret", mutate: func(r *RegisterBrokerRequest) { r.BasicAuthSecret = "nope" }, wantErr: "nope"},
		{name: "Secret without its keys", mutate: func(r *RegisterBrokerRequest) { r.BearerTokenSecret, r.BasicAuthSecret = "acme-auth", "" }, wantErr: "token"},
		{name: "bad name", mutate: func(r *RegisterBrokerRequest) { r.Name = "Acme" }, wantErr: `"Acme" is not a valid broker name`},
		{name: "bad scope", mutate: func(r *RegisterBrokerRequest) { r.Scope = "galaxy" }, wantErr: "the scope must be"},
		{name: "bad URL", mutate: func(r *RegisterBrokerRequest) { r.URL = "ftp://x" }, wantErr: "must start with http:// or https://"},
		{name: "two kinds of credentials", mutate: func(r *RegisterBrokerRequest) { r.BearerTokenSecret = "t" }, wantErr: "cannot be used together"},
		{name: "bad restriction", mutate: func(r *RegisterBrokerRequest) { r.ClassRestrictions = []string{"name in (a"} }, wantErr: "is not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
			if tc.before != nil {
				tc.before(f)
			}
			before := f.snapshot()
			req := f.registerRequest()
			if tc.mutate != nil {
				tc.mutate(&req)
			}
			_, err := f.engine.RegisterBroker(context.Background(), req)
			assert.ErrorContains(t, err, tc.wantErr)
			assert.DeepEqual(t, f.snapshot(), before)
			assert.Equal(t, f.catalogCalls(), 0)
		})
	}
}

func TestRegisterBroker_DryRun_WritesNothingAndFetchesNoCatalog(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dry         DryRun
		namespaced  bool
		wantDryRuns bool
		wantMissing bool
	}{
		{name: "client", dry: DryRunClient},
		{name: "server", dry: DryRunServer, namespaced: true, wantDryRuns: true},
		{name: "server, namespace missing", dry: DryRunServer, wantMissing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := []runtime.Object{authSecret(storetest.CatalogNamespace)}
			if tc.namespaced {
				objects = append(objects, catalogNamespace())
			}
			f := newBrokerFixture(t, objects...)
			before := f.snapshot()
			req := f.registerRequest()
			req.DryRun = tc.dry
			res, err := f.engine.RegisterBroker(context.Background(), req)
			assert.NilError(t, err)
			assert.Equal(t, res.Broker.Name, brokerName)
			assert.Equal(t, res.Broker.Namespace, storetest.CatalogNamespace)
			assert.Assert(t, res.Catalog == nil)
			assert.Equal(t, res.NamespaceMissing, tc.wantMissing)
			assert.Equal(t, f.cluster.DryRuns() > 0, tc.wantDryRuns, "dry runs sent: %d", f.cluster.DryRuns())
			assert.DeepEqual(t, f.snapshot(), before)
			assert.Equal(t, f.catalogCalls(), 0)
		})
	}
}

func TestRegisterBroker_DryRun_RefusesAMissingSecretAsTheRealCommandWould(t *testing.T) {
	f := newBrokerFixture(t, catalogNamespace())
	req := f.registerRequest()
	req.DryRun = DryRunClient
	_, err := f.engine.RegisterBroker(context.Background(), req)
	assert.Assert(t, brokerclient.IsSecretError(err), "%v", err)
	assert.Assert(t, is.Contains(err.Error(), "acme-auth"))
}

func TestRegisterBroker_WithoutACatalogSyncer_SaysSo(t *testing.T) {
	e := New(Config{Store: storetest.NewCluster().Store(), Platform: StaticPlatform{Cluster: "c"}})
	_, err := e.RegisterBroker(context.Background(), RegisterBrokerRequest{Name: "acme", URL: "https://x", Scope: v1alpha1.ScopeCluster})
	assert.ErrorContains(t, err, "no catalog syncer")
	assert.Assert(t, !strings.Contains(err.Error(), "panic"))
}

// withInstance records an instance of the registered broker's first class in the user's
// namespace.
func (f *brokerFixture) withInstance(name string) {
	f.t.Helper()
	c := f.classes(storetest.CatalogNamespace)[0]
	_, err := f.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: c.Spec.ExternalName,
			ClassID: c.Spec.ID, PlanExternalName: c.Spec.Plans[0].ExternalName, PlanID: c.Spec.Plans[0].ID, ExternalID: "inst-" + name},
	})
	assert.NilError(f.t, err)
}

func TestDeregister_RemovesTheBrokerAndItsClasses(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	n := len(f.classes(storetest.CatalogNamespace))
	assert.Assert(t, n > 0)

	res, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, DryRun: DryRunNone, Note: f.note})
	assert.NilError(t, err)
	assert.Equal(t, res.Classes, n)
	assert.Equal(t, res.Broker.Name, brokerName)
	_, err = f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	assert.Equal(t, len(f.classes(storetest.CatalogNamespace)), 0)
	schemas, err := f.st.PlanSchemas().List(context.Background(), storetest.CatalogNamespace, store.Filter{Broker: brokerName})
	assert.NilError(t, err)
	assert.Equal(t, len(schemas), 0)
	assert.DeepEqual(t, f.notes, []string{fmt.Sprintf("Deregistering broker %q (cluster scope, namespace %q)...", brokerName, storetest.CatalogNamespace)})
	assert.Equal(t, len(f.tb.Requests()), 0, "deregister calls the broker")
}

func TestDeregister_NamespaceBroker_ReleasesTheSecretsFinalizer(t *testing.T) {
	f := newBrokerFixture(t, authSecret(ns))
	req := f.registerRequest()
	req.Scope = v1alpha1.ScopeNamespace
	_, err := f.engine.RegisterBroker(context.Background(), req)
	assert.NilError(t, err)

	_, err = f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns})
	assert.NilError(t, err)
	s, err := f.cluster.Core.CoreV1().Secrets(ns).Get(context.Background(), "acme-auth", metav1.GetOptions{})
	assert.NilError(t, err, "the Secret itself stays")
	assert.Equal(t, len(s.Finalizers), 0)
	_, err = f.st.Brokers().Get(context.Background(), ns, brokerName)
	assert.Assert(t, store.IsNotFound(err), "%v", err)
}

func TestDeregister_InstancesExist_RefusedAndNothingChanges(t *testing.T) {
	for _, dry := range []DryRun{DryRunNone, DryRunClient, DryRunServer} {
		t.Run(string(dry), func(t *testing.T) {
			f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
			f.registered()
			f.withInstance("db")
			before := f.snapshot()
			_, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, DryRun: dry})
			assert.ErrorContains(t, err, `broker "acme" still has 1 instance: dev/db; deprovision them first (kubectl catalog deprovision NAME -n NAMESPACE), or deregister anyway with --force`)
			assert.DeepEqual(t, f.snapshot(), before)
			assert.Equal(t, f.cluster.DryRuns(), 0)
		})
	}
}

func TestDeregister_Force_LeavesTheInstancesBehindAndSaysSo(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	for i := range 12 {
		f.withInstance(fmt.Sprintf("db%02d", i))
	}
	_, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, Force: true, Note: f.note})
	assert.NilError(t, err)
	assert.Equal(t, len(f.notes), 2)
	assert.Equal(t, f.notes[1], `Warning: 12 instances of broker "acme" are left behind (dev/db00, dev/db01, dev/db02, dev/db03, dev/db04, dev/db05, dev/db06, dev/db07, dev/db08, dev/db09 and 2 more)`)
	insts, err := f.st.Instances().List(context.Background(), ns, store.Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(insts), 12)
	_, err = f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.Assert(t, store.IsNotFound(err), "%v", err)
}

func TestDeregister_DryRun_CountsTheClassesAndWritesNothing(t *testing.T) {
	for _, dry := range []DryRun{DryRunClient, DryRunServer} {
		t.Run(string(dry), func(t *testing.T) {
			f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
			f.registered()
			n := len(f.classes(storetest.CatalogNamespace))
			before := f.snapshot()
			res, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, DryRun: dry, Note: f.note})
			assert.NilError(t, err)
			assert.Equal(t, res.Classes, n)
			assert.Equal(t, len(f.notes), 0, "a dry run says no Deregistering line")
			assert.DeepEqual(t, f.snapshot(), before)
			if dry == DryRunServer {
				// The classes, their schemas and the broker record: deletions checked, none stored.
				assert.Assert(t, f.cluster.DryRuns() >= 2*n+1, "dry-run deletions sent: %d", f.cluster.DryRuns())
			} else {
				assert.Equal(t, f.cluster.DryRuns(), 0)
			}
		})
	}
}

func TestDeregister_UnknownBroker_ChangesNothing(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	before := f.snapshot()
	_, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: "acne", Namespace: ns})
	assert.ErrorContains(t, err, `broker "acne" not found in namespace "dev" or in the catalog namespace "catalog-system"; did you mean "acme"?`)
	assert.DeepEqual(t, f.snapshot(), before)
}
