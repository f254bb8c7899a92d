package authority

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// CheckConsumer refuses a bind of b to inst that inst's owner did not allow: a namespace
// outside the instance's allowed namespaces, or, for an instance of another namespace,
// one the instance is not shared with. A grant counts only on the authority of the
// instance spec's author (verified, and allowed to write the instance's record: what
// "share" needs), so a record written by someone else, or a grant forged by hand without
// the trust policy, shares nothing. Any other reference out of the binding's namespace
// stays refused: a binding may name an instance of another namespace, nothing else.
//
// A binding of another namespace that inst does not let bind now gets NotReached, the
// refusal that says the same whether inst exists, whom it is shared with and which
// namespaces it allows (the cross-namespace rule).
func (auth *Authority) CheckConsumer(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance) error {
	if b.CrossNamespace() && !Lets(inst, b.Namespace) {
		return NotReached(b)
	}
	if !allowedNamespace(inst, b) {
		return Refused(ReasonRefusedNamespaceNotAllowed, "instance %q in namespace %q allows bindings only from namespaces %s, not from %q: its owner adds it with \"kubectl catalog update %s --allowed-namespaces ... -n %s\"",
			inst.Name, inst.Namespace, strings.Join(inst.Spec.AllowedNamespaces, ", "), b.Namespace, inst.Name, inst.Namespace)
	}
	if !b.CrossNamespace() {
		return nil
	}
	// The grant is the instance author's: they must be able to write the record.
	if err := auth.Authorize(ctx, inst, authorizationv1.ResourceAttributes{Namespace: inst.Namespace, Verb: "update", Resource: "configmaps",
		Name: store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name)}); err != nil {
		r, ok := AsRefused(err)
		if !ok {
			return err
		}
		return &RefusedError{Reason: ReasonRefusedNotShared, Transient: r.Transient,
			Message: fmt.Sprintf("the grant of instance %q in namespace %q to namespace %q does not count: %s", inst.Name, inst.Namespace, b.Namespace, r.Message)}
	}
	// The binding is its author's: they must be able to write records in its namespace.
	if err := auth.Authorize(ctx, b, authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "create", Resource: "configmaps"}); err != nil {
		return err
	}
	return nil
}

// Reserved reports whether inst holds a place for b.
func Reserved(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	return slices.ContainsFunc(inst.Status.Consumers, func(c v1alpha1.ConsumerReservation) bool { return c.UID == string(b.UID) })
}

// Reserve takes a place for b among the bindings of an instance with maxBindings,
// before b's first bind call: a write of the instance's status guarded by its
// resourceVersion, retried on conflicts, so that concurrent binds never take more places
// than the limit. Every binding of the instance that exists counts (placesTaken), but
// only a place the instance's status holds is kept in the write: a binding whose status
// alone says the broker may hold it (bound before the limit was set, or a first bind
// in flight) counts for as long as it says so, and gets no place by it. A place whose
// binding record is gone is given back first. A user who may not write the instance's
// record, or may not list the bindings of a namespace that counts, leaves the bind to
// reconcile. read is the instance as this step read it: an instance without a limit is
// not read again.
//
// A bind of another namespace's instance first makes sure the instance's status
// remembers the grant it binds under (status.sharedBefore, rememberGrant): after an
// unshare, the binding then still counts as a consumer until it is unbound (Counts).
func (auth *Authority) Reserve(ctx context.Context, b *v1alpha1.ServiceBinding, read *v1alpha1.ServiceInstance) error {
	return auth.reserve(ctx, b, read, "")
}

// ReserveCopy is Reserve for a copy of the credentials of a user-provided instance to b,
// source being the UID of the instance's credentials Secret: a binding whose status says
// it holds a copy of that Secret under its current id is one that stays, and, as a
// rotation does, gets its copy above a lowered limit when it was created before every
// place reserved under it (madeBeforePlaces), writing no place. A copy claimed of
// another Secret (another instance's, or none) takes a place like a first copy.
func (auth *Authority) ReserveCopy(ctx context.Context, b *v1alpha1.ServiceBinding, read *v1alpha1.ServiceInstance, source types.UID) error {
	return auth.reserve(ctx, b, read, source)
}

