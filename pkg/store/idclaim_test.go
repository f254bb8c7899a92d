package store_test

import (
	"context"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// An id claim holds its finalizer from when it is made (a claim of an earlier release
// gets it on its next claim) until the record it serves is released: a deletion of its
// namespace or a foreground deletion of its record leaves it in place meanwhile.
func TestIDClaim_HoldsItsFinalizerUntilItsRecordIsReleased(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding} {
		t.Run(kind, func(t *testing.T) {
			c, st, _ := newCluster(t)
			ns := storetest.UserNamespace
			var rec v1alpha1.Record
			var err error
			if kind == v1alpha1.KindServiceInstance {
				rec, err = st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
					Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-1", PlanID: "p"}})
			} else {
				rec, err = st.Bindings().Create(ctx, &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
					Spec: v1alpha1.ServiceBindingSpec{ExternalID: "svcat-1", InstanceName: "db"}})
			}
			assert.NilError(t, err)
			cms := c.Core.CoreV1().ConfigMaps(ns)
			name := store.IDClaimName(kind, rec.GetUID(), "svcat-1")

			// A claim of an earlier release, without the finalizer, gets it.
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels: map[string]string{store.LabelKind: kind + "IDClaim", store.IDLabel("svcat-1"): "true"}}}, metav1.CreateOptions{})
			assert.NilError(t, err)
			_, _, err = st.ClaimExternalID(ctx, kind, rec, "svcat-1")
			assert.NilError(t, err)
			claim, err := cms.Get(ctx, name, metav1.GetOptions{})
			assert.NilError(t, err)
			assert.Assert(t, slices.Contains(claim.Finalizers, store.IDClaimFinalizer), "%v", claim.Finalizers)

			// The record's release releases its claim.
			if kind == v1alpha1.KindServiceInstance {
				assert.NilError(t, st.Instances().Delete(ctx, ns, "db"))
				_, err = st.Instances().RemoveFinalizer(ctx, rec.(*v1alpha1.ServiceInstance))
			} else {
				assert.NilError(t, st.Bindings().Delete(ctx, ns, "app"))
				_, err = st.Bindings().RemoveFinalizer(ctx, rec.(*v1alpha1.ServiceBinding))
			}
			assert.NilError(t, err)
			_, err = cms.Get(ctx, name, metav1.GetOptions{})
			assert.Assert(t, apierrors.IsNotFound(err), "the claim goes with its record: %v", err)
		})
	}
}

func TestIDClaim_ANewClaimHoldsTheFinalizer(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	ns := storetest.UserNamespace
	db, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-1", PlanID: "p"}})
	assert.NilError(t, err)
	_, _, err = st.ClaimExternalID(ctx, v1alpha1.KindServiceInstance, db, "svcat-1")
	assert.NilError(t, err)
	claim, err := c.Core.CoreV1().ConfigMaps(ns).Get(ctx, store.IDClaimName(v1alpha1.KindServiceInstance, db.UID, "svcat-1"), metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, claim.Finalizers, []string{store.IDClaimFinalizer})
	assert.Equal(t, claim.OwnerReferences[0].UID, db.UID)
}

// A claim whose record is gone is stray: reconcile's index lists it, and releasing it
// checks the record first, so a claim of a record that exists is never released.
func TestIDClaim_AStrayClaimIsReleasedOnlyWhenItsRecordIsGone(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newCluster(t)
	ns := storetest.UserNamespace
	kept, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-1", PlanID: "p"}})
	assert.NilError(t, err)
	gone, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-2", PlanID: "p"}})
	assert.NilError(t, err)
	for rec, id := range map[*v1alpha1.ServiceInstance]string{kept: "svcat-1", gone: "svcat-2"} {
		_, _, err := st.ClaimExternalID(ctx, v1alpha1.KindServiceInstance, rec, id)
		assert.NilError(t, err)
	}
	// gone's finalizer is removed by hand: its claim stays behind.
	cm, err := c.Core.CoreV1().ConfigMaps(ns).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, "gone"), metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Finalizers = nil
	_, err = c.Core.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)
	assert.NilError(t, c.Core.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}))

	_, idx, err := st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	stray := idx.Stray()
	assert.Equal(t, len(stray), 1, "%+v", stray)
	assert.Equal(t, stray[0].OwnerUID, gone.UID)
	released, err := st.ReleaseStrayIDClaim(ctx, stray[0])
	assert.NilError(t, err)
	assert.Assert(t, released)
	_, err = c.Core.CoreV1().ConfigMaps(ns).Get(ctx, stray[0].Name, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "%v", err)

	// A claim whose record exists is not released, whatever an index says.
	released, err = st.ReleaseStrayIDClaim(ctx, store.StrayIDClaim{Kind: v1alpha1.KindServiceInstance, Namespace: ns,
		Name: store.IDClaimName(v1alpha1.KindServiceInstance, kept.UID, "svcat-1"), OwnerName: store.ConfigMapName(v1alpha1.KindServiceInstance, "kept"), OwnerUID: kept.UID})
	assert.NilError(t, err)
	assert.Assert(t, !released)
	_, err = c.Core.CoreV1().ConfigMaps(ns).Get(ctx, store.IDClaimName(v1alpha1.KindServiceInstance, kept.UID, "svcat-1"), metav1.GetOptions{})
	assert.NilError(t, err)
}

// The index names the records that have no claim holding the finalizer, oldest first;
// SpecIDsOf reads which of their spec ids are bound to nothing.
func TestIDIndex_UnclaimedAndSpecIDsOf(t *testing.T) {
	ctx := context.Background()
	_, st, clk := newCluster(t)
	ns := storetest.UserNamespace
	older, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "older"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-1", PlanID: "p"}})
	assert.NilError(t, err)
	clk.advance(60e9)
	bound := v1alpha1.NewNamespaceBoundID(ns)
	_, err = st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bound"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: bound, PlanID: "p"}})
	assert.NilError(t, err)
	claimed, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claimed"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-2", PlanID: "p"}})
	assert.NilError(t, err)
	_, _, err = st.ClaimExternalID(ctx, v1alpha1.KindServiceInstance, claimed, "svcat-2")
	assert.NilError(t, err)

	_, idx, err := st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	var names []string
	for _, w := range idx.Unclaimed() {
		names = append(names, w.Name)
	}
	assert.DeepEqual(t, names, []string{"older", "bound"})
	uses, err := st.SpecIDsOf(ctx, v1alpha1.KindServiceInstance, ns, "older", older.UID)
	assert.NilError(t, err)
	assert.Equal(t, len(uses), 1)
	assert.Equal(t, uses[0].ID, "svcat-1")
	ws := idx.Unclaimed()
	uses, err = st.SpecIDsOf(ctx, v1alpha1.KindServiceInstance, ns, "bound", ws[1].UID)
	assert.NilError(t, err)
	assert.Equal(t, len(uses), 0, "an id bound to its namespace needs no claim")
}
