package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Select lists the work of a run: brokers, instances and bindings labelled pending or
// being deleted (one metadata-only list), brokers whose relist is due and, with
// RotateDue, bindings whose credentials are due for rotation, in the shard (and, in a
// shard group, in this member's share). Records another driver holds a live claim on
// are not read: they come back as Skipped items.
func (r *Reconciler) Select(ctx context.Context, o Options) ([]work, []Item, error) {
	todo, pre, _, _, _, err := r.selectWork(ctx, o, false)
	return todo, pre, err
}

// selectWork is Select, with the shard group's summary and the run's share. With
// asListed, a full pass may hand its records with work to the run as its list passes
// their namespaces (aslisted.go): al is then not nil, and brings them.
func (r *Reconciler) selectWork(ctx context.Context, o Options, asListed bool) (todo []work, pre []Item, gs *GroupSummary, owns func(namespace, name string) bool, al *listing, err error) {
	full := r.fullPassDue(ctx, o)
	if asListed && r.stepsAsListed(ctx, o, full) {
		todo, pre, al, err = r.selectAsListed(ctx, o)
		return todo, pre, nil, o.Shard.Owns, al, err
	}
	todo, pre, gs, owns, err = r.selectListed(ctx, o, full)
	return todo, pre, gs, owns, nil, err
}

// selectListed is selectWork once the first pass's list is read.
func (r *Reconciler) selectListed(ctx context.Context, o Options, full bool) (todo []work, pre []Item, gs *GroupSummary, owns func(namespace, name string) bool, err error) {
	s := &selection{r: r, o: o, owns: o.Shard.Owns, index: map[string]int{},
		starved: func(string, string, string, string, store.ClaimRef, *store.Lease, *time.Time) bool { return false }}
	if g := o.Group; g != nil {
		keep := map[string]bool{}
		defer func() {
			if err == nil {
				g.Forget(keep)
			}
		}()
		s.inGroup(ctx, g, keep)
	}
	defer func() {
		if s.gs != nil && err == nil {
			s.gs.Owned = len(s.todo) + len(s.pre)
		}
	}()
	pending, ids, err := r.listWork(ctx, o, full)
	if err != nil {
		return nil, nil, s.gs, s.owns, err
	}
	if s.gs != nil {
		s.gs.Listed = len(pending)
	}
	// A full pass's list tells which records use which OSB ids: the engine's check
	// that no older record uses a record's id needs no list per record (the check is
	// cluster-wide: only the index of a list of every namespace answers it). A run
	// that listed only the records with work has none, or one of the namespaces with
	// many of them (the checks of ids bound to a uid or a namespace): the other checks
	// list. Id claims are settled on a full pass's index only.
	r.Engine.UseIDIndex(ids)
	if ids != nil && !ids.Partial() {
		// Before any record is stepped: the id claims of records that have none
		// yet, and the release of claims whose record is gone. What fails is tried
		// again at the next full pass.
		_ = r.Engine.SettleIDClaims(ctx, o.Namespace, ids)
	}
	s.now, s.holder = r.now(), r.Engine.Holder()
	s.addOversized(ids.Oversized())
	s.addPending(pending)
	if r.Engine.FetchesCatalogs() {
		if err := s.addBrokers(ctx); err != nil {
			return nil, nil, s.gs, s.owns, err
		}
	}
	if o.RotateDue {
		if err := s.addRotations(ctx); err != nil {
			return nil, nil, s.gs, s.owns, err
		}
	}
	r.listCopies(ctx, o, s.todo)
	return s.todo, s.pre, s.gs, s.owns, nil
}

// selection is the work of a run as Select finds it.
type selection struct {
	r *Reconciler
	o Options
	// now is when the pending records were listed; holder, the run's claims' holder.
	now    time.Time
	holder string
	todo   []work
	pre    []Item
	// index is the position of a work key in todo, -1 when its item is in pre.
	index map[string]int
	// owns says whether a record is the run's share.
	owns func(namespace, name string) bool
	// starved says whether a record of another member's share is taken up because it
	// starved.
	starved func(kind, namespace, name, rv string, ref store.ClaimRef, l *store.Lease, dueAt *time.Time) bool
	gs      *GroupSummary
}

