package engine

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// CheckConsumer is the check of a bind of b to inst (authority.Authority.CheckConsumer)
// for the verbs, before they record b: b is the user's own (this process records it as
// their intent), not a record of unknown authorship.
func (e *Engine) CheckConsumer(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance) error {
	return e.auth.CheckConsumer(asDraft(ctx, b), b, inst)
}

// CheckBindingLimit refuses a bind to inst while every place under its maxBindings is
// taken by the bindings this user can list (PlacesTaken), naming them; the bind's own
// step takes the place itself, atomically, before the broker call
// (authority.Authority.CheckBindingLimit).
func (e *Engine) CheckBindingLimit(ctx context.Context, inst *v1alpha1.ServiceInstance) error {
	return e.auth.CheckBindingLimit(ctx, inst)
}

// PlacesTaken are the places under inst's maxBindings that count now, given listed, the
// bindings of inst that could be listed, and unseen, the namespaces whose bindings could
// not be (authority.PlacesTaken).
func PlacesTaken(inst *v1alpha1.ServiceInstance, listed []*v1alpha1.ServiceBinding, unseen []string) []v1alpha1.ConsumerReservation {
	return authority.PlacesTaken(inst, listed, unseen)
}

// Uncounted are the namespaces of unseen whose bindings count against inst's limit.
func Uncounted(inst *v1alpha1.ServiceInstance, unseen []string) []string {
	return authority.Uncounted(inst, unseen)
}

// Consumers lists the bindings of inst in other namespaces that the reader may list and
// that count as its consumers (authority.Counts, the cross-namespace rule): from every
// namespace when allowed, else from each namespace the instance is shared with and in
// extra. unseen names the namespaces that could not be read. A binding of a namespace
// inst never granted is left out, whatever its status says. A ConfigMap labelled as a
// binding of inst that holds no readable record is a binding of nothing: in a namespace
// inst grants or granted it is reported with a Warning Event there, and left out.
func (e *Engine) Consumers(ctx context.Context, inst *v1alpha1.ServiceInstance, extra ...string) (bs []*v1alpha1.ServiceBinding, unseen []string, err error) {
	bs, unseen, bad, err := listConsumers(ctx, e.cfg.Store, inst, extra...)
	e.reportUnreadable(ctx, inst, bad)
	bs, _ = authority.Counted(inst, bs)
	return bs, unseen, err
}

// reportUnreadable reports each ConfigMap of bad, labelled as a binding of inst, with a
// Warning Event in its own namespace, where inst grants or granted that namespace
// (authority.GrantedBefore): an Event in a namespace inst never granted would tell its
// writers that inst exists, so those are left to reconcile's own report of the
// namespace's unreadable records.
func (e *Engine) reportUnreadable(ctx context.Context, inst *v1alpha1.ServiceInstance, bad []*store.Error) {
	for _, se := range bad {
		if !authority.GrantedBefore(inst, se.Namespace) {
			continue
		}
		what := "it counts as a binding of nothing; fix or delete it"
		if se.Finalized {
			what = "it carries the catalog's finalizer, so a release that reads it may hold a binding at the broker: the instance's deletion waits for it; unbind it with the release that wrote it, or, if it is junk, remove its finalizer"
		}
		e.event(ctx, NewEvent(se.Namespace, se.ConfigMap(), EventWarning, ReasonUnreadableRecord, "Read",
			fmt.Sprintf("this ConfigMap is labelled as a binding of instance %s/%s but holds no readable record (%v): %s", inst.Namespace, inst.Name, se, what)))
	}
}

// ReasonUnreadableRecord is the reason of the Warning Event about a ConfigMap labelled as
// a record that holds no readable record.
const ReasonUnreadableRecord = "UnreadableRecord"

