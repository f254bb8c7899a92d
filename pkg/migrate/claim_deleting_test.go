package migrate

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// A record migrated by a run whose claim of the spec's id failed (here: removed after
// the run), whose old object is then deleted, gets its claim from the next run before
// that run records its deprovision or unbind: a record being deleted without a claim
// loses its id, at its deletion's call, to any older record whose spec was rewritten to
// name it (among records without a claim the older keeps the id), and its call is then
// refused for ever.
func TestRun_AMigratedRecordWithoutItsIDClaim_WhoseOldObjectIsDeleted_GetsItsClaimBeforeItsDeletion(t *testing.T) {
	bound := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	tests := []struct {
		kind, name string
		resource   schema.GroupVersionResource
		record     func(f *fixture) (metav1.Object, string)
		pending    string
	}{
		{kind: v1alpha1.KindServiceInstance, name: "db", resource: ServiceInstances, pending: "deprovision pending",
			record: func(f *fixture) (metav1.Object, string) {
				x, err := f.st.Instances().Get(context.Background(), ns, "db")
				assert.NilError(f.t, err)
				return x, x.Spec.ExternalID
			}},
		{kind: v1alpha1.KindServiceBinding, name: "creds", resource: ServiceBindings, pending: "",
			record: func(f *fixture) (metav1.Object, string) {
				x, err := f.st.Bindings().Get(context.Background(), ns, "creds")
				assert.NilError(f.t, err)
				return x, x.Spec.ExternalID
			}},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			f := newFixture(t,
				old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID)),
				old("ServiceBinding", ns, "creds", map[string]any{"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-1"}, bound),
			)
			ctx := context.Background()
			yes := true
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds", OwnerReferences: []metav1.OwnerReference{
					{APIVersion: GroupVersion, Kind: "ServiceBinding", Name: "creds", UID: "old-creds", Controller: &yes},
				}}, Data: map[string][]byte{"password": []byte("x")},
			}, metav1.CreateOptions{})
			assert.NilError(t, err)
			key := tc.resource.Resource[:len(tc.resource.Resource)-1]
			key = map[string]string{"serviceinstance": "ServiceInstance", "servicebinding": "ServiceBinding"}[key] + "/" + tc.name
			got := f.run(Options{Namespace: ns})
			assert.Equal(t, got[key].Result, ResultMigrated, got[key].Reason)
			rec, id := tc.record(f)
			claim := store.IDClaimName(tc.kind, types.UID(rec.GetUID()), id)
			cm, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, claim, metav1.GetOptions{})
			assert.NilError(t, err, "the first run claims the id")
			cm.Finalizers = nil
			_, err = f.cluster.Core.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			assert.NilError(t, err)
			assert.NilError(t, f.cluster.Core.CoreV1().ConfigMaps(ns).Delete(ctx, claim, metav1.DeleteOptions{}))

			o, err := f.dyn.Resource(tc.resource).Namespace(ns).Get(ctx, tc.name, metav1.GetOptions{})
			assert.NilError(t, err)
			now := metav1.Now()
			o.SetDeletionTimestamp(&now)
			o.SetFinalizers([]string{"kubernetes-incubator/service-catalog"})
			_, err = f.dyn.Resource(tc.resource).Namespace(ns).Update(ctx, o, metav1.UpdateOptions{})
			assert.NilError(t, err)

			got = f.run(Options{Namespace: ns})
			assert.Equal(t, got[key].Result, ResultMigrated, got[key].Reason)
			assert.Assert(t, is.Contains(got[key].Reason, tc.pending))
			rec, _ = tc.record(f)
			assert.Assert(t, rec.GetDeletionTimestamp() != nil, "recorded as a pending deletion")
			_, err = f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, claim, metav1.GetOptions{})
			assert.Assert(t, !apierrors.IsNotFound(err), "the run makes the missing claim before the deletion")
			assert.NilError(t, err)
		})
	}
}