// inGroup limits the selection to this member's share of shard group g, as its Leases
// say now, plus the records of other members' shares that starved. keep gathers the
// keys of the records of other shares seen.
func (s *selection) inGroup(ctx context.Context, g *shard.Group, keep map[string]bool) {
	r, o := s.r, s.o
	a, gerr := g.Assignment(ctx)
	s.gs = &GroupSummary{Name: g.Name, Members: a.Members}
	if gerr != nil {
		s.gs.Error = gerr.Error()
	}
	s.owns = func(namespace, name string) bool { return o.Shard.Owns(namespace, name) && a.Owns(namespace, name) }
	bound := cmp.Or(o.StarvationBound, g.StarvationBound(0))
	s.starved = func(kind, namespace, name, rv string, ref store.ClaimRef, l *store.Lease, dueAt *time.Time) bool {
		if !o.Shard.Owns(namespace, name) {
			return false
		}
		key := work{kind: kind, namespace: namespace, name: name}.key()
		keep[key] = true
		now := r.now()
		if !g.Starved(key, rv, l != nil && r.Store.Claims().Live(ref, *l), bound, now) {
			return false
		}
		if dueAt != nil && now.Before(dueAt.Add(bound)) {
			return false
		}
		if dueAt == nil && !r.safeBool(KindWord(kind)+" "+namespace+"/"+name, func() bool { return r.overdue(ctx, kind, namespace, name, bound, now) }) {
			return false
		}
		s.gs.TakenOver++
		return true
	}
}

// skip puts a record another driver holds a live claim on into pre, as skipped; false
// when no one else does.
func (s *selection) skip(kind, namespace, name string, ref store.ClaimRef, l *store.Lease) bool {
	// A claim whose process has ended is looked at in full: it may be taken over.
	if l == nil || l.Holder == s.holder || s.r.Store.Claims().Abandoned(*l) {
		return false
	}
	// Judged by what this process saw of the claim (store.Claims), not by its stamp.
	left := s.r.Store.Claims().Left(ref, *l)
	if left == 0 {
		return false
	}
	until := s.now.Add(left)
	s.pre = append(s.pre, Item{Namespace: namespace, Kind: kind, Name: name, Outcome: Skipped, Until: &until,
		Detail: fmt.Sprintf("%s holds it until %s", l.Holder, until.UTC().Format(time.RFC3339))})
	return true
}

// addPending adds the records of the run's share listed pending or being deleted.
func (s *selection) addPending(pending []store.WorkItem) {
	for _, p := range pending {
		switch p.Kind {
		case v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding, v1alpha1.KindBroker:
		default:
			continue
		}
		if !s.owns(p.Namespace, p.Name) && !s.starved(p.Kind, p.Namespace, p.Name, p.ResourceVersion, p.ClaimRef(), p.Lease, nil) {
			continue
		}
		w := work{kind: p.Kind, namespace: p.Namespace, name: p.Name}
		if s.skip(p.Kind, p.Namespace, p.Name, p.ClaimRef(), p.Lease) {
			s.index[w.key()] = -1
			continue
		}
		s.index[w.key()] = len(s.todo)
		s.todo = append(s.todo, w)
	}
}

// addOversized reports the records of the run's share that the list did not read for
// the size of their labels and annotations: each a failed item, once a run, naming the
// fix. They are not driven: whoever may write their ConfigMap made them so, and they
// cost the run no more than their names.
func (s *selection) addOversized(recs []store.OversizedRecord) {
	for _, o := range recs {
		if !s.owns(o.Namespace, o.Name) {
			continue
		}
		w := work{kind: o.Kind, namespace: o.Namespace, name: o.Name}
		if _, seen := s.index[w.key()]; seen {
			continue
		}
		s.index[w.key()] = -1
		s.pre = append(s.pre, failed(Item{Namespace: o.Namespace, Kind: o.Kind, Name: o.Name}, fmt.Errorf(
			"not read: its ConfigMap's labels and annotations hold %d bytes, more than the %d a record may (what kubectl catalog writes is a few hundred); remove the labels and annotations it did not write (\"kubectl label configmap %s -n %s KEY-\"), or delete the ConfigMap if it holds no record",
			o.Bytes, store.MaxRecordMetadataBytes, store.ConfigMapName(o.Kind, o.Name), o.Namespace)))
	}
}

