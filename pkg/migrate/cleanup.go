package migrate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cleanup deletes the old objects that were migrated, or hold nothing at the broker:
// bindings first, then instances none of whose bindings stays behind, then brokers none
// of whose instances stays behind (a binding left behind is migrated by a later run,
// which resolves its instance through the old object). Their finalizers are removed
// first, since no controller is left to remove them.
func (m *Migrator) cleanup(ctx context.Context, o Options, out []Outcome) []Outcome {
	stay := map[string]bool{} // brokers an old instance left behind still uses
	kept := map[string]bool{} // old instances ("namespace/name") a binding left behind names
	for _, oc := range out {
		if oc.Kind == "ServiceInstance" && !oc.clean {
			stay["any"] = true
		}
		if oc.Kind == "ServiceBinding" && !oc.clean {
			kept[oc.Namespace+"/"+oc.instance] = true
		}
	}
	for _, kind := range []string{"ServiceBinding", "ServiceInstance", "ServiceBroker", "ClusterServiceBroker"} {
		for i := range out {
			oc := &out[i]
			if oc.Kind != kind || !oc.clean {
				continue
			}
			if (kind == "ServiceBroker" || kind == "ClusterServiceBroker") && stay["any"] {
				oc.Reason = join(oc.Reason, "old object kept: an instance that was not migrated may still use it")
				continue
			}
			if kind == "ServiceInstance" && kept[oc.Namespace+"/"+oc.Name] {
				oc.Reason = join(oc.Reason, "old object kept: a binding of it that was not migrated still names it")
				continue
			}
			if o.DryRun {
				oc.Reason = join(oc.Reason, "old object "+ResultWouldDelete)
				continue
			}
			if err := m.deleteOld(ctx, oc); err != nil {
				oc.Reason = join(oc.Reason, fmt.Sprintf("old object not deleted: %v", err))
				oc.NeedsPerson = true
				continue
			}
			oc.Reason = join(oc.Reason, "old object "+ResultDeleted)
			m.wrote()
		}
	}
	return out
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (m *Migrator) deleteOld(ctx context.Context, oc *Outcome) error {
	ri := m.cfg.Dynamic.Resource(oc.gvr).Namespace(oc.Namespace)
	patch := []byte(fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, oc.uid))
	if _, err := ri.Patch(ctx, oc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	err := ri.Delete(ctx, oc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &oc.uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
