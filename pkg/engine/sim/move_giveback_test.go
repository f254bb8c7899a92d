package sim

import (
	"slices"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// noteGivenBack notes, as the give-back (giveBack) drops instance x of the new cluster
// with --abandon, the binding ids of its bindings there that no record of the old
// cluster names (named): a binding the old cluster released to the new one before a
// release of the instance that cannot be finished (a binding of it made on the old
// cluster since the export, which the new cluster does not confirm), rotated on the new
// cluster under an id of its own. The abandon drops the binding's record with the
// instance's, and what it held stays at the broker, as --abandon means: those ids are
// the abandon world's (abandonedID), left out of invariants (1), (3) and (10).
func (w *world) noteGivenBack(x *v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding, named func(string) bool) {
	for _, b := range binds {
		if ns, name := b.InstanceRef(); ns != x.Namespace || name != x.Name || b.Namespace != x.Namespace {
			continue
		}
		for _, id := range slices.Concat(bindingIDs(b), []string{b.Spec.ExternalID}) {
			if id != "" && !named(id) {
				w.abandoned[id] = true
			}
		}
	}
}