// addBrokers adds the brokers whose relist is due, or that are to be adopted. A relist
// that is merely due is not pending work: brokers being few, they are listed in full
// to find it.
func (s *selection) addBrokers(ctx context.Context) error {
	brokers, err := s.r.Store.Brokers().List(ctx, s.o.Namespace, store.Filter{})
	if err != nil {
		bad, ok := store.Unreadable(err)
		if !ok {
			return err
		}
		// A ConfigMap that does not hold a readable broker fails on its own and
		// hides no other record.
		for _, e := range bad {
			w := work{kind: v1alpha1.KindBroker, namespace: e.Namespace, name: e.Name}
			if _, seen := s.index[w.key()]; seen || !s.owns(e.Namespace, e.Name) {
				continue
			}
			s.index[w.key()] = -1
			s.pre = append(s.pre, failed(Item{Namespace: e.Namespace, Kind: w.kind, Name: e.Name}, unreadable(e)))
		}
	}
	for _, b := range brokers {
		s.addBroker(b)
	}
	return nil
}

// addBroker adds broker b, listed, when its relist is due or it is to be adopted.
func (s *selection) addBroker(b *v1alpha1.Broker) {
	now := s.now
	w := work{kind: v1alpha1.KindBroker, namespace: b.Namespace, name: b.Name, broker: b}
	// A namespace-scoped broker recorded by an older release holds none of its
	// instances yet: this run gives it the finalizer.
	adopt := s.r.Engine.NextBrokerStep(b).Action == engine.NextAdoptBroker
	mine := s.owns(b.Namespace, b.Name)
	if at := b.Status.NextRelistAt; !mine && at != nil && b.DeletionTimestamp == nil && !adopt {
		if _, seen := s.index[w.key()]; !seen {
			var l *store.Lease
			if x, ok := store.LeaseOf(b); ok {
				l = &x
			}
			mine = !now.Before(at.Time) && s.starved(w.kind, b.Namespace, b.Name, b.ResourceVersion, store.RefOf(b), l, &at.Time)
		}
	}
	if _, seen := s.index[w.key()]; seen || !mine {
		return
	}
	if at := b.Status.NextRelistAt; adopt || at != nil && !now.Before(at.Time) && b.DeletionTimestamp == nil {
		s.todo = append(s.todo, w)
	}
}

// addRotations adds the bindings whose credentials are due for rotation
// (--rotate-due). A rotation that is merely due is not pending work either: the
// bindings are listed in full (page by page) to find it.
func (s *selection) addRotations(ctx context.Context) error {
	bindings, err := s.r.Store.Bindings().List(ctx, s.o.Namespace, store.Filter{})
	if _, ok := store.Unreadable(err); err != nil && !ok {
		return err
	}
	// An unreadable binding ConfigMap does not hide the others; if it has work, the
	// pending list above shows it, and reading it fails visibly.
	for _, b := range bindings {
		if b.DeletionTimestamp != nil || !engine.RotationDue(b, s.now) || !s.owns(b.Namespace, b.Name) {
			continue
		}
		w := work{kind: v1alpha1.KindServiceBinding, namespace: b.Namespace, name: b.Name, rotate: true}
		i, seen := s.index[w.key()]
		switch {
		case seen && i >= 0:
			s.todo[i].rotate = true
		case seen:
			// Skipped already: someone else holds it.
		default:
			var lease *store.Lease
			if l, ok := store.LeaseOf(b); ok {
				lease = &l
			}
			if !s.skip(w.kind, w.namespace, w.name, store.RefOf(b), lease) {
				s.todo = append(s.todo, w)
			}
		}
	}
	return nil
}

// overdue reads an instance or binding of another member's share and reports whether
// its next step was due at least bound ago, with no live claim on it: its owner is not
// taking it up. A broker is taken up as it is (its run checks what is due).
func (r *Reconciler) overdue(ctx context.Context, kind, namespace, name string, bound time.Duration, now time.Time) bool {
	if kind == v1alpha1.KindBroker {
		return true
	}
	rec := r.recordOf(work{kind: kind, namespace: namespace, name: name})
	if found, err := rec.read(ctx); err != nil || !found {
		return false
	}
	next := rec.next()
	if next.ClaimedBy != "" || next.NeedsUser {
		return false
	}
	return next.At.IsZero() || !now.Before(next.At.Add(bound))
}
