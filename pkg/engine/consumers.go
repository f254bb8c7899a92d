package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Refusal reasons of an instance's consumers (sharing and limits).
const (
	// ReasonRefusedNotShared: the binding names an instance of another namespace that is
	// not shared with the binding's namespace (or whose grant does not count: its spec's
	// author is not verified, or may not write the instance's record).
	ReasonRefusedNotShared = "RefusedNotShared"
	// ReasonRefusedNamespaceNotAllowed: the instance's allowed namespaces do not include
	// the binding's namespace.
	ReasonRefusedNamespaceNotAllowed = "RefusedNamespaceNotAllowed"
	// ReasonRefusedLimitReached: the instance has as many bindings as its maxBindings.
	ReasonRefusedLimitReached = "RefusedLimitReached"
)

// checkConsumer refuses a bind of b to inst that inst's owner did not allow: a namespace
// outside the instance's allowed namespaces, or, for an instance of another namespace,
// one the instance is not shared with. A grant counts only on the authority of the
// instance spec's author (verified, and allowed to write the instance's record: what
// "share" needs), so a record written by someone else, or a grant forged by hand without
// the trust policy, shares nothing. Any other reference out of the binding's namespace
// stays refused: a binding may name an instance of another namespace, nothing else.
func (e *Engine) checkConsumer(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance) error {
	if allowed := inst.Spec.AllowedNamespaces; len(allowed) > 0 && !slices.Contains(allowed, b.Namespace) {
		return refused(ReasonRefusedNamespaceNotAllowed, "instance %q in namespace %q allows bindings only from namespaces %s, not from %q: its owner adds it with \"kubectl catalog update %s --allowed-namespaces ... -n %s\"",
			inst.Name, inst.Namespace, strings.Join(allowed, ", "), b.Namespace, inst.Name, inst.Namespace)
	}
	if !b.CrossNamespace() {
		return nil
	}
	if !slices.Contains(inst.Spec.SharedWith, b.Namespace) {
		return refused(ReasonRefusedNotShared, "binding %q names instance %q of namespace %q, which is not shared with namespace %q: its owner runs \"kubectl catalog share %s --to-namespace %s -n %s\"",
			b.Name, inst.Name, inst.Namespace, b.Namespace, inst.Name, b.Namespace, inst.Namespace)
	}
	// The grant is the instance author's: they must be able to write the record.
	if err := e.authorize(ctx, inst, authorizationv1.ResourceAttributes{Namespace: inst.Namespace, Verb: "update", Resource: "configmaps",
		Name: store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name)}); err != nil {
		r, ok := AsRefused(err)
		if !ok {
			return err
		}
		return &RefusedError{Reason: ReasonRefusedNotShared, Transient: r.Transient,
			Message: fmt.Sprintf("the grant of instance %q in namespace %q to namespace %q does not count: %s", inst.Name, inst.Namespace, b.Namespace, r.Message)}
	}
	// The binding is its author's: they must be able to write records in its namespace.
	if err := e.authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "create", Resource: "configmaps"}); err != nil {
		return err
	}
	return nil
}

// CheckConsumer is checkConsumer for the verbs, before they record b: b is the user's own
// (this process records it as their intent), not a record of unknown authorship.
func (e *Engine) CheckConsumer(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance) error {
	return e.checkConsumer(asDraft(ctx, b), b, inst)
}

// reserved reports whether inst holds a place for b.
func reserved(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	return slices.ContainsFunc(inst.Status.Consumers, func(c v1alpha1.ConsumerReservation) bool { return c.UID == string(b.UID) })
}

