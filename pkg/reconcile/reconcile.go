// Package reconcile finishes pending work: it finds records with work to do without
// reading every record (store.ListPending), reads only those, and drives each with the
// engine's own step (engine.Engine.StepInstance for instances, StepBinding for
// bindings, catalogsync for brokers' catalogs) on a bounded pool of workers, within a
// time budget. A record whose next step is due later (an asynchronous operation's next
// poll, a retry) waits in a time-ordered queue, not on a worker. It is what "kubectl
// catalog reconcile" runs; it holds no cobra and prints nothing.
package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Outcome is what a run did with one record.
type Outcome string

// Outcomes of a record.
const (
	// Done: the record settled (Ready, deleted, catalog fetched).
	Done Outcome = "done"
	// InProgress: work was done or is under way (an async operation at the broker), or
	// the run's time ran out first; a later run goes on.
	InProgress Outcome = "in progress"
	// Waiting: the record's next step (retry, poll) is not due within this run, or
	// it waits for other records this run could not finish (a broker being deleted for
	// its instances, an instance being deleted for its bindings).
	Waiting Outcome = "waiting"
	// Skipped: someone else (a user's command, another reconcile) holds a live claim.
	Skipped Outcome = "skipped (claimed)"
	// Failed: a person must look: a terminal failure, or the record could not be read
	// or written.
	Failed Outcome = "failed"
	// WouldDrive: --dry-run; the step is due and would be taken.
	WouldDrive Outcome = "would drive"
	// Refused: the record asks for something its author may not do, or names what the
	// catalog does not trust (its Refused condition says which); nothing was sent to a
	// broker for it. A later run looks again.
	Refused Outcome = "refused"
)

// Item is one record's line of the summary.
type Item struct {
	Namespace string  `json:"namespace"`
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Outcome   Outcome `json:"outcome"`
	// Until is when the record's next step is due, for Waiting (and InProgress when
	// known).
	Until  *time.Time `json:"until,omitempty"`
	Detail string     `json:"detail,omitempty"`
	// Steps is how many engine steps this run took on the record.
	Steps int `json:"steps,omitempty"`
	// Rotated: this run rotated the binding's credentials (--rotate-due).
	Rotated bool `json:"rotated,omitempty"`
}

// OutcomeText is the OUTCOME column: "waiting until T" for a wait.
func (i Item) OutcomeText() string {
	if i.Outcome == Waiting && i.Until != nil {
		return "waiting until " + i.Until.UTC().Format(time.RFC3339)
	}
	return string(i.Outcome)
}

// Summary is what a run did.
type Summary struct {
	DryRun bool `json:"dryRun,omitempty"`
	// TimeUp: --max-duration ran out; records not reached are InProgress.
	TimeUp bool `json:"timeUp,omitempty"`
	// Interrupted: Options.Interrupt stopped the run (Ctrl-C); Left records were not
	// reached, or have a step still to take.
	Interrupted bool            `json:"interrupted,omitempty"`
	Left        int             `json:"left,omitempty"`
	Counts      map[Outcome]int `json:"counts"`
	Items       []Item          `json:"items"`
	Shard       string          `json:"shard,omitempty"`
	// Group is this member's share of its shard group (Options.Group).
	Group *GroupSummary `json:"group,omitempty"`
	// Regrouped: the shard group's live members changed during the run, which was
	// ended early (as Drain does) so that the next run takes up the new share.
	Regrouped bool `json:"regrouped,omitempty"`
	// Took is how long the run took, e.g. "1.5s".
	Took string `json:"took,omitempty"`
}

// Failed reports whether anything needs a person.
func (s Summary) Failed() bool { return s.Counts[Failed] > 0 }

// Shard is part i (0-based) of n of the records.
type Shard struct{ I, N int }

// ParseShard parses "i/n" with 0 <= i < n.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("--shard %q: want i/n, e.g. 0/3", v)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: want 0 <= i < n, e.g. 0/3, 1/3, 2/3", v)
	}
	return Shard{I: i, N: n}, nil
}