func (auth *Authority) reserve(ctx context.Context, b *v1alpha1.ServiceBinding, read *v1alpha1.ServiceInstance, source types.UID) error {
	if err := auth.rememberGrant(ctx, b, read); err != nil {
		return err
	}
	if read != nil && read.Spec.MaxBindings == nil {
		return nil
	}
	ns, name := b.InstanceRef()
	var listed []*v1alpha1.ServiceBinding
	var unseen []string
	for attempt := 0; ; attempt++ {
		inst, err := auth.env().Store.Instances().Get(ctx, ns, name)
		if err != nil {
			return err
		}
		if inst.Spec.MaxBindings == nil || Reserved(inst, b) {
			return nil
		}
		if attempt == 0 {
			// Listed once: a binding bound since holds a place the re-read shows.
			if listed, unseen, err = ListBindingsOf(ctx, auth.env().Store, inst); err != nil {
				return err
			}
		}
		x := inst.DeepCopy()
		limit := *x.Spec.MaxBindings
		places := placesTaken(x, listed, unseen, b, false)
		// A rotation's bind is that of a binding that exists, made before the limit:
		// it keeps the place it holds, even above a lowered limit. Only its status
		// says it is bound and rotates, and whoever may write its ConfigMap writes
		// that: a binding created after a place was reserved under the limit was made
		// under it, and takes a place like any other (madeBeforePlaces).
		rotation := b.Status.Bound != nil && b.RotatedFrom() != nil && madeBeforePlaces(x, b)
		if int32(len(places)) >= limit && !rotation {
			places = auth.liveConsumers(ctx, places)
		}
		if int32(len(places)) >= limit && copiedFrom(b, source) && madeBeforePlaces(x, b) {
			// A binding that stays above a lowered limit: it counts through its status,
			// as before, and its copy takes no place of its own (which, reserved now,
			// would make its siblings made before the limit look made under it).
			return nil
		}
		if int32(len(places)) >= limit && !rotation {
			return limitReached(x, places)
		}
		if blind := Uncounted(x, unseen); len(blind) > 0 && !rotation {
			return auth.env().LeftToReconcile(fmt.Sprintf("you may not list the bindings of namespace(s) %s, which count against the limit of %d bindings of instance %q in namespace %q, so reconcile, which sees every namespace, takes the binding's place and sends the request (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)", strings.Join(blind, ", "), limit, name, ns), nil)
		}
		// The places kept are those the instance's status held: a binding counted
		// because its status says the broker may hold it (bound before the limit, or
		// a first bind in flight) counts, but takes no place of its own that way, or a
		// status written by hand would give it one, and its bind would then pass as
		// one that holds its place.
		x.Status.Consumers = append(slices.DeleteFunc(places, func(c v1alpha1.ConsumerReservation) bool {
			return !slices.ContainsFunc(x.Status.Consumers, func(k v1alpha1.ConsumerReservation) bool { return k.UID == c.UID })
		}), v1alpha1.ConsumerReservation{
			Namespace: b.Namespace, Name: b.Name, UID: string(b.UID), ReservedAt: metav1.NewTime(auth.env().Now()),
		})
		_, err = auth.env().Store.Instances().Update(ctx, x)
		switch {
		case err == nil:
			return nil
		case store.IsConflict(err) && attempt < 100:
			continue
		case store.IsForbidden(err):
			return auth.env().LeftToReconcile(fmt.Sprintf("you may not write instance %q in namespace %q, where the place of the binding under the instance's limit of %d bindings is kept, so reconcile sends the request (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)", name, ns, limit), err)
		default:
			return err
		}
	}
}

