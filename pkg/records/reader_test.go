package records

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

const (
	ns         = storetest.UserNamespace
	brokerName = "acme"
	classID    = "svc-1"
	planSmall  = "plan-small"
)

type fixture struct {
	t       *testing.T
	cluster *storetest.Cluster
	st      *store.Store
	reader  *Reader
}

// newFixture is a cluster with a cluster-scoped broker and its one class.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, cluster: storetest.NewCluster()}
	f.st = f.cluster.Store()
	f.reader = NewReader(f.st)
	ctx := context.Background()
	_, err := f.st.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: brokerName},
		Spec:       v1alpha1.BrokerSpec{URL: "https://broker.example", Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)
	_, err = f.st.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName(brokerName, classID)},
		Spec: v1alpha1.ServiceClassSpec{
			BrokerName: brokerName, Scope: v1alpha1.ScopeCluster, ID: classID, ExternalName: "db", Bindable: true,
			Plans: []v1alpha1.ServicePlan{{ID: planSmall, ExternalName: "small", Free: true}},
		},
	})
	assert.NilError(t, err)
	return f
}

// create stores a new instance of the small plan.
func (f *fixture) create(name string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	inst, err := f.st.Instances().Create(store.WithIntent(context.Background()), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planSmall},
	})
	assert.NilError(f.t, err)
	return inst
}

func TestReader_OwnedSecret_ASecretTheRecordDoesNotOwnIsNotReturned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("hunter2")}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	inst := f.create("db")

	s, err := f.reader.OwnedSecret(ctx, inst, "creds")
	assert.Assert(t, IsNotOwned(err), "%v", err)
	assert.Assert(t, s == nil)
	_, err = f.reader.OwnedSecret(ctx, inst, "missing")
	assert.Assert(t, IsNotFound(err), "%v", err)
}

func TestReader_MarketClasses_AreTheClassesTheNamespaceSees(t *testing.T) {
	f := newFixture(t)
	r := f.reader
	classes, err := r.MarketClasses(context.Background(), ns, Filter{}, marketplace.InCatalogNamespace(storetest.CatalogNamespace))
	assert.NilError(t, err)
	assert.Equal(t, len(classes), 1)
	assert.Equal(t, classes[0].Spec.ID, classID)
	offers, err := r.Offerings(context.Background(), ns, marketplace.Filter{}, marketplace.InCatalogNamespace(storetest.CatalogNamespace))
	assert.NilError(t, err)
	assert.Assert(t, len(offers) > 0)
}

func TestReader_ListPendingAndInstancesOf(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.create("db")
	r := f.reader

	items, err := r.ListPending(ctx, ns)
	assert.NilError(t, err)
	assert.Equal(t, len(items), 1, "%+v", items)
	assert.Equal(t, items[0].Kind, v1alpha1.KindServiceInstance)
	assert.Equal(t, items[0].Name, "db")

	b, err := r.Brokers().Get(ctx, storetest.CatalogNamespace, brokerName)
	assert.NilError(t, err)
	insts, err := r.InstancesOf(ctx, b)
	assert.NilError(t, err)
	assert.Equal(t, len(insts), 1)
	assert.Equal(t, insts[0].Name, "db")

	other := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: brokerName}, Spec: v1alpha1.BrokerSpec{Scope: v1alpha1.ScopeNamespace}}
	insts, err = r.InstancesOf(ctx, other)
	assert.NilError(t, err)
	assert.Equal(t, len(insts), 0, "a namespace-scoped broker of that name has no instance")
}