// RevokeConsumers marks for deletion the bindings in other namespaces that inst no longer
// lets bind to it (after "unshare", or a narrower allowed-namespaces list): each is then
// unbound like any binding being deleted (its Secret and projections removed, then the
// broker asked). Only bindings of namespaces inst granted are touched
// (authority.Revocable): one of a namespace inst never granted is no business of inst's. It looks in every namespace it may, else in those the instance is
// shared with and in extra. It returns the bindings marked, and the namespaces it could
// not read or change.
//
// Every caller names in extra namespaces inst granted (the one an unshare withdrew, or
// status.sharedBefore), so they count as granted before (authority.GrantedBefore) even
// where inst's status does not remember them yet.
func (e *Engine) RevokeConsumers(ctx context.Context, inst *v1alpha1.ServiceInstance, extra ...string) (revoked []string, unseen []string, err error) {
	bs, unseen, bad, err := listConsumers(ctx, e.cfg.Store, inst, extra...)
	rule := inst.DeepCopy()
	for _, ns := range extra {
		if !slices.Contains(rule.Status.SharedBefore, ns) {
			rule.Status.SharedBefore = append(rule.Status.SharedBefore, ns)
		}
	}
	e.reportUnreadable(ctx, rule, bad)
	if err != nil {
		return nil, unseen, err
	}
	for _, b := range bs {
		if b.DeletionTimestamp != nil || granted(inst, b) || !authority.Revocable(rule, b) {
			continue
		}
		if err := e.cfg.Store.Bindings().Delete(ctx, b.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
			if store.IsForbidden(err) {
				unseen = append(unseen, b.Namespace)
				continue
			}
			return revoked, unseen, err
		}
		revoked = append(revoked, b.Namespace+"/"+b.Name)
	}
	return revoked, unseen, nil
}

// ReasonRevoked is the reason of the Event a binding gets when its own step marks it for
// deletion because its instance no longer lets its namespace bind.
const ReasonRevoked = "Revoked"

// refusedConsumer is a binding step's answer when CheckConsumer refused b for inst
// (cause). A binding the broker may hold something of, whose namespace inst's spec no
// longer lets bind (an unshare, or a narrower allowed-namespaces list), is revoked here:
// marked for deletion, as RevokeConsumers marks it when it sees it, so that its Secret and
// projections go and the broker unbinds it. The step must do it because RevokeConsumers
// may not have: the unshare's user may not see the binding's namespace, the binding may
// have been created after that unshare looked (a bind that raced it), and the instance's
// settling record revokes only once. A binding the broker holds nothing of, or one whose
// grant is there but does not count (its author is not verified), waits refused for the
// owner instead: nothing of it is at the broker, and the owner may share again.
func (e *Engine) refusedConsumer(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance, cause error) (Result, error) {
	if ctx.Err() == nil && b.DeletionTimestamp == nil && inst != nil && !granted(inst, b) && bindingHeldAtBroker(b) {
		err := e.cfg.Store.Bindings().Delete(ctx, b.Namespace, b.Name)
		if err == nil || store.IsNotFound(err) {
			e.event(ctx, NewEvent(b.Namespace, store.ConfigMapName(v1alpha1.KindServiceBinding, b.Name), EventNormal, ReasonRevoked, "Unbind",
				fmt.Sprintf("instance %s/%s no longer lets namespace %q bind to it: the binding is deleted, and the broker unbinds it", inst.Namespace, inst.Name, b.Namespace)))
			// The next step is the deletion's: it starts from the record as the deletion
			// left it, not from this step's copy, which would be refused again at once.
			b = revokedCopy(ctx, e, b)
			return Result{Binding: b, State: StateWaiting, Message: "revoked: " + cause.Error()}, nil
		}
		if !store.IsForbidden(err) {
			return Result{Binding: b, State: StateWaiting}, err
		}
		// A driver who may not delete it leaves it refused, for reconcile.
	}
	return preCallFailure(e, ctx, b, ReasonRefusedNotShared, cause)
}

// revokedCopy is binding b as its deletion mark left it: read again, or (unreadable, or
// gone) b marked for deletion now, so that whoever steps it next unbinds it.
func revokedCopy(ctx context.Context, e *Engine, b *v1alpha1.ServiceBinding) *v1alpha1.ServiceBinding {
	if fresh, err := e.cfg.Store.Bindings().Get(ctx, b.Namespace, b.Name); err == nil && fresh.UID == b.UID {
		return fresh
	}
	marked := b.DeepCopy()
	now := metav1.NewTime(e.now())
	marked.DeletionTimestamp = &now
	return marked
}