// copiedFrom reports whether b's status says it holds a copy, under its current id, of
// the credentials Secret whose UID is source ("" never).
func copiedFrom(b *v1alpha1.ServiceBinding, source types.UID) bool {
	bd := b.Status.Bound
	return source != "" && bd != nil && bd.UserProvided && bd.BindingID == b.CurrentExternalID() &&
		strings.HasPrefix(bd.SourceVersion, string(source)+"/")
}

// madeBeforePlaces reports whether binding b was created before every place reserved
// for another binding under inst's limit: a place is reserved only once the limit is in
// force, so a binding created after one was made under the limit. The creation time is
// the API server's, which no writer of the binding can change; a place's time is the
// clock of the process that reserved it, read before its write. Both are kept in whole
// seconds, and that clock may run ahead of the API server's: so b counts as made before
// a place only when it was created more than reservedAtMargin before the place's time.
// A binding created in the same second as a place, or within a clock's lead of it, may
// have been created after it (written by hand, with a status that says it rotates),
// and takes a place like any other.
func madeBeforePlaces(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	for _, c := range inst.Status.Consumers {
		if c.UID != string(b.UID) && !b.CreationTimestamp.Add(reservedAtMargin).Before(c.ReservedAt.Time) {
			return false
		}
	}
	return true
}

// reservedAtMargin is how far the clock of a process that reserves a place may run
// ahead of the API server's (store.MaxClockSkew, what claims allow for).
const reservedAtMargin = store.MaxClockSkew

// limitReached is the refusal of a bind to inst, whose places are all taken by places:
// it names the bindings that hold them.
func limitReached(inst *v1alpha1.ServiceInstance, places []v1alpha1.ConsumerReservation) error {
	limit := *inst.Spec.MaxBindings
	held := fmt.Sprintf("its limit of %d bindings (%s)", limit, ConsumerNames(places))
	if n := int32(len(places)); n > limit {
		held = fmt.Sprintf("its limit of %d bindings: %d bindings hold places (%s), more than the limit, which was lowered after they were made; they stay, and new binds are refused until fewer than %d remain", limit, n, ConsumerNames(places), limit)
	}
	return Refused(ReasonRefusedLimitReached, "instance %q in namespace %q has reached %s: unbind one of them, or its owner raises the limit with \"kubectl catalog update %s --max-bindings N -n %s\"",
		inst.Name, inst.Namespace, held, inst.Name, inst.Namespace)
}

// CheckBindingLimit refuses a bind to inst while every place under its maxBindings is
// taken by the bindings this user can list (PlacesTaken), naming them; the bind's own
// step takes the place itself, atomically, before the broker call (Reserve).
func (auth *Authority) CheckBindingLimit(ctx context.Context, inst *v1alpha1.ServiceInstance) error {
	if inst.Spec.MaxBindings == nil {
		return nil
	}
	listed, unseen, err := ListBindingsOf(ctx, auth.env().Store, inst)
	if err != nil {
		return err
	}
	if places := PlacesTaken(inst, listed, unseen); int32(len(places)) >= *inst.Spec.MaxBindings {
		return limitReached(inst, places)
	}
	return nil
}