func (s Shard) String() string {
	if s.N <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Owns reports whether namespace/name falls in the shard: a stable FNV-1a hash, so the
// same record always lands in the same shard, whichever CronJob lists it.
func (s Shard) Owns(namespace, name string) bool {
	if s.N <= 1 {
		return true
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace + "/" + name))
	return int(h.Sum32()%uint32(s.N)) == s.I
}

// Options configure a run.
type Options struct {
	// Namespace to reconcile; "" for all namespaces.
	Namespace string
	// Workers is how many engine steps are taken at once; default 8. A worker is
	// busy only during a step: records waiting for their next poll or retry wait in
	// the run's queue, not on a worker.
	Workers int
	// MaxDuration bounds the run; steps under way finish their broker call. 0: no bound.
	MaxDuration time.Duration
	Shard       Shard
	// DryRun says what would be done, calling no broker and writing nothing.
	DryRun bool
	// RotateDue also rotates the credentials of bindings whose renew_before has
	// passed (engine.RotationDue), finding them by listing the bindings in full.
	// Without it, only bindings listed anyway (pending) are looked at, and a due
	// rotation is reported, not done.
	RotateDue bool
	// Drain, once closed, ends the run gently, as if MaxDuration had run out: no new
	// record is started, steps under way finish. A long-running loop closes it on
	// SIGTERM.
	Drain <-chan struct{}
	// Interrupt, once closed, ends the run as Drain does (steps under way finish their
	// broker call and record its outcome; no new step starts), but as an interruption:
	// the summary says Interrupted and how many records were Left. A command closes it
	// on the first Ctrl-C. It also stops the listing of the work.
	Interrupt <-chan struct{}
	// RetryHorizon, when positive, makes the run wait for what is due within it and
	// end once nothing can progress sooner: a record whose next step (a retry, a poll)
	// is due within RetryHorizon of the run reading it (when it was set before the run)
	// or of its last step waits in the run's queue and is taken up then; one due later
	// is not taken up in this run, but reported as waiting (or in progress) until then.
	// 0: records are driven as long as MaxDuration allows, but one whose first step is
	// not due when the run reads it is left for a later run (a loop's next run, which
	// comes when it is due).
	RetryHorizon time.Duration
	// Observer, if not nil, hears what the run does while it does it.
	Observer Observer
	// TrustUnverifiedAuthors says the user running reconcile by hand trusts the authors
	// the run cannot verify (no trust policy): the run then acts with the user's own
	// rights where a record's author cannot be verified, instead of refusing what needs
	// the author's (see engine.WithRunnersRights). Reconcile in the cluster never sets
	// it.
	TrustUnverifiedAuthors bool
	// TrustRecords are the records (Reconciler.Unvouched) the user running reconcile by
	// hand was shown and agreed to act on with their own rights: as
	// TrustUnverifiedAuthors, for those records only.
	TrustRecords []engine.Unvouched
	// Group, when set, limits the run to this member's share of its shard group, as
	// the group's Leases say at the start of the run (and Shard still applies), plus
	// the records of other members' shares that starved past StarvationBound.
	Group *Group
	// StarvationBound: a record of another member's share that has had work, no live
	// claim and no change for this long, and whose next step was due this long ago, is
	// taken up. Default Group.StarvationBound(0).
	StarvationBound time.Duration

	// owns is the run's share, set by Run: Shard's and Group's.
	owns func(namespace, name string) bool
	// timeUpAt is when MaxDuration runs out, by the run's clock; zero: no bound. Set
	// by Run.
	timeUpAt time.Time
}

// Owns reports whether namespace/name is the run's to drive: in its Shard and, once
// Run listed the shard group, in this member's share.
func (o Options) Owns(namespace, name string) bool {
	if o.owns != nil {
		return o.owns(namespace, name)
	}
	return o.Shard.Owns(namespace, name)
}

// TargetCacheTTL is how long reconcile's engine keeps a broker's record, client and
// class between steps (engine.Config.TargetCacheTTL): many records of one broker are
// polled with one read of them and one connection.
const TargetCacheTTL = 5 * time.Second

