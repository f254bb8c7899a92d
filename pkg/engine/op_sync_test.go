package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestSyncBroker_RecordsTheRequestThenFetches(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	registered := f.registered()
	// Classes the broker no longer offers go.
	for _, c := range f.classes(storetest.CatalogNamespace)[:1] {
		assert.NilError(t, f.st.Classes().Delete(context.Background(), c.Namespace, c.Name))
	}

	res, err := f.engine.SyncBroker(context.Background(), SyncBrokerRequest{Name: brokerName, Namespace: ns, Note: f.note})
	assert.NilError(t, err)
	assert.Equal(t, res.Broker.Spec.RelistRequests, registered.Spec.RelistRequests+1)
	assert.Equal(t, res.Catalog.ClassesAdded, 1)
	assert.Equal(t, len(f.classes(storetest.CatalogNamespace)), res.Catalog.Classes)
	assert.Equal(t, f.catalogCalls(), 1)
	assert.DeepEqual(t, f.notes, []string{fmt.Sprintf("Fetching the catalog of broker %q at %s...", brokerName, f.tb.URL())})
}

func TestSyncBroker_UnknownBroker_ChangesNothing(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	before := f.snapshot()
	for _, req := range []SyncBrokerRequest{
		{Name: "acne", Namespace: ns},
		{Name: brokerName, Namespace: ns, Scope: v1alpha1.ScopeNamespace},
	} {
		_, err := f.engine.SyncBroker(context.Background(), req)
		var nf *records.NotFoundError
		assert.Assert(t, errors.As(err, &nf), "%v", err)
	}
	assert.DeepEqual(t, f.snapshot(), before)
	assert.Equal(t, f.catalogCalls(), 0)
}

// A broker the engine does not trust (here one saying it is cluster-scoped outside the
// catalog namespace) is not called: the refusal is recorded in its status.
func TestSyncBroker_RefusedBroker_IsNotCalled(t *testing.T) {
	f := newBrokerFixture(t)
	_, err := f.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: brokerName},
		Spec:       v1alpha1.BrokerSpec{URL: f.tb.URL(), Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)

	_, err = f.engine.SyncBroker(context.Background(), SyncBrokerRequest{Name: brokerName, Namespace: ns})
	var fe *catalogsync.FetchError
	assert.Assert(t, errors.As(err, &fe), "%v", err)
	assert.Equal(t, fe.Reason, catalogsync.ReasonRefused)
	assert.ErrorContains(t, err, "cluster-scoped brokers live only in the catalog namespace")
	assert.Equal(t, f.catalogCalls(), 0)
	b, err := f.st.Brokers().Get(context.Background(), ns, brokerName)
	assert.NilError(t, err)
	assert.Assert(t, meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionRefused), "%+v", b.Status.Conditions)
	assert.Equal(t, len(f.classes(ns)), 0)
}