// reserve takes a place for b among the bindings of an instance with maxBindings,
// before b's first bind call: a write of the instance's status guarded by its
// resourceVersion, retried on conflicts, so that concurrent binds never take more places
// than the limit. Every binding of the instance that exists counts (placesTaken): those
// bound before the limit was set take their places in the same write. A place whose
// binding record is gone is given back first. A user who may not write the instance's
// record, or may not list the bindings of a namespace that counts, leaves the bind to
// reconcile. read is the instance as this step read it: an instance without a limit is
// not read again.
func (e *Engine) reserve(ctx context.Context, b *v1alpha1.ServiceBinding, read *v1alpha1.ServiceInstance) error {
	if read != nil && read.Spec.MaxBindings == nil {
		return nil
	}
	ns, name := b.InstanceRef()
	var listed []*v1alpha1.ServiceBinding
	var unseen []string
	for attempt := 0; ; attempt++ {
		inst, err := e.cfg.Store.Instances().Get(ctx, ns, name)
		if err != nil {
			return err
		}
		if inst.Spec.MaxBindings == nil || reserved(inst, b) {
			return nil
		}
		if attempt == 0 {
			// Listed once: a binding bound since holds a place the re-read shows.
			if listed, unseen, err = listBindingsOf(ctx, e.cfg.Store, inst); err != nil {
				return err
			}
		}
		x := inst.DeepCopy()
		limit := *x.Spec.MaxBindings
		places := placesTaken(x, listed, unseen, b, false)
		// A rotation's bind is that of a binding that exists, made before the limit:
		// it keeps the place it holds, even above a lowered limit.
		rotation := b.Status.Bound != nil && b.RotatedFrom() != nil
		if int32(len(places)) >= limit && !rotation {
			places = e.liveConsumers(ctx, places)
		}
		if int32(len(places)) >= limit && !rotation {
			return limitReached(x, places)
		}
		if blind := Uncounted(x, unseen); len(blind) > 0 && !rotation {
			return &LeftToReconcileError{What: fmt.Sprintf("you may not list the bindings of namespace(s) %s, which count against the limit of %d bindings of instance %q in namespace %q, so reconcile, which sees every namespace, takes the binding's place and sends the request (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)", strings.Join(blind, ", "), limit, name, ns)}
		}
		x.Status.Consumers = append(places, v1alpha1.ConsumerReservation{
			Namespace: b.Namespace, Name: b.Name, UID: string(b.UID), ReservedAt: metav1.NewTime(e.now()),
		})
		_, err = e.cfg.Store.Instances().Update(ctx, x)
		switch {
		case err == nil:
			return nil
		case store.IsConflict(err) && attempt < 100:
			continue
		case store.IsForbidden(err):
			return &LeftToReconcileError{What: fmt.Sprintf("you may not write instance %q in namespace %q, where the place of the binding under the instance's limit of %d bindings is kept, so reconcile sends the request (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)", name, ns, limit), Err: err}
		default:
			return err
		}
	}
}

// limitReached is the refusal of a bind to inst, whose places are all taken by places:
// it names the bindings that hold them.
func limitReached(inst *v1alpha1.ServiceInstance, places []v1alpha1.ConsumerReservation) error {
	limit := *inst.Spec.MaxBindings
	held := fmt.Sprintf("its limit of %d bindings (%s)", limit, consumerNames(places))
	if n := int32(len(places)); n > limit {
		held = fmt.Sprintf("its limit of %d bindings: %d bindings hold places (%s), more than the limit, which was lowered after they were made; they stay, and new binds are refused until fewer than %d remain", limit, n, consumerNames(places), limit)
	}
	return refused(ReasonRefusedLimitReached, "instance %q in namespace %q has reached %s: unbind one of them, or its owner raises the limit with \"kubectl catalog update %s --max-bindings N -n %s\"",
		inst.Name, inst.Namespace, held, inst.Name, inst.Namespace)
}

// CheckBindingLimit refuses a bind to inst while every place under its maxBindings is
// taken by the bindings this user can list (PlacesTaken), naming them; the bind's own
// step takes the place itself, atomically, before the broker call (reserve).
func (e *Engine) CheckBindingLimit(ctx context.Context, inst *v1alpha1.ServiceInstance) error {
	if inst.Spec.MaxBindings == nil {
		return nil
	}
	listed, unseen, err := listBindingsOf(ctx, e.cfg.Store, inst)
	if err != nil {
		return err
	}
	if places := PlacesTaken(inst, listed, unseen); int32(len(places)) >= *inst.Spec.MaxBindings {
		return limitReached(inst, places)
	}
	return nil
}

// listBindingsOf lists the bindings of inst in its own namespace and in the others (see
// listConsumers), and the namespaces whose bindings this user may not list.
func listBindingsOf(ctx context.Context, st *store.Store, inst *v1alpha1.ServiceInstance) (bs []*v1alpha1.ServiceBinding, unseen []string, err error) {
	others := ahead.Start(ctx, func() (consumersListed, error) {
		bs, unseen, _, err := listConsumers(ctx, st, inst)
		return consumersListed{bs, unseen}, err
	})
	var bad []*store.Error
	own, err := readableBindings(ctx, st, inst.Namespace, store.Filter{Instance: inst.Name}, &bad)
	switch {
	case store.IsForbidden(err):
		unseen = append(unseen, inst.Namespace)
	case err != nil:
		return nil, nil, err
	}
	o, err := others.Wait()
	if err != nil {
		return nil, nil, err
	}
	return append(own, o.bs...), append(unseen, o.unseen...), nil
}