// ListBindingsOf lists the bindings of inst in its own namespace and in the others (see
// ListConsumers), and the namespaces whose bindings this user may not list.
func ListBindingsOf(ctx context.Context, st *store.Store, inst *v1alpha1.ServiceInstance) (bs []*v1alpha1.ServiceBinding, unseen []string, err error) {
	others := ahead.Start(ctx, func() (consumersListed, error) {
		bs, unseen, _, err := ListConsumers(ctx, st, inst)
		return consumersListed{bs, unseen}, err
	})
	var bad []*store.Error
	own, err := ReadableBindings(ctx, st, inst.Namespace, store.Filter{Instance: inst.Name}, &bad)
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
// now count, and its own (holdsPlaces): a namespace no longer granted affects the
// instance no more, and its bindings are being removed, while the bindings of the
// instance's own namespace stay when its allowed namespaces leave it out.
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
		if !holdsPlaces(inst, c.Namespace) || held[c.UID] || (self != nil && c.UID == string(self.UID)) {
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
		if held[uid] || (self != nil && uid == string(self.UID)) || !holdsPlaces(inst, b.Namespace) || !BindingHeldAtBroker(b) {
			continue
		}
		if self != nil && waitsForAPlace(self) && waitsForAPlace(b) && madeBefore(self, b) {
			// Two bindings with no place kept (made before the limit), each waiting to
			// bind with something the broker may hold: the older goes first, or each
			// would refuse the other for ever.
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
		if holdsPlaces(inst, ns) && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// Lets reports whether inst, as its spec now stands, lets the bindings of namespace ns
// use it: its own, or one it is shared with, within its allowed namespaces.
func Lets(inst *v1alpha1.ServiceInstance, ns string) bool {
	if allowed := inst.Spec.AllowedNamespaces; len(allowed) > 0 && !slices.Contains(allowed, ns) {
		return false
	}
	return ns == inst.Namespace || slices.Contains(inst.Spec.SharedWith, ns)
}

// liveConsumers are the places whose binding record still exists (or cannot be read).
func (auth *Authority) liveConsumers(ctx context.Context, cs []v1alpha1.ConsumerReservation) []v1alpha1.ConsumerReservation {
	var live []v1alpha1.ConsumerReservation
	for _, c := range cs {
		b, err := auth.env().Store.Bindings().Get(ctx, c.Namespace, c.Name)
		if store.IsNotFound(err) || (err == nil && string(b.UID) != c.UID) {
			continue
		}
		live = append(live, c)
	}
	return live
}

func ConsumerNames(cs []v1alpha1.ConsumerReservation) string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Namespace+"/"+c.Name)
	}
	return strings.Join(names, ", ")
}

// ReleaseConsumer gives back b's place under its instance's limit, once b is gone. It is
// best effort: a place left behind is given back when the limit is next reached.
func (auth *Authority) ReleaseConsumer(ctx context.Context, b *v1alpha1.ServiceBinding) {
	ns, name := b.InstanceRef()
	_, _ = auth.env().Store.Instances().UpdateWithRetry(ctx, ns, name, func(inst *v1alpha1.ServiceInstance) error {
		inst.Status.Consumers = slices.DeleteFunc(inst.Status.Consumers, func(c v1alpha1.ConsumerReservation) bool { return c.UID == string(b.UID) })
		if len(inst.Status.Consumers) == 0 {
			inst.Status.Consumers = nil
		}
		return nil
	})
}

// ReadableBindings and ListConsumers list bindings, leaving out (and returning) the
// ConfigMaps that hold no readable record (records.ReadableBindings,
// records.ListConsumersUnreadable): anyone who may write a ConfigMap can write one, so
// it stops no listing and counts as a consumer of nothing.
var (
	ReadableBindings = records.ReadableBindings
	ListConsumers    = records.ListConsumersUnreadable
)

// Granted reports whether inst (as its spec now stands) lets b's namespace bind to it:
// within its allowed namespaces (allowedNamespace), and of its own namespace or of one it
// is shared with.
func Granted(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	if !allowedNamespace(inst, b) {
		return false
	}
	return !b.CrossNamespace() || slices.Contains(inst.Spec.SharedWith, b.Namespace)
}

// allowedNamespace reports whether inst's allowed namespaces let binding b use it: the
// list is empty or names b's namespace, or b is a binding of inst's own namespace that is
// bound already (OwnBindingStays).
func allowedNamespace(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	allowed := inst.Spec.AllowedNamespaces
	return len(allowed) == 0 || slices.Contains(allowed, b.Namespace) || OwnBindingStays(inst, b)
}

