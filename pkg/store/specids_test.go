package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// UnclaimedSpecIDs answers the same whether it reads the records one at a time or lists
// them: the ids bound to nothing of instances and bindings, none of bound ids, none of
// a record replaced since the index's list; many records cost pages, not a read each.
func TestUnclaimedSpecIDs_ReadsFewOneAtATimeAndManyByPages(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		bound     int // records with a bound id, besides the three below
		namespace string
		wantGets  bool
	}{
		{"few records: a read each", 0, "", true},
		{"many records, every namespace: pages", 2 * store.SpecIDReadsEach, "", false},
		{"many records, one namespace: pages", 2 * store.SpecIDReadsEach, storetest.UserNamespace, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, st, _ := newCluster(t)
			ns := storetest.UserNamespace
			var gets, lists atomic.Int32
			c.Core.PrependReactor("*", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
				switch a.GetVerb() {
				case "get":
					gets.Add(1)
				case "list":
					lists.Add(1)
				}
				return false, nil, nil
			})
			inst, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
				Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-i", PlanID: "p"}})
			assert.NilError(t, err)
			b, err := st.Bindings().Create(ctx, &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
				Spec: v1alpha1.ServiceBindingSpec{ExternalID: "svcat-b", InstanceName: "old"}})
			assert.NilError(t, err)
			_, err = st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "replaced"},
				Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-r", PlanID: "p"}})
			assert.NilError(t, err)
			for i := range tc.bound {
				_, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b-%02d", i)},
					Spec: v1alpha1.ServiceInstanceSpec{ExternalID: v1alpha1.NewNamespaceBoundID(ns), PlanID: "p"}})
				assert.NilError(t, err)
			}
			_, idx, err := st.ListPendingWithIDs(ctx, tc.namespace)
			assert.NilError(t, err)
			// Replaced after the list: a record of the same name, another uid.
			assert.NilError(t, c.Core.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("configmaps"), ns, store.ConfigMapName(v1alpha1.KindServiceInstance, "replaced")))
			_, err = st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "replaced"},
				Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-r", PlanID: "p"}})
			assert.NilError(t, err)

			gets.Store(0)
			lists.Store(0)
			uses, err := st.UnclaimedSpecIDs(ctx, idx)
			assert.NilError(t, err)
			var got []string
			for _, u := range uses {
				got = append(got, fmt.Sprintf("%s %s/%s %s %s", u.Kind, u.Namespace, u.Name, u.UID, u.ID))
			}
			slices.Sort(got)
			assert.DeepEqual(t, got, []string{
				fmt.Sprintf("%s %s/app %s svcat-b", v1alpha1.KindServiceBinding, ns, b.UID),
				fmt.Sprintf("%s %s/old %s svcat-i", v1alpha1.KindServiceInstance, ns, inst.UID),
			})
			if tc.wantGets {
				assert.Equal(t, int(gets.Load()), 3)
				assert.Equal(t, int(lists.Load()), 0)
			} else {
				assert.Equal(t, int(gets.Load()), 0)
				assert.Assert(t, lists.Load() >= 1 && lists.Load() <= 3, "lists: %d", lists.Load())
			}
		})
	}
}

// An index of one namespace answers a check of every namespace for an id bound to a
// namespace or a uid (only a record of that namespace can hold one), never for an id
// bound to nothing (another namespace's record may use it).
func TestIDIndex_OfOneNamespace_AnswersForBoundIDsOnly(t *testing.T) {
	ctx := context.Background()
	_, st, _ := newCluster(t)
	ns := storetest.UserNamespace
	bound := v1alpha1.NewNamespaceBoundID(ns)
	a, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: bound, PlanID: "p"}})
	assert.NilError(t, err)
	b, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"},
		Spec: v1alpha1.ServiceInstanceSpec{ExternalID: "svcat-b", PlanID: "p"}})
	assert.NilError(t, err)
	_, idx, err := st.ListPendingWithIDs(ctx, ns)
	assert.NilError(t, err)

	users, ok := idx.Lookup(v1alpha1.KindServiceInstance, "", bound, a.UID)
	assert.Assert(t, ok, "a bound id is answered")
	assert.Equal(t, len(users), 1)
	_, ok = idx.Lookup(v1alpha1.KindServiceInstance, "", "svcat-b", b.UID)
	assert.Assert(t, !ok, "an id bound to nothing is not")
	_, ok = idx.Lookup(v1alpha1.KindServiceInstance, "team-b", bound, a.UID)
	assert.Assert(t, !ok, "nor a check of another namespace")
}