// Reconciler drives pending records. Run may be called repeatedly, also by a
// long-running loop: a run keeps all its state to itself.
type Reconciler struct {
	Store  *store.Store
	Engine *engine.Engine
	// SyncBroker fetches a broker's catalog (catalogsync.Syncer.Sync); nil leaves
	// brokers alone.
	SyncBroker func(ctx context.Context, b *v1alpha1.Broker) error
	// Now is the clock the engine uses; default time.Now.
	Now func() time.Time
	// ClaimTTL is how long a broker claim lasts; default 2 minutes.
	ClaimTTL time.Duration
	// Logf, if not nil, logs what a run's summary cannot hold: the stack of a step
	// that failed hard (see visitSafely).
	Logf func(format string, args ...any)

	// floors is the run's own retry floor of the records that failed (floor.go).
	floors retryFloors
	// holdClaimFor replaces the constant of that name in tests.
	holdClaimFor time.Duration
	// stepInstance replaces the engine's StepInstance in tests.
	stepInstance func(context.Context, *v1alpha1.ServiceInstance) (engine.Result, error)
	// clock times the run itself: when a queued record is due, the waits between
	// steps, MaxDuration and Took. It is the wall clock (Now may be skewed: only
	// durations are taken from this one); tests replace it with a fake one.
	clock clock.WithDelayedExecution
}

// work is one record to drive.
type work struct {
	kind, namespace, name string
	broker                *v1alpha1.Broker // read already (brokers are listed in full)
	// adopt: a namespace-scoped broker recorded without store.Finalizer, to be given it
	// (engine.Engine.AdoptBroker).
	adopt bool
	// rotate: a binding whose renew_before has passed, to be rotated (--rotate-due).
	rotate bool
}

func (w work) key() string { return w.kind + "/" + w.namespace + "/" + w.name }

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) runClock() clock.WithDelayedExecution {
	if r.clock != nil {
		return r.clock
	}
	return clock.RealClock{}
}

// Run finds the work and drives it. ctx ends the run at once (an interruption: broker
// calls under way are abandoned, their records left pending); MaxDuration ends it
// gently. An error means the work could not be listed; failures of single records are
// in the summary.
func (r *Reconciler) Run(ctx context.Context, o Options) (Summary, error) {
	if o.TrustUnverifiedAuthors {
		ctx = engine.WithRunnersRights(ctx)
	}
	if len(o.TrustRecords) > 0 {
		ctx = engine.WithRunnersRightsFor(ctx, o.TrustRecords)
	}
	ctx = engine.AsReconcile(ctx)
	clk := r.runClock()
	start := clk.Now()
	runCtx := ctx
	if o.MaxDuration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		o.timeUpAt = start.Add(o.MaxDuration)
		timeUp := clk.AfterFunc(o.MaxDuration, cancel)
		defer timeUp.Stop()
	}
	// listCtx is what the listing runs with: an interruption stops it too.
	listCtx := ctx
	var interrupted atomic.Bool
	// stopped sees whether Drain or Interrupt is closed, and if so ends runCtx (and,
	// for Interrupt, the listing) and latches the interruption. A goroutine calls it
	// as soon as either closes; the run calls it too whenever it asks, so that what
	// the schedule saw closed is never reported as not interrupted because that
	// goroutine has not run yet.
	stopped := func() bool { return false }
	if o.Drain != nil || o.Interrupt != nil {
		var cancel, cancelList context.CancelFunc
		runCtx, cancel = context.WithCancel(runCtx)
		defer cancel()
		listCtx, cancelList = context.WithCancel(ctx)
		defer cancelList()
		stopped = func() bool {
			select {
			case <-o.Interrupt:
				interrupted.Store(true)
				cancelList()
			case <-o.Drain:
			default:
				return false
			}
			cancel()
			return true
		}
		if !stopped() {
			go func() {
				select {
				case <-o.Drain:
				case <-o.Interrupt:
				case <-runCtx.Done():
					return
				}
				stopped()
			}()
		}
	}
	sum := Summary{DryRun: o.DryRun, Shard: o.Shard.String(), Counts: map[Outcome]int{}}
	isInterrupted := func() bool {
		stopped()
		return interrupted.Load()
	}
	todo, pre, group, owns, err := r.selectWork(listCtx, o)
	sum.Group = group
	o.owns = owns
	if err != nil {
		sum.Interrupted = isInterrupted()
		if sum.Interrupted && ctx.Err() == nil {
			err = fmt.Errorf("interrupted: %w", context.Canceled)
		}
		return sum, err
	}
	obs := o.observer()
	for _, it := range pre {
		obs.RecordQueued(RefOf(it))
		obs.RecordFinished(it)
	}
	items, left := r.schedule(ctx, runCtx, todo, pre, o, isInterrupted)
	sum.Items = append(pre, items...)
	Sort(sum.Items)
	for _, it := range sum.Items {
		sum.Counts[it.Outcome]++
	}
	sum.Interrupted = isInterrupted()
	if sum.Interrupted {
		sum.Left = left
	}
	sum.TimeUp = runCtx.Err() != nil && ctx.Err() == nil && !sum.Interrupted
	sum.Took = clk.Since(start).Round(time.Millisecond).String()
	return sum, ctx.Err()
}

