package reconcile

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A full pass reads every record's metadata: at 100,000 records, 200 pages, seconds of
// the API server's time, which grow with the cluster while the work does not. Its list
// is in the order of the records' keys (namespace, then name), so each namespace's
// records come one after the other: once the list has read a record of the next
// namespace, it has read every record of the one before, as a list of that namespace
// alone would, and the index of what it read answers the OSB id checks of that
// namespace's records for the ids bound to a uid or a namespace, which only a record of
// the same namespace can hold (store.ListPendingWithIDsAsListed). The run steps the
// records with work of each namespace from then on, while the list goes on: a step whose
// id check the index cannot answer yet (an id bound to nothing) lists the users of its
// id, as between two full passes. What only the list's end tells (the index of every
// namespace, the id claims to settle, the records whose metadata was too large to read,
// the namespaces' sizes and the full pass's marker) is done when it ends, while the run
// goes on.
//
// Only once every record has its id claims (store.IDClaimsSwept): the first full pass
// of a cluster of an earlier release gives the older records their claims before any
// record is stepped, and lists first. A shard group's member lists first too (its
// share and summary are made of the whole list).

// lateWork is work a run's first pass found after the run's steps started.
type lateWork struct {
	todo []work
	pre  []Item
	// turn: a listing that runs on the run's turns (ListingTurns) asks for its next
	// one; the run that takes the ask waits for what the listing hands over next (its
	// work, or the end of the listing) and does nothing else meanwhile.
	turn bool
}

// ListingTurns is a run clock (Reconciler.WithRunClock) under which a run keeps to one
// goroutine at a time: the engine's simulation's, which runs one goroutine of a process
// at a time so that one seed is one interleaving. A full pass that steps records while
// its list is read then reads its list on the run's turns: the list and the work it
// hands over (the copies it lists, the id claims it settles, its marker) run while the
// run waits for them, with no step under way, and the steps run while the list waits.
// The list's reads interleave with the steps as the run draws them, not as the Go
// scheduler does. A command never sets such a clock: its list overlaps its steps.
type ListingTurns interface {
	// ListingTurn is asked when the run has a record due and no step under way: true
	// lets the list read on until it hands over the records of its next namespace
	// (or ends) first; false takes the steps due first. The list reads on anyway
	// when no record is due.
	ListingTurn() bool
}

// listingTurns is the run clock's ListingTurns, nil when it has none.
func (r *Reconciler) listingTurns() ListingTurns {
	lt, _ := r.runClock().(ListingTurns)
	return lt
}

// listing is a full pass whose list is read while the run steps the records with work
// it found so far.
type listing struct {
	late chan lateWork
	stop context.CancelFunc
	done chan struct{}
	// err: the list failed on its own (not because the run ended before it); read:
	// the list was read to its end.
	err  error
	read bool
	// quit, for a listing on the run's turns (ListingTurns): closed by end, it gives
	// the listing its last turn, to end in.
	quit chan struct{}
}

// listed says whether the list was read to its end (after end).
func (l *listing) listed() bool { return l != nil && l.read }

// more is the channel that brings the work of the list, nil for no listing.
func (l *listing) more() <-chan lateWork {
	if l == nil {
		return nil
	}
	return l.late
}

// end stops the list if it is still read (the run ended before it), waits for it, and
// returns its error.
func (l *listing) end() error {
	if l == nil {
		return nil
	}
	l.stop()
	if l.quit != nil {
		close(l.quit)
	}
	<-l.done
	return l.err
}

// stepsAsListed says whether a run whose first pass is a full pass (full) steps records
// while its list is read: over a cluster whose records all have their id claims, and
// not as a member of a shard group.
func (r *Reconciler) stepsAsListed(ctx context.Context, o Options, full bool) bool {
	if !full || o.Group != nil || o.CatalogNamespace == "" {
		return false
	}
	swept, err := r.Store.IDClaimsSwept(ctx, o.CatalogNamespace)
	return err == nil && swept
}

