package sim

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// maintainerVoucher is how the maintainer's upgrade at quiescence answers when it would
// make him the author of a record another person wrote (-sim.trust: the record names a
// Secret, another namespace or a workload). For an instance whose spec asks for a
// maintenance version its plan no longer offers (v), which waits for a person (its
// condition says so), he is that person: he vouches for a record its verified author,
// one of the cluster's own users, wrote (maintainerVouches). The upgrade of every other
// instance at the maintenance window's end asks no one and is refused for such a
// record, as before.
func maintainerVoucher(v string) engine.Voucher {
	if v == "" {
		return engine.Voucher{}
	}
	return engine.Voucher{Confirm: maintainerVouches}
}

// maintainerVouches is yes for a record its verified author, one of the cluster's own
// users, wrote, no for one mallory wrote or whose author no one can verify.
func maintainerVouches(v engine.Vouch) error {
	if v.Verified && v.Was != "" && v.Was != "mallory" {
		return nil
	}
	return engine.ErrNotConfirmed
}

// copyWaitsForAPlace reports a binding of a user-provided instance that holds an older
// copy of its credentials and is refused the new one for its instance's limit, where the
// engine's rule refuses it (docs/security.md, "Copies above a limit"): its copy is of
// another Secret (it was pointed at this instance from another), or it was created less
// than store.MaxClockSkew before a place another binding reserved under the limit, so it
// takes a place like a first copy, and none is free. It keeps its older copy and waits
// for a place or for the owner to raise the limit, as its condition says. A binding made
// before every place, with a copy of this instance's Secret, stays above the limit and
// gets its copy: one refused is not waiting for a person.
func (w *world) copyWaitsForAPlace(b *v1alpha1.ServiceBinding) bool {
	bd := b.Status.Bound
	if bd == nil || !bd.UserProvided || b.DeletionTimestamp != nil {
		return false
	}
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != engine.ReasonRefusedLimitReached {
		return false
	}
	ns, name := b.InstanceRef()
	x, err := w.checker.Instances().Get(context.Background(), ns, name)
	if err != nil || x.Spec.UserProvided == nil || x.Spec.MaxBindings == nil {
		return false
	}
	src, err := w.checker.GetSecret(context.Background(), ns, x.Spec.UserProvided.CredentialsSecret)
	if err != nil {
		return false
	}
	if bd.BindingID != b.CurrentExternalID() || !strings.HasPrefix(bd.SourceVersion, string(src.UID)+"/") {
		return true
	}
	for _, p := range x.Status.Consumers {
		if p.UID != string(b.UID) && !b.CreationTimestamp.Add(store.MaxClockSkew).Before(p.ReservedAt.Time) {
			return true
		}
	}
	return false
}

// copiesWaitForAPlace reports a user-provided instance whose new credentials are copied
// to every binding of it but those that wait for a place (copyWaitsForAPlace): its
// status says which, and it waits with them.
func (w *world) copiesWaitForAPlace(x *v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding) bool {
	if x.Spec.UserProvided == nil || x.DeletionTimestamp != nil {
		return false
	}
	msg, _ := readyMessage(&x.Status.OperationStatus)
	if !strings.Contains(msg, "are not yet copied to") {
		return false
	}
	waiting := false
	for _, b := range binds {
		if ns, name := b.InstanceRef(); ns != x.Namespace || name != x.Name || !strings.Contains(msg, b.Namespace+"/"+b.Name+" (") {
			continue
		}
		if !w.copyWaitsForAPlace(b) {
			return false
		}
		waiting = true
	}
	return waiting
}

// forgedInto records that team-b's user wrote OSB id into binding x's status by hand:
// the record never held it (it is another record's, or junk), so the engine dropping it
// (UnownedIDsForgotten) forgets nothing the broker holds for the record
// (checkForgotten).
func (w *world) forgedInto(x *v1alpha1.ServiceBinding, id string) {
	w.forgedIDs[x.Namespace+"/"+store.ConfigMapName(v1alpha1.KindServiceBinding, x.Name)+" "+id] = true
}
