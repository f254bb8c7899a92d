package migrate

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
