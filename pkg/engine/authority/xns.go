package authority

import (
	"context"
	"fmt"
	"slices"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
)

// The cross-namespace rule (docs/security.md): a record of namespace B affects an
// object of namespace A only through a grant that A's owner wrote and that is in force
// now. A binding of B counts as a consumer of A's instance (a deletion waits for it,
// it holds a place under the limit, it is revoked, it may call the broker about the
// instance) only while the instance grants B, or granted it before and the broker may
// hold the binding. Every path that decides which bindings count for an instance asks
// Counts (or CountsUnreadable, for a ConfigMap this release cannot read); every other
// binding naming the instance is neither waited for nor let near it, and what the
// engine writes about it is the same whether the instance exists or whom it grants
// (NotReached).

// GrantedBefore reports whether inst, on its owner's authority, lets or let namespace ns
// bind to it: its grant names ns now (spec.sharedWith), its status remembers an earlier
// grant (status.sharedBefore), or a binding of ns holds a place among its consumers
// (status.consumers, taken only after a grant was checked). All three are in inst's own
// record, which only the writers of inst's namespace can change.
func GrantedBefore(inst *v1alpha1.ServiceInstance, ns string) bool {
	if ns == inst.Namespace || slices.Contains(inst.Spec.SharedWith, ns) || slices.Contains(inst.Status.SharedBefore, ns) {
		return true
	}
	return slices.ContainsFunc(inst.Status.Consumers, func(c v1alpha1.ConsumerReservation) bool { return c.Namespace == ns })
}

// Counts reports whether binding b counts as a consumer of inst: b names inst, and is of
// inst's own namespace, or of a namespace inst lets bind now (Lets), or of one it
// granted before (GrantedBefore) while the broker may hold something of b
// (BindingHeldAtBroker). A binding of a namespace inst never granted never counts,
// whatever its status says: anyone who may write a ConfigMap in that namespace writes it.
func Counts(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	if ns, name := b.InstanceRef(); ns != inst.Namespace || name != inst.Name {
		return false
	}
	if b.Namespace == inst.Namespace || Lets(inst, b.Namespace) {
		return true
	}
	return GrantedBefore(inst, b.Namespace) && BindingHeldAtBroker(b)
}

// Revocable reports whether withdrawing inst's grant reaches binding b: b names inst and
// is of a namespace inst granted (GrantedBefore), whether or not the broker holds
// anything of it yet. A binding of a namespace inst never granted is none of inst's
// business: it is refused at its own step (NotReached), never deleted from afar.
func Revocable(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	ns, name := b.InstanceRef()
	return ns == inst.Namespace && name == inst.Name && b.Namespace != inst.Namespace && GrantedBefore(inst, b.Namespace)
}

// Counted splits bs, bindings listed as bindings of inst, into those that count as its
// consumers (Counts) and the others.
func Counted(inst *v1alpha1.ServiceInstance, bs []*v1alpha1.ServiceBinding) (counted, ignored []*v1alpha1.ServiceBinding) {
	for _, b := range bs {
		if Counts(inst, b) {
			counted = append(counted, b)
		} else {
			ignored = append(ignored, b)
		}
	}
	return counted, ignored
}

// CountsUnreadable reports whether a ConfigMap of namespace ns, labelled as a binding of
// inst, that holds no record this release can read (a newer release's format, or an
// unreadable spec) counts as a consumer of inst: when it carries the engine's finalizer
// (finalized), a release that reads it may hold a binding at the broker, so it counts in
// inst's own namespace and in one inst grants or granted (GrantedBefore). One without
// the finalizer, or of a namespace inst never granted, is a binding of nothing.
func CountsUnreadable(inst *v1alpha1.ServiceInstance, ns string, finalized bool) bool {
	return finalized && GrantedBefore(inst, ns)
}

// NotReached is the refusal of binding b, of another namespace than the instance it
// names, when that instance does not exist or does not let b's namespace reach it
// (Counts): one message for both, naming only what b's own spec names, so that a
// binding written to probe another namespace learns nothing of its instances, their
// grants or their allowed namespaces.
func NotReached(b *v1alpha1.ServiceBinding) error {
	ns, name := b.InstanceRef()
	return Refused(ReasonRefusedNotShared, "binding %q names instance %q of namespace %q, which does not exist or is not shared with namespace %q: "+
		"its owner shares it with \"kubectl catalog share %s --to-namespace %s -n %s\"; if the binding was never bound, delete it with %s",
		b.Name, name, ns, b.Namespace, name, b.Namespace, ns, hint.Quoted(b.Namespace, "unbind", b.Name))
}

// UnownedIDs are the ids of ids (those the broker may hold of rec, as its status lists
// them) that rec does not own (CheckOwnIDIn: bound to it or to its namespace's key, or
// named by its spec): the engine never sends them for rec, so they must never keep rec's
// deletion, or the ids it does own, waiting. Its step forgets them with a visible
// reason. An id its spec names is not among them (the call refuses it if rec does not
// own it, RefusedIDNotOwned), so a record's own id costs no read; an id whose owner
// cannot be told (the namespace's key unreadable) is kept.
func (auth *Authority) UnownedIDs(ctx context.Context, rec IDOwner, ids []string) []string {
	var out []string
	var key *v1alpha1.NamespaceKey
	named := specNamedID(rec)
	for _, id := range ids {
		if id == "" || id == named || rec.OwnsExternalID(id) || slices.Contains(out, id) {
			continue
		}
		if v1alpha1.IsBoundID(id) {
			if key == nil {
				k, err := auth.NamespaceKey(ctx, rec.GetNamespace())
				if err != nil {
					continue
				}
				key = &k
			}
			if v1alpha1.IDBoundToNamespace(id, *key) {
				continue
			}
		}
		out = append(out, id)
	}
	return out
}

// ForgottenIDsMessage is the reason given (an Event and a condition of rec) for the ids
// of ids a step forgets because rec does not own them.
func ForgottenIDsMessage(kind string, rec IDOwner, ids []string) string {
	return fmt.Sprintf("%s %q in namespace %q lists OSB id(s) %v in its status that it does not own (not bound to it, not named by its spec): the engine never sends them for it, so they are forgotten and keep nothing waiting",
		kindWord(kind), rec.GetName(), rec.GetNamespace(), ids)
}

// specNamedID is the OSB id rec's spec names, if any.
func specNamedID(rec IDOwner) string {
	switch r := rec.(type) {
	case *v1alpha1.ServiceInstance:
		return r.Spec.ExternalID
	case *v1alpha1.ServiceBinding:
		return r.Spec.ExternalID
	}
	return ""
}