type consumersListed struct {
	bs     []*v1alpha1.ServiceBinding
	unseen []string
}

// PlacesTaken are the places under inst's maxBindings that count now, given listed, the
// bindings of inst that could be listed (in its own namespace and in the others), and
// unseen, the namespaces whose bindings could not be: the places of status.consumers,
// less those whose binding is gone (its namespace listed, the binding not among listed),
// and every binding listed that the broker may hold and that holds no place (one bound
// before the limit was set, or while there was none). Only the namespaces inst lets bind
// now count: a namespace no longer granted affects the instance no more, and its
// bindings are being removed.
func PlacesTaken(inst *v1alpha1.ServiceInstance, listed []*v1alpha1.ServiceBinding, unseen []string) []v1alpha1.ConsumerReservation {
	return placesTaken(inst, listed, unseen, nil, true)
}

// placesTaken is PlacesTaken, leaving out self (the binding asking for a place) and,
// unless prune, keeping the places whose binding was not listed (a bind that took its
// place after the list; reserve reads them one by one instead, see liveConsumers).
func placesTaken(inst *v1alpha1.ServiceInstance, listed []*v1alpha1.ServiceBinding, unseen []string, self *v1alpha1.ServiceBinding, prune bool) []v1alpha1.ConsumerReservation {
	byUID := map[string]bool{}
	for _, b := range listed {
		byUID[string(b.UID)] = true
	}
	var places []v1alpha1.ConsumerReservation
	held := map[string]bool{}
	for _, c := range inst.Status.Consumers {
		if !lets(inst, c.Namespace) || held[c.UID] || (self != nil && c.UID == string(self.UID)) {
			continue
		}
		if prune && !byUID[c.UID] && !slices.Contains(unseen, c.Namespace) {
			continue
		}
		held[c.UID] = true
		places = append(places, c)
	}
	var adopted []v1alpha1.ConsumerReservation
	for _, b := range listed {
		uid := string(b.UID)
		if held[uid] || (self != nil && uid == string(self.UID)) || !lets(inst, b.Namespace) || !bindingHeldAtBroker(b) {
			continue
		}
		held[uid] = true
		adopted = append(adopted, v1alpha1.ConsumerReservation{Namespace: b.Namespace, Name: b.Name, UID: uid, ReservedAt: b.CreationTimestamp})
	}
	slices.SortFunc(adopted, func(a, b v1alpha1.ConsumerReservation) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return append(places, adopted...)
}

// Uncounted are the namespaces of unseen whose bindings count against inst's limit.
func Uncounted(inst *v1alpha1.ServiceInstance, unseen []string) []string {
	var out []string
	for _, ns := range unseen {
		if lets(inst, ns) && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// lets reports whether inst, as its spec now stands, lets the bindings of namespace ns
// use it: its own, or one it is shared with, within its allowed namespaces.
func lets(inst *v1alpha1.ServiceInstance, ns string) bool {
	if allowed := inst.Spec.AllowedNamespaces; len(allowed) > 0 && !slices.Contains(allowed, ns) {
		return false
	}
	return ns == inst.Namespace || slices.Contains(inst.Spec.SharedWith, ns)
}

// liveConsumers are the places whose binding record still exists (or cannot be read).
func (e *Engine) liveConsumers(ctx context.Context, cs []v1alpha1.ConsumerReservation) []v1alpha1.ConsumerReservation {
	var live []v1alpha1.ConsumerReservation
	for _, c := range cs {
		b, err := e.cfg.Store.Bindings().Get(ctx, c.Namespace, c.Name)
		if store.IsNotFound(err) || (err == nil && string(b.UID) != c.UID) {
			continue
		}
		live = append(live, c)
	}
	return live
}

func consumerNames(cs []v1alpha1.ConsumerReservation) string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Namespace+"/"+c.Name)
	}
	return strings.Join(names, ", ")
}

