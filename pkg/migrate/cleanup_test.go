package migrate

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// A binding left behind (skipped: here its credentials Secret cannot be read yet) still
// names its instance's old object, which its next migration resolves: --cleanup keeps
// that old instance, else the binding could never be migrated and what the broker holds
// under it would have no record.
func TestRun_CleanupKeepsTheOldInstanceOfABindingLeftBehind(t *testing.T) {
	bound := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	f := newFixture(t,
		old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID)),
		old("ServiceInstance", ns, "alone", instanceSpec("hobby", "id-alone"), provisioned(broker.DemoPostgresHobbyPlanID)),
		old("ServiceBinding", ns, "creds", map[string]any{"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-1"}, bound),
	)
	got := f.run(Options{Namespace: ns, Cleanup: true})
	assert.Equal(t, got["ServiceBinding/creds"].Result, ResultSkipped)
	assert.Equal(t, got["ServiceInstance/db"].Result, ResultMigrated)
	assert.Assert(t, is.Contains(got["ServiceInstance/db"].Reason, "old object kept"), got["ServiceInstance/db"].Reason)
	assert.Assert(t, is.Contains(got["ServiceInstance/alone"].Reason, "old object deleted"))
	ctx := context.Background()
	_, err := f.dyn.Resource(ServiceInstances).Namespace(ns).Get(ctx, "db", metav1.GetOptions{})
	assert.NilError(t, err, "the old instance a binding left behind names is kept")

	// Its Secret back, the binding is migrated, and then its instance's old object goes.
	yes := true
	_, err = f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: GroupVersion, Kind: "ServiceBinding", Name: "creds", UID: "old-creds", Controller: &yes},
		}}, Data: map[string][]byte{"password": []byte("x")},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	got = f.run(Options{Namespace: ns, Cleanup: true})
	assert.Equal(t, got["ServiceBinding/creds"].Result, ResultMigrated, got["ServiceBinding/creds"].Reason)
	assert.Assert(t, is.Contains(got["ServiceInstance/db"].Reason, "old object deleted"), got["ServiceInstance/db"].Reason)
}

// An instance recorded by a run whose claim of the spec's id failed (here: removed after
// the run) gets its claim from the next run: once reconcile's first pass has swept the
// cluster, nothing else makes it, and its bindings could never be bound or unbound.
func TestRun_AnAlreadyMigratedInstanceWithoutItsIDClaim_GetsItFromTheNextRun(t *testing.T) {
	f := newFixture(t, old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID)))
	got := f.run(Options{Namespace: ns})
	assert.Equal(t, got["ServiceInstance/db"].Result, ResultMigrated, got["ServiceInstance/db"].Reason)
	ctx := context.Background()
	inst, err := f.st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	claim := store.IDClaimName(v1alpha1.KindServiceInstance, inst.UID, inst.Spec.ExternalID)
	_, err = f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, claim, metav1.GetOptions{})
	assert.NilError(t, err, "the first run claims the id")
	cm, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, claim, metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Finalizers = nil
	_, err = f.cluster.Core.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)
	assert.NilError(t, f.cluster.Core.CoreV1().ConfigMaps(ns).Delete(ctx, claim, metav1.DeleteOptions{}))
	_, err = f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, claim, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "the claim is gone: %v", err)

	got = f.run(Options{Namespace: ns})
	assert.Equal(t, got["ServiceInstance/db"].Result, ResultAlreadyMigrated, got["ServiceInstance/db"].Reason)
	_, err = f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, claim, metav1.GetOptions{})
	assert.NilError(t, err, "the next run makes the missing claim")
}