// OwnBindingStays reports whether b is a binding of inst's own namespace that is bound
// (at the broker, or a copy of a user-provided instance's credentials). Such a binding
// stays when inst's allowed namespaces leave its namespace out, and keeps following inst:
// it is rotated, it gets the copy of new credentials, and it holds its place under the
// limit. Only new binds of that namespace are refused. Its status is free to write for
// whoever may write that namespace's ConfigMaps, who may as well write the instance's
// spec (the allowed namespaces are no bound against the owner's own namespace), and a
// copy is still made only of what the binding's author may read.
func OwnBindingStays(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	ns, name := b.InstanceRef()
	return b.Namespace == inst.Namespace && ns == inst.Namespace && name == inst.Name && b.Status.Bound != nil
}

// holdsPlaces reports whether the bindings of namespace ns hold places under inst's
// limit: those of a namespace inst lets bind now, and those of its own namespace, which
// stay when its allowed namespaces leave it out (OwnBindingStays).
func holdsPlaces(inst *v1alpha1.ServiceInstance, ns string) bool {
	return ns == inst.Namespace || Lets(inst, ns)
}

// BindingHeldAtBroker reports whether b's status says a broker may hold something of it,
// or that credentials were copied to its Secret (a user-provided instance's).
func BindingHeldAtBroker(b *v1alpha1.ServiceBinding) bool {
	st := &b.Status
	return st.Bound != nil || len(st.ExternalIDs) > 0 || st.InFlight != nil || len(st.Retired) > 0 || st.OrphanMitigation != nil
}

// waitsForAPlace reports whether b, which the broker may hold something of
// (BindingHeldAtBroker), waits to bind: its first bind (in flight, or to be sent again
// after one whose id it keeps), or its rotation's bind (a new id not bound yet). Such a
// binding with no place kept counts against the limit and needs a place for its bind.
func waitsForAPlace(b *v1alpha1.ServiceBinding) bool {
	if b.DeletionTimestamp != nil || !BindingHeldAtBroker(b) || b.Status.OrphanMitigation != nil {
		return false
	}
	if op := b.Status.InFlight; op != nil && op.Type != v1alpha1.OperationBind {
		return false
	}
	return b.Status.Bound == nil || b.Status.Bound.BindingID != b.CurrentExternalID()
}

// madeBefore reports whether binding a was created before b (by creation time, then
// UID): the order in which first binds in flight under a limit set after them go.
func madeBefore(a, b *v1alpha1.ServiceBinding) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.UID < b.UID
}

// rememberGrant adds b's namespace to status.sharedBefore of the instance of another
// namespace that b binds (read: as this step read it, nil when not read) while the
// instance lets that namespace bind, unless it is there already ("share" writes it; a
// grant written otherwise, by apply say, may not be remembered yet when the first bind
// comes). A user who may not write the instance's record leaves the bind to reconcile.
func (auth *Authority) rememberGrant(ctx context.Context, b *v1alpha1.ServiceBinding, read *v1alpha1.ServiceInstance) error {
	if !b.CrossNamespace() || (read != nil && slices.Contains(read.Status.SharedBefore, b.Namespace)) {
		return nil
	}
	ns, name := b.InstanceRef()
	_, err := auth.env().Store.Instances().UpdateWithRetry(ctx, ns, name, func(inst *v1alpha1.ServiceInstance) error {
		if slices.Contains(inst.Status.SharedBefore, b.Namespace) || !Lets(inst, b.Namespace) {
			return nil
		}
		inst.Status.SharedBefore = append(inst.Status.SharedBefore, b.Namespace)
		slices.Sort(inst.Status.SharedBefore)
		return nil
	})
	if store.IsForbidden(err) {
		return auth.env().LeftToReconcile(fmt.Sprintf("you may not write instance %q in namespace %q, whose status must remember its grant to namespace %q before the first bind under it, so reconcile sends the request (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)", name, ns, b.Namespace), err)
	}
	return err
}