// releaseConsumer gives back b's place under its instance's limit, once b is gone. It is
// best effort: a place left behind is given back when the limit is next reached.
func (e *Engine) releaseConsumer(ctx context.Context, b *v1alpha1.ServiceBinding) {
	ns, name := b.InstanceRef()
	_, _ = e.cfg.Store.Instances().UpdateWithRetry(ctx, ns, name, func(inst *v1alpha1.ServiceInstance) error {
		inst.Status.Consumers = slices.DeleteFunc(inst.Status.Consumers, func(c v1alpha1.ConsumerReservation) bool { return c.UID == string(b.UID) })
		if len(inst.Status.Consumers) == 0 {
			inst.Status.Consumers = nil
		}
		return nil
	})
}

// Consumers lists the bindings of inst in other namespaces that the reader may list:
// from every namespace when allowed, else from each namespace the instance is shared
// with and in extra. unseen names the namespaces that could not be read. A ConfigMap
// labelled as a binding of inst that holds no readable record is a binding of nothing:
// it is reported with a Warning Event in its own namespace, and left out.
func (e *Engine) Consumers(ctx context.Context, inst *v1alpha1.ServiceInstance, extra ...string) (bs []*v1alpha1.ServiceBinding, unseen []string, err error) {
	bs, unseen, bad, err := listConsumers(ctx, e.cfg.Store, inst, extra...)
	e.reportUnreadable(ctx, inst, bad)
	return bs, unseen, err
}

// reportUnreadable reports each ConfigMap of bad, labelled as a binding of inst, with a
// Warning Event in its own namespace.
func (e *Engine) reportUnreadable(ctx context.Context, inst *v1alpha1.ServiceInstance, bad []*store.Error) {
	for _, se := range bad {
		e.event(ctx, NewEvent(se.Namespace, se.ConfigMap(), EventWarning, ReasonUnreadableRecord, "Read",
			fmt.Sprintf("this ConfigMap is labelled as a binding of instance %s/%s but holds no readable record (%v): it counts as a binding of nothing; fix or delete it", inst.Namespace, inst.Name, se)))
	}
}

// ReasonUnreadableRecord is the reason of the Warning Event about a ConfigMap labelled as
// a record that holds no readable record.
const ReasonUnreadableRecord = "UnreadableRecord"

// readableBindings and listConsumers list bindings leaving out those that cannot be read
// (see records.ReadableBindings and records.ListConsumersUnreadable).
var (
	readableBindings = records.ReadableBindings
	listConsumers    = records.ListConsumersUnreadable
)

// granted reports whether inst (as its spec now stands) lets b's namespace bind to it.
func granted(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	if allowed := inst.Spec.AllowedNamespaces; len(allowed) > 0 && !slices.Contains(allowed, b.Namespace) {
		return false
	}
	return !b.CrossNamespace() || slices.Contains(inst.Spec.SharedWith, b.Namespace)
}

// RevokeConsumers marks for deletion the bindings in other namespaces that inst no longer
// lets bind to it (after "unshare", or a narrower allowed-namespaces list): each is then
// unbound like any binding being deleted (its Secret and projections removed, then the
// broker asked). It looks in every namespace it may, else in those the instance is
// shared with and in extra. It returns the bindings marked, and the namespaces it could
// not read or change.
func (e *Engine) RevokeConsumers(ctx context.Context, inst *v1alpha1.ServiceInstance, extra ...string) (revoked []string, unseen []string, err error) {
	bs, unseen, err := e.Consumers(ctx, inst, extra...)
	if err != nil {
		return nil, unseen, err
	}
	for _, b := range bs {
		if b.DeletionTimestamp != nil || granted(inst, b) {
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

// refusedConsumer is a binding step's answer when checkConsumer refused b for inst
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
			return Result{Binding: b, State: StateWaiting, Message: "revoked: " + cause.Error()}, nil
		}
		if !store.IsForbidden(err) {
			return Result{Binding: b, State: StateWaiting}, err
		}
		// A driver who may not delete it leaves it refused, for reconcile.
	}
	return preCallFailure(e, ctx, b, ReasonRefusedNotShared, cause)
}

// bindingHeldAtBroker reports whether b's status says a broker may hold something of it,
// or that credentials were copied to its Secret (a user-provided instance's).
func bindingHeldAtBroker(b *v1alpha1.ServiceBinding) bool {
	st := &b.Status
	return st.Bound != nil || len(st.ExternalIDs) > 0 || st.InFlight != nil || len(st.Retired) > 0 || st.OrphanMitigation != nil
}
