package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestReader_OwnedSecret_ASecretTheRecordDoesNotOwnIsNotReturned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("creds", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	inst, err := f.st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planSmall},
	})
	assert.NilError(t, err)

	s, err := f.engine.Reader().OwnedSecret(ctx, inst, "creds")
	assert.Assert(t, IsNotOwned(err), "%v", err)
	assert.Assert(t, s == nil)
	_, err = f.engine.Reader().OwnedSecret(ctx, inst, "missing")
	assert.Assert(t, IsNotFound(err), "%v", err)
}

func TestReader_MarketClasses_AreTheClassesTheNamespaceSees(t *testing.T) {
	f := newFixture(t)
	r := f.engine.Reader()
	classes, err := r.MarketClasses(context.Background(), ns, Filter{}, marketplace.InCatalogNamespace(storetest.CatalogNamespace))
	assert.NilError(t, err)
	assert.Equal(t, len(classes), 1)
	assert.Equal(t, classes[0].Spec.ID, classID)
	offers, err := r.Offerings(context.Background(), ns, marketplace.Filter{}, marketplace.InCatalogNamespace(storetest.CatalogNamespace))
	assert.NilError(t, err)
	assert.Assert(t, len(offers) > 0)
}
