package migrate

import (
	"context"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// dropRecord removes a record's ConfigMap for good, as its deletion's end does (the
// deprovision or unbind done, or --abandon): its finalizers, then the object.
func (f *fixture) dropRecord(name string) {
	f.t.Helper()
	ctx := context.Background()
	cms := f.cluster.Core.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	assert.NilError(f.t, err)
	cm.Finalizers = nil
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(f.t, err)
	assert.NilError(f.t, cms.Delete(ctx, name, metav1.DeleteOptions{}))
}

// A record migrated from an old object, then deleted (a user's deprovision or unbind,
// or kubectl delete of its ConfigMap, carried out by reconcile), is not made again by a
// later run from the old object, which still says the broker holds it: the broker holds
// nothing under its id any more, and a record made again would wait for ever on its
// next call (404). The run leaves it out, says why, and --cleanup deletes the old
// object; a binding not migrated under an instance so deleted waits for a person, its
// reason saying what became of its instance.
func TestRun_ARecordDeletedAfterItsMigration_IsNotMadeAgain(t *testing.T) {
	bound := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	tests := []struct {
		name string
		// dropped: the records deleted after the first run.
		dropped []string
		// secret: the binding's credentials Secret is there at the first run.
		secret bool
		// gone: the outcomes left out as deleted since; waits: skipped for a person.
		gone, waits []string
		// stay: the old objects --cleanup keeps.
		stay []string
	}{
		{name: "instance", dropped: []string{"catalog-instance.db"},
			gone: []string{"ServiceInstance/db"}, waits: []string{"ServiceBinding/creds"}, stay: []string{"ServiceInstance/db", "ServiceBinding/creds"}},
		{name: "binding", secret: true, dropped: []string{"catalog-binding.creds"},
			gone: []string{"ServiceBinding/creds"}},
		{name: "instance and binding", secret: true, dropped: []string{"catalog-binding.creds", "catalog-instance.db"},
			gone: []string{"ServiceInstance/db", "ServiceBinding/creds"}},
	}
	for _, tc := range tests {
		for _, cleanup := range []bool{false, true} {
			name := tc.name
			if cleanup {
				name += ", --cleanup"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t,
					old("ServiceInstance", ns, "db", instanceSpec("hobby", "id-db"), provisioned(broker.DemoPostgresHobbyPlanID)),
					old("ServiceBinding", ns, "creds", map[string]any{"instanceRef": map[string]any{"name": "db"}, "externalID": "bid-1"}, bound),
				)
				ctx := context.Background()
				yes := true
				secret := func() {
					_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds", OwnerReferences: []metav1.OwnerReference{
							{APIVersion: GroupVersion, Kind: "ServiceBinding", Name: "creds", UID: "old-creds", Controller: &yes},
						}}, Data: map[string][]byte{"password": []byte("x")},
					}, metav1.CreateOptions{})
					assert.NilError(t, err)
				}
				if tc.secret {
					secret()
				}
				got := f.run(Options{Namespace: ns})
				assert.Equal(t, got["ServiceInstance/db"].Result, ResultMigrated, got["ServiceInstance/db"].Reason)
				for _, r := range tc.dropped {
					f.dropRecord(r)
				}
				if !tc.secret {
					// The binding's Secret back only now: it would be migrated under an
					// instance made again.
					secret()
				}

				got = f.run(Options{Namespace: ns, Cleanup: cleanup})
				for _, k := range tc.gone {
					o := got[k]
					assert.Equal(t, o.Result, ResultSkipped, "%s: %s", k, o.Reason)
					assert.Check(t, is.Contains(o.Reason, "was deleted since"), k)
					assert.Check(t, !o.NeedsPerson, "%s: %s", k, o.Reason)
				}
				for _, k := range tc.waits {
					o := got[k]
					assert.Equal(t, o.Result, ResultSkipped, "%s: %s", k, o.Reason)
					assert.Check(t, is.Contains(o.Reason, `its instance "db" was migrated, and its record deleted since`), k)
					assert.Check(t, o.NeedsPerson, "%s: %s", k, o.Reason)
				}
				_, err := f.st.Instances().Get(ctx, ns, "db")
				if slices.Contains(tc.gone, "ServiceInstance/db") {
					assert.Check(t, store.IsNotFound(err), "the instance's record is not made again: %v", err)
				}
				_, err = f.st.Bindings().Get(ctx, ns, "creds")
				if slices.Contains(tc.gone, "ServiceBinding/creds") || slices.Contains(tc.waits, "ServiceBinding/creds") {
					assert.Check(t, store.IsNotFound(err), "the binding's record is not made again: %v", err)
				}
				for _, k := range append(append([]string{}, tc.gone...), tc.waits...) {
					res := map[string]schema.GroupVersionResource{"ServiceInstance": ServiceInstances, "ServiceBinding": ServiceBindings}[got[k].Kind]
					_, err := f.dyn.Resource(res).Namespace(ns).Get(ctx, got[k].Name, metav1.GetOptions{})
					if cleanup && !slices.Contains(tc.stay, k) {
						assert.Check(t, apierrors.IsNotFound(err), "%s: --cleanup deletes the old object: %v", k, err)
					} else {
						assert.Check(t, err, "%s: the old object stays", k)
					}
				}
				// And again: the same.
				got = f.run(Options{Namespace: ns})
				_, err = f.st.Instances().Get(ctx, ns, "db")
				if slices.Contains(tc.gone, "ServiceInstance/db") {
					assert.Check(t, store.IsNotFound(err), "not made again by a third run: %v", err)
				}
			})
		}
	}
}
