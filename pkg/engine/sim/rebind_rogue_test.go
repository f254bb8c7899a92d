package sim

import (
	"slices"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// rebindWaitsOnALie reports an instance whose broker answered off the OSB spec for one
// of its ids (a provision answered 201 and not carried out, say), settled on that
// answer, whose rebind waits on a binding of it that fails on the broker's answers: the
// rotation's bind is answered 404 for ever (the broker holds no such instance), so the
// binding's own rotation never ends, and the rebind, which rotates a binding again only
// once its own rotation ended, waits with it. Nobody can know the broker lied; the
// binding fails visibly, its condition naming the broker's answer (checkFinal lets such
// a record stay unsettled), as lostByRogue says of the instance's own calls.
func (w *world) rebindWaitsOnALie(x *v1alpha1.ServiceInstance) bool {
	if !slices.ContainsFunc(instanceIDs(x), func(id string) bool { t := w.book.ids[id]; return t != nil && t.rogue }) {
		return false
	}
	_, binds := w.records()
	for _, b := range binds {
		ns, name := b.InstanceRef()
		if ns != x.Namespace || name != x.Name || b.DeletionTimestamp != nil {
			continue
		}
		if msg, ready := readyMessage(&b.Status.OperationStatus); !ready && strings.Contains(msg, "the broker answered") {
			return true
		}
	}
	return false
}

// rebindWaitsOnALieAt is rebindWaitsOnALie of the instance whose ConfigMap is ns/name:
// its rebind is still under way, so its RebindRequested Event stays the last word about
// it (checkEvents), as the rebind stays (checkRebindsQuiet).
func (w *world) rebindWaitsOnALieAt(ns, name string) bool {
	insts, _ := w.records()
	for _, x := range insts {
		if x.Namespace == ns && store.ConfigMapName(v1alpha1.KindServiceInstance, x.Name) == name {
			return x.Status.Rebind != nil && w.rebindWaitsOnALie(x)
		}
	}
	return false
}