// Sort orders items by namespace, kind and name.
func Sort(items []Item) {
	slices.SortFunc(items, func(a, b Item) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
}

// Pool runs do(0..n-1) on workers goroutines and returns the items in order. Once ctx
// is done, records not yet started get notRun(i) instead; started ones finish.
func Pool(ctx context.Context, workers, n int, do, notRun func(i int) Item) []Item {
	out := make([]Item, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = do(i)
			}
		}()
	}
	i := 0
feed:
	for ; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for ; i < n; i++ {
		out[i] = notRun(i)
	}
	return out
}

// Select lists the work of a run: brokers, instances and bindings labelled pending or
// being deleted (one metadata-only list), brokers whose relist is due and, with
// RotateDue, bindings whose credentials are due for rotation, in the shard (and, in a
// shard group, in this member's share). Records another driver holds a live claim on
// are not read: they come back as Skipped items.
func (r *Reconciler) Select(ctx context.Context, o Options) ([]work, []Item, error) {
	todo, pre, _, _, err := r.selectWork(ctx, o)
	return todo, pre, err
}

// selectWork is Select, with the shard group's summary and the run's share.
func (r *Reconciler) selectWork(ctx context.Context, o Options) (todo []work, pre []Item, gs *GroupSummary, owns func(namespace, name string) bool, err error) {
	owns = o.Shard.Owns
	// A record of another member's share taken up because it starved.
	starved := func(string, string, string, string, *store.Lease, *time.Time) bool { return false }
	if g := o.Group; g != nil {
		a, gerr := g.Assignment(ctx)
		gs = &GroupSummary{Name: g.Name, Members: a.Members}
		if gerr != nil {
			gs.Error = gerr.Error()
		}
		owns = func(namespace, name string) bool { return o.Shard.Owns(namespace, name) && a.Owns(namespace, name) }
		bound := cmp.Or(o.StarvationBound, g.StarvationBound(0))
		keep := map[string]bool{}
		defer func() {
			if err == nil {
				g.forget(keep)
			}
		}()
		starved = func(kind, namespace, name, rv string, l *store.Lease, dueAt *time.Time) bool {
			if !o.Shard.Owns(namespace, name) {
				return false
			}
			key := work{kind: kind, namespace: namespace, name: name}.key()
			keep[key] = true
			now := r.now()
			if !g.starved(key, rv, l != nil && l.Live(now), bound, now) {
				return false
			}
			if dueAt != nil && now.Before(dueAt.Add(bound)) {
				return false
			}
			if dueAt == nil && !r.safeBool(KindWord(kind)+" "+namespace+"/"+name, func() bool { return r.overdue(ctx, kind, namespace, name, bound, now) }) {
				return false
			}
			gs.TakenOver++
			return true
		}
	}
	defer func() {
		if gs != nil && err == nil {
			gs.Owned = len(todo) + len(pre)
		}
	}()
	pending, ids, err := r.Store.ListPendingWithIDs(ctx, o.Namespace)
	if err != nil {
		return nil, nil, gs, owns, err
	}
	if gs != nil {
		gs.Listed = len(pending)
	}
	// The same list tells which records use which OSB ids: the engine's check that no
	// older record uses a record's id needs no list per record (the check is
	// cluster-wide: only the index of a list of every namespace answers it).
	r.Engine.UseIDIndex(ids)
	now := r.now()
	holder := r.Engine.Holder()
	index := map[string]int{} // work key -> position in todo, -1 when skipped
	skip := func(kind, namespace, name string, l *store.Lease) bool {
		// A claim whose process has ended is looked at in full: it may be taken over.
		if l == nil || l.Holder == holder || !l.Live(now) || l.Abandoned() {
			return false
		}
		until := l.ExpiresAt
		pre = append(pre, Item{Namespace: namespace, Kind: kind, Name: name, Outcome: Skipped, Until: &until,
			Detail: fmt.Sprintf("%s holds it until %s", l.Holder, until.UTC().Format(time.RFC3339))})
		return true
	}
	for _, p := range pending {
		switch p.Kind {
		case v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding, v1alpha1.KindBroker:
		default:
			continue
		}
		if !owns(p.Namespace, p.Name) && !starved(p.Kind, p.Namespace, p.Name, p.ResourceVersion, p.Lease, nil) {
			continue
		}
		w := work{kind: p.Kind, namespace: p.Namespace, name: p.Name}
		if skip(p.Kind, p.Namespace, p.Name, p.Lease) {
			index[w.key()] = -1
			continue
		}
		index[w.key()] = len(todo)
		todo = append(todo, w)
	}
	if r.SyncBroker != nil {
		// A relist that is merely due is not pending work: brokers being few, they are
		// listed in full to find it.
		brokers, err := r.Store.Brokers().List(ctx, o.Namespace, store.Filter{})
		if err != nil {
			bad, ok := store.Unreadable(err)
			if !ok {
				return nil, nil, gs, owns, err
			}
			// A ConfigMap that does not hold a readable broker fails on its own and
			// hides no other record.
			for _, e := range bad {
				w := work{kind: v1alpha1.KindBroker, namespace: e.Namespace, name: e.Name}
				if _, seen := index[w.key()]; seen || !owns(e.Namespace, e.Name) {
					continue
				}
				index[w.key()] = -1
				pre = append(pre, failed(Item{Namespace: e.Namespace, Kind: w.kind, Name: e.Name}, unreadable(e)))
			}
		}
		for _, b := range brokers {
			w := work{kind: v1alpha1.KindBroker, namespace: b.Namespace, name: b.Name, broker: b}
			// A namespace-scoped broker recorded by an older release holds none of its
			// instances yet: this run gives it the finalizer.
			w.adopt = store.HoldsInstances(b) && !slices.Contains(b.Finalizers, store.Finalizer) && b.DeletionTimestamp == nil
			mine := owns(b.Namespace, b.Name)
			if at := b.Status.NextRelistAt; !mine && at != nil && b.DeletionTimestamp == nil && !w.adopt {
				if _, seen := index[w.key()]; !seen {
					var l *store.Lease
					if x, ok := store.LeaseOf(b); ok {
						l = &x
					}
					mine = !now.Before(at.Time) && starved(w.kind, b.Namespace, b.Name, b.ResourceVersion, l, &at.Time)
				}
			}
			if i, seen := index[w.key()]; seen || !mine {
				if seen && i >= 0 {
					todo[i].adopt = w.adopt
				}
				continue
			}
			if at := b.Status.NextRelistAt; w.adopt || at != nil && !now.Before(at.Time) && b.DeletionTimestamp == nil {
				todo = append(todo, w)
			}
		}
	}
	if o.RotateDue {
		// A rotation that is merely due is not pending work either: the bindings are
		// listed in full (page by page) to find it.
		bindings, err := r.Store.Bindings().List(ctx, o.Namespace, store.Filter{})
		if _, ok := store.Unreadable(err); err != nil && !ok {
			return nil, nil, gs, owns, err
		}
		// An unreadable binding ConfigMap does not hide the others; if it has work, the
		// pending list above shows it, and reading it fails visibly.
		for _, b := range bindings {
			if b.DeletionTimestamp != nil || !engine.RotationDue(b, now) || !owns(b.Namespace, b.Name) {
				continue
			}
			w := work{kind: v1alpha1.KindServiceBinding, namespace: b.Namespace, name: b.Name, rotate: true}
			i, seen := index[w.key()]
			switch {
			case seen && i >= 0:
				todo[i].rotate = true
			case seen:
				// Skipped already: someone else holds it.
			default:
				var lease *store.Lease
				if l, ok := store.LeaseOf(b); ok {
					lease = &l
				}
				if !skip(w.kind, w.namespace, w.name, lease) {
					todo = append(todo, w)
				}
			}
		}
	}
	return todo, pre, gs, owns, nil
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

// brokerDue says whether b's catalog is to be fetched at now, and when it will be
// otherwise.
func brokerDue(b *v1alpha1.Broker, now time.Time) (bool, *time.Time) {
	if b.Generation != b.Status.ObservedGeneration {
		return true, nil
	}
	if rt := b.Status.Retry; rt != nil && rt.NextRetryAt != nil && now.Before(rt.NextRetryAt.Time) {
		t := rt.NextRetryAt.Time
		return false, &t
	}
	if b.Status.Retry != nil {
		return true, nil
	}
	if at := b.Status.NextRelistAt; at != nil && !now.Before(at.Time) {
		return true, nil
	}
	return false, nil
}

// driveBroker fetches a broker's catalog when it is due. A broker being deleted is
// released once none of its instances is left; waits reports that instances still
// hold it.
func (r *Reconciler) driveBroker(ctx context.Context, w work, it Item, dryRun bool) (_ Item, waits bool) {
	b := w.broker
	if b == nil {
		var err error
		b, err = r.Store.Brokers().Get(ctx, w.namespace, w.name)
		if store.IsNotFound(err) {
			it.Outcome, it.Detail = Done, "gone"
			return it, false
		}
		if _, bad := store.Unreadable(err); bad {
			return failed(it, unreadable(err)), false
		}
		if err != nil {
			return failed(it, err), false
		}
	}
	if b.DeletionTimestamp != nil {
		return r.releaseBroker(ctx, b, it, dryRun)
	}
	if r.SyncBroker == nil {
		it.Outcome, it.Detail = Done, "nothing to do"
		return it, false
	}
	now := r.now()
	due, until := brokerDue(b, now)
	if w.adopt {
		switch {
		case dryRun && !due:
			it.Outcome, it.Detail = WouldDrive, "add the finalizer that keeps it until its instances are gone"
			return it, false
		case !dryRun:
			adopted, err := r.Engine.AdoptBroker(ctx, b)
			if rf, ok := engine.AsRefused(err); ok {
				// The catalog fetch that may be due is checked on its own: its refusal,
				// if any, goes into the broker's status.
				if adopted != nil {
					b = adopted
				}
				if !due {
					it.Outcome, it.Detail = Refused, "finalizer added, but its credentials Secret is left unprotected: "+rf.Message
					return it, false
				}
				it = r.syncBroker(ctx, b, it, due, until, dryRun)
				if it.Outcome != Refused {
					it.Outcome, it.Detail = Refused, "finalizer added, but its credentials Secret is left unprotected: "+rf.Message+"; "+it.Detail
				}
				return it, false
			}
			if err != nil {
				return failed(it, fmt.Errorf("cannot add the finalizer that keeps it until its instances are gone: %w", err)), false
			}
			b = adopted
			it.Steps++
			if !due {
				it.Outcome, it.Detail = Done, "finalizer added: it is kept until its instances are gone"
				return it, false
			}
		}
	}
	return r.syncBroker(ctx, b, it, due, until, dryRun), false
}

// releaseBroker removes the finalizer of broker b, being deleted, and of its
// credentials Secret, once no instance of b is left in its namespace.
func (r *Reconciler) releaseBroker(ctx context.Context, b *v1alpha1.Broker, it Item, dryRun bool) (Item, bool) {
	if !slices.Contains(b.Finalizers, store.Finalizer) {
		it.Outcome, it.Detail = Done, "nothing to do"
		return it, false
	}
	insts, err := catalogsync.InstancesOf(ctx, r.Store, b)
	if err != nil {
		return failed(it, fmt.Errorf("cannot tell whether instances still need the broker: %w", err)), false
	}
	if len(insts) > 0 {
		it.Outcome, it.Detail = Waiting, "being deleted: "+KeptForInstances(insts)
		return it, true
	}
	if dryRun {
		it.Outcome, it.Detail = WouldDrive, "remove the finalizer: no instance of the broker is left"
		return it, false
	}
	it.Steps++
	if err := r.Store.ReleaseBroker(ctx, b); err != nil {
		return failed(it, fmt.Errorf("cannot remove the finalizer: %w", err)), false
	}
	it.Outcome, it.Detail = Done, "deleted: no instance of the broker is left"
	return it, false
}

// KeptForInstances says why a broker being deleted is kept: the instances of it that
// are left (at most five named).
func KeptForInstances(insts []*v1alpha1.ServiceInstance) string {
	names := make([]string, 0, len(insts))
	for _, in := range insts {
		names = append(names, in.Name)
	}
	slices.Sort(names)
	list := strings.Join(names[:min(len(names), 5)], ", ")
	if len(names) > 5 {
		list += fmt.Sprintf(" and %d more", len(names)-5)
	}
	if len(names) == 1 {
		return fmt.Sprintf("kept until its instance %s is deprovisioned", list)
	}
	return fmt.Sprintf("kept until its %d instances (%s) are deprovisioned", len(names), list)
}

// syncBroker fetches b's catalog under a claim when it is due.
func (r *Reconciler) syncBroker(ctx context.Context, b *v1alpha1.Broker, it Item, due bool, until *time.Time, dryRun bool) Item {
	if !due {
		if until != nil {
			it.Outcome, it.Until, it.Detail = Waiting, until, "next: fetch the catalog again"
			if rt := b.Status.Retry; rt != nil {
				it.Detail = fmt.Sprintf("attempt %d failed: %s", rt.Attempts, rt.LastError)
			}
		} else {
			it.Outcome, it.Detail = Done, "catalog up to date"
		}
		return it
	}
	if dryRun {
		it.Outcome, it.Detail = WouldDrive, "fetch the catalog"
		return it
	}
	ttl := cmp.Or(r.ClaimTTL, 2*time.Minute)
	holder := r.Engine.Holder()
	claimed, err := r.Store.Brokers().Claim(ctx, b, holder, ttl)
	if store.IsClaimed(err) {
		it.Outcome, it.Detail = Skipped, "another driver is fetching its catalog"
		return it
	}
	if err != nil {
		return failed(it, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, _ = r.Store.Brokers().Release(rctx, claimed, holder)
		cancel()
	}()
	it.Steps++
	if err := r.SyncBroker(ctx, claimed); err != nil {
		if ctx.Err() != nil {
			it.Outcome, it.Detail = InProgress, "interrupted; left pending"
			return it
		}
		// A failed fetch is recorded with its retry in the broker's status: it is
		// retried, like a broker call of an instance.
		it.Outcome, it.Detail = Waiting, err.Error()
		var fe *catalogsync.FetchError
		if errors.As(err, &fe) && fe.Reason == catalogsync.ReasonRefused {
			it.Outcome = Refused
			return it
		}
		if fresh, gerr := r.Store.Brokers().Get(ctx, b.Namespace, b.Name); gerr == nil && fresh.Status.Retry != nil && fresh.Status.Retry.NextRetryAt != nil {
			t := fresh.Status.Retry.NextRetryAt.Time
			it.Until = &t
		} else if gerr != nil && !store.IsNotFound(gerr) {
			return failed(it, errors.Join(err, gerr))
		}
		if it.Until == nil {
			it.Outcome = InProgress
		}
		return it
	}
	it.Outcome, it.Detail = Done, "catalog fetched"
	return it
}
