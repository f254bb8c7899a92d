package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A rebind of an instance under way on the cluster its services were moved from never
// rotates a binding marked released: the other cluster owns its id, so no new id is
// recorded on it here and its old one is never named for an unbind (the other cluster
// may rotate it on its own, and its unbind of the old id is its own). The rebind counts
// it gone and goes on with the others. Whether the binding was released before the
// rebind picked it or once it was the rebind's current one, the broker sees nothing for
// it from here.
func TestRebind_ReleasedBinding_IsNeverRotated(t *testing.T) {
	for _, current := range []bool{false, true} {
		t.Run(map[bool]string{false: "released before the rebind picked it", true: "released as the rebind's current one"}[current], func(t *testing.T) {
			f, events := rebindFixture(t)
			ctx := context.Background()
			a, err := f.st.Bindings().UpdateWithRetry(ctx, ns, "a", func(b *v1alpha1.ServiceBinding) error {
				if b.Annotations == nil {
					b.Annotations = map[string]string{}
				}
				b.Annotations[AnnotationReleasedTo] = "new"
				return nil
			})
			assert.NilError(t, err)
			if current {
				f.editInstance(func(inst *v1alpha1.ServiceInstance) {
					inst.Status.Rebind = &v1alpha1.RebindStatus{Generation: inst.Generation, Reason: "update --rebind",
						Current: &v1alpha1.RebindTarget{Namespace: ns, Name: "a", UID: string(a.UID), FromID: "osb-a"}}
				})
				for range 10 {
					if f.get("db").Status.Rebind == nil {
						break
					}
					f.step("db")
				}
			} else {
				_, err = f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "db", Rebind: true, Follow: Follow{Wait: true}})
				assert.NilError(t, err)
				for range 10 {
					if f.get("db").Status.Rebind == nil {
						break
					}
					f.step("db")
				}
			}
			assert.Assert(t, f.get("db").Status.Rebind == nil, "the rebind ended")
			for _, ev := range events.evs {
				assert.Assert(t, ev.Name != store.ConfigMapName(v1alpha1.KindServiceBinding, "a") || ev.Reason != "RotationRequested", "a rotation of the released binding was started: %+v", ev)
			}
			if a, err := f.st.Bindings().Get(ctx, ns, "a"); err == nil {
				assert.Assert(t, a.Status.Predecessor == nil, "no rotation started on the released binding: %+v", a.Status.Predecessor)
				assert.Equal(t, a.CurrentExternalID(), "osb-a")
				assert.Assert(t, is.Len(a.Status.Retired, 0))
			}
			assert.DeepEqual(t, brokerLog(f), []string{"bind predecessor=", "unbind osb-b"})
		})
	}
}