// selectAsListed selects the work of a full pass whose records with work are stepped as
// its list passes their namespaces: todo is the brokers' (and, with RotateDue, the
// rotations') work, pre what they found done already (a broker's ConfigMap that cannot
// be read), and the listing brings the records with work, a namespace at a time.
func (r *Reconciler) selectAsListed(ctx context.Context, o Options) ([]work, []Item, *listing, error) {
	s := &selection{r: r, o: o, owns: o.Shard.Owns, index: map[string]int{},
		now: r.now(), holder: r.Engine.Holder(), starved: noStarvation}
	if r.Engine.FetchesCatalogs() {
		if err := s.addBrokers(ctx); err != nil {
			return nil, nil, nil, err
		}
	}
	if o.RotateDue {
		if err := s.addRotations(ctx); err != nil {
			return nil, nil, nil, err
		}
	}
	todo, pre := slices.Clone(s.todo), slices.Clone(s.pre)
	lctx, stop := context.WithCancel(ctx)
	l := &listing{late: make(chan lateWork), stop: stop, done: make(chan struct{})}
	if r.listingTurns() != nil {
		l.quit = make(chan struct{})
		go r.listInTurns(lctx, o, s, l)
		return todo, pre, l, nil
	}
	// The list hands over each namespace's items at once; feed turns them into work
	// (and lists the copies of their instances and bindings) and hands it to the run.
	var mu sync.Mutex
	var batches [][]store.WorkItem
	ready := make(chan struct{}, 1)
	listed := make(chan struct{})
	signal := func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	}
	var ids *store.IDIndex
	var listErr error
	// stopped: the list ended because the run did, before the list's end.
	var stopped bool
	start := r.now()
	go func() {
		defer close(listed)
		_, ids, listErr = r.Store.ListPendingWithIDsAsListed(lctx, o.Namespace, r.Engine.UseIDIndex, func(b []store.WorkItem) {
			mu.Lock()
			batches = append(batches, b)
			mu.Unlock()
			signal()
		})
		if listErr != nil && lctx.Err() != nil {
			listErr, stopped = nil, true // the run ended before the list
		}
	}()
	send := func(lw lateWork) bool {
		select {
		case l.late <- lw:
			return true
		case <-lctx.Done():
			return false
		}
	}
	feed := func() bool {
		mu.Lock()
		taken := batches
		batches = nil
		mu.Unlock()
		for _, b := range taken {
			if !send(r.workOfBatch(lctx, o, s, b)) {
				return false
			}
		}
		return true
	}
	go func() {
		defer close(l.done)
		defer close(l.late)
		for end := false; !end; {
			select {
			case <-ready:
			case <-listed:
				end = true
			}
			if !feed() {
				<-listed
				return
			}
		}
		if listErr != nil || stopped {
			// Not a full pass: nothing is settled or noted on what it read.
			l.err = listErr
			return
		}
		l.read = true
		if pre := r.listRead(lctx, o, s, start, ids); len(pre) > 0 {
			send(lateWork{pre: pre})
		}
	}()
	return todo, pre, l, nil
}

// listInTurns is the listing of selectAsListed on the run's turns (ListingTurns): one
// goroutine that asks the run for a turn before its list starts and after each
// namespace's work it hands over, and runs only once the run took the ask, until the
// run ends it (end closes l.quit, its last turn).
func (r *Reconciler) listInTurns(lctx context.Context, o Options, s *selection, l *listing) {
	defer close(l.done)
	defer close(l.late)
	ended := false
	next := func() bool {
		if !ended {
			select {
			case l.late <- lateWork{turn: true}:
			case <-l.quit:
				ended = true
			}
		}
		return !ended
	}
	// hand gives the run the work found (the run waits for it: the turn is the
	// listing's), and waits for the next turn.
	hand := func(lw lateWork) bool {
		l.late <- lw
		return next()
	}
	if !next() {
		return // the run ended before the list started
	}
	start := r.now()
	_, ids, err := r.Store.ListPendingWithIDsAsListed(lctx, o.Namespace, r.Engine.UseIDIndex, func(b []store.WorkItem) {
		if ended {
			return
		}
		hand(r.workOfBatch(lctx, o, s, b))
	})
	if ended || err != nil && lctx.Err() != nil {
		return // the run ended before the list: not a full pass, nothing is settled
	}
	if err != nil {
		l.err = err
		return
	}
	l.read = true
	if pre := r.listRead(lctx, o, s, start, ids); len(pre) > 0 {
		l.late <- lateWork{pre: pre}
	}
}

// workOfBatch is the work of one batch b the list handed over (a namespace's records,
// read to their end), with the copies of its instances and bindings listed.
func (r *Reconciler) workOfBatch(lctx context.Context, o Options, s *selection, b []store.WorkItem) lateWork {
	from, pre := len(s.todo), len(s.pre)
	s.addPending(b)
	lw := lateWork{todo: slices.Clone(s.todo[from:]), pre: slices.Clone(s.pre[pre:])}
	on := o
	if len(b) > 0 && !slices.ContainsFunc(b, func(it store.WorkItem) bool { return it.Namespace != b[0].Namespace }) {
		on.Namespace = b[0].Namespace
	}
	r.listCopies(lctx, on, lw.todo)
	return lw
}

// listRead does what the end of a full pass's list tells, the whole list read: its index
// answers every check now, so the id claims are settled and the full pass noted; it
// returns the items of the records whose metadata was too large to read.
func (r *Reconciler) listRead(lctx context.Context, o Options, s *selection, start time.Time, ids *store.IDIndex) []Item {
	if !ids.Partial() {
		_ = r.Engine.SettleIDClaims(lctx, o.Namespace, ids)
	}
	r.fullPassListed(lctx, o, start, ids)
	from := len(s.pre)
	s.addOversized(ids.Oversized())
	return slices.Clone(s.pre[from:])
}

// noStarvation takes up no record of another member's share: outside a shard group.
func noStarvation(string, string, string, string, store.ClaimRef, *store.Lease, *time.Time) bool {
	return false
}
