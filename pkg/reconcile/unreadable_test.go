package reconcile

import (
	"context"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestRun_UndecodableConfigMapsAreFailedItems_TheOthersAreDriven(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	junk := func(kind, name string, labels, annotations map[string]string) {
		labels[store.LabelKind] = kind
		_, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: store.ConfigMapName(kind, name), Labels: labels, Annotations: annotations}}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	junk(v1alpha1.KindBroker, "junk", map[string]string{}, nil)
	junk(v1alpha1.KindBroker, "future", map[string]string{}, map[string]string{store.AnnotationFormat: "99"})
	junk(v1alpha1.KindBroker, "pending", map[string]string{store.LabelPending: "true"}, nil)
	junk(v1alpha1.KindServiceInstance, "junk", map[string]string{store.LabelPending: "true"}, nil)

	// And a full pass over a cluster whose records have their id claims, which steps
	// records while its list is read (aslisted.go).
	assert.NilError(t, f.st.MarkIDClaimsSwept(ctx, storetest.CatalogNamespace))
	asListed := fullPassAlways()
	asListedRotating := fullPassAlways()
	asListedRotating.RotateDue = true
	for i, o := range []Options{{}, {RotateDue: true}, asListed, asListedRotating} {
		db := fmt.Sprintf("db-%d", i)
		f.instance(db)
		sum, err := f.rec.Run(ctx, o)
		assert.NilError(t, err, "no ConfigMap a tenant writes fails the run")
		assert.Equal(t, f.item(sum, db).Outcome, Done, "%+v", sum.Items)
		failed := map[string]bool{}
		for _, it := range sum.Items {
			if it.Outcome == Failed {
				failed[it.Kind+"/"+it.Name] = true
				assert.Assert(t, is.Contains(it.Detail, "cannot read it: "))
			}
		}
		assert.DeepEqual(t, failed, map[string]bool{
			"Broker/junk": true, "Broker/future": true, "Broker/pending": true, "ServiceInstance/junk": true,
		})
		assert.Assert(t, sum.Failed())
	}
}

func TestRun_AnImmutableRecordIsRefusedVisibly_TheOthersInItsNamespaceAreDriven(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.instance("frozen")
	cms := f.cluster.Core.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, "frozen"), metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Immutable = new(true)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)
	f.instance("db")

	sum, err := f.rec.Run(ctx, Options{})

	assert.NilError(t, err, "an immutable record does not fail the run")
	assert.Equal(t, f.item(sum, "db").Outcome, Done, "%+v", sum.Items)
	frozen := f.item(sum, "frozen")
	assert.Equal(t, frozen.Outcome, Failed, "%+v", sum.Items)
	assert.Assert(t, is.Contains(frozen.Detail, "immutable"))
	assert.Assert(t, is.Contains(frozen.Detail, "create the record again"))
}
