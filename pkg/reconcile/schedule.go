package reconcile

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// How a run schedules its records
//
// A worker takes one engine step on a record and moves on. When the step asks to be
// called again after d (the next poll of an asynchronous operation, a retry), the
// record goes into a queue ordered by due time and comes back to a free worker when it
// is due. Workers are busy only while a step runs, so W workers keep far more than W
// operations in flight at the brokers.
//
// A record whose first step is not due when the run reads it (a poll or a retry an
// earlier command or run set) is queued the same way, until the second its status
// names has passed, when the run has a retry horizon and the step is due within it
// (waitUntilDue); otherwise it is reported waiting and left for a later run. An
// instance being deleted that waits for its bindings is not queued by time: it is
// stepped again when one of the run's bindings is gone, and finished as waiting once
// no binding is left to drive.
//
// Claims. An asynchronous operation's poll claims the record and renews the claim in
// the engine (StepInstance, StepBinding) as it runs low, so the run holds the claim of
// a record it polls. A record whose next step is due within holdClaimFor keeps that
// claim while it is queued, so that no other reconcile or command takes it over between
// two polls; its next step uses the copy the last step stored. A record due later is
// released when it is queued (the claim never outlives the wait unrenewed) and read
// again when it is due, and a live claim someone else took meanwhile is respected. When
// the run stops working on a record (it settled, failed, the run's time is up or it
// was interrupted), its claim is released.

// holdClaimFor: a record whose next step is due within this keeps its claim while it
// waits in the queue. It must stay well below the engine's claim TTL.
const holdClaimFor = 5 * time.Second

// minPollWait is the shortest wait between two polls of an operation.
const minPollWait = 50 * time.Millisecond

// maxImmediate bounds the steps in a row that ask to be called again at once (a
// re-read after a conflict, orphan mitigation after a failed call): the record is left
// for the next run rather than spun on.
const maxImmediate = 20

// task is one record of a run.
type task struct {
	w   work
	it  Item
	rec record // nil for a broker
	// due is when the record's next step is due, by the run's clock.
	due time.Time
	seq int // first in, first out among tasks due at the same time
	// started: a worker took the record up at least once.
	started bool
	// held: the run holds the record's claim and rec is the copy the last step stored;
	// the next step uses it without reading the record again.
	held bool
	// done: the record's item is final.
	done      bool
	immediate int
	last      engine.Result
	// rotationBlocked: a rotation was due but an operation was in flight.
	rotationBlocked bool
	// more is work this visit found: the bindings an instance's deletion waits for.
	more []work
	// followed: the bindings of the instance were looked up already.
	followed bool
	// park: a broker being deleted waits for its instances; parked: it did once. It
	// is visited again once the run has no instance or binding of its namespace left
	// to drive, so that one run deprovisions them and then releases the broker.
	park, parked bool
	// finishedAtStart: how many records of its namespace the run had finished when
	// this visit started.
	finishedAtStart int
	// checked: the checks before a record's first step were made (its claim, whether
	// it needs the user, whether its step is due, its retry floor).
	checked bool
	// waited: its first step was not due when it was read, and it was queued until it
	// was (waitUntilDue); it is not waited for twice.
	waited bool
	// blocked: an instance being deleted whose last step found bindings still there.
	// It is stepped again when one of the run's bindings is gone (its own, or one the
	// run could not read), and finished for this run when no binding of the run is left
	// to drive.
	blocked bool
	// bindingsAtStart: how many bindings the run had found gone when this visit
	// started.
	bindingsAtStart int
	// gone: the record was found gone (deleted by its last step, or meanwhile).
	gone bool
}

// Fairness. Records of one namespace are written by whoever may write ConfigMaps there,
// and a tenant's brokers may be slow on purpose (tarpits): each call then holds a worker
// until the broker client's timeout. So the queue is kept per namespace, due records
// are taken up round robin between namespaces, and a namespace gets at most its share
// of the workers (the workers divided among the namespaces that have work queued or
// under way, at least one) while another has due work waiting. A namespace alone uses
// every worker; forty slow brokers in one namespace hold its share, and the records of
// the others are driven beside them.

// fairQueue is the run's queue: a heap by due time per namespace.
type fairQueue struct {
	byNS map[string]*queue
	// order is the namespaces in the order they first queued; next is where the next
	// round robin starts.
	order []string
	next  int
	n     int
	// busy counts the workers each namespace holds.
	busy map[string]int
}

func newFairQueue() *fairQueue {
	return &fairQueue{byNS: map[string]*queue{}, busy: map[string]int{}}
}

func (f *fairQueue) len() int { return f.n }

func (f *fairQueue) push(t *task) {
	q := f.byNS[t.w.namespace]
	if q == nil {
		q = &queue{}
		f.byNS[t.w.namespace] = q
		f.order = append(f.order, t.w.namespace)
	}
	heap.Push(q, t)
	f.n++
}

// share is how many workers of workers one namespace may hold now.
func (f *fairQueue) share(workers int) int {
	active := 0
	for _, ns := range f.order {
		if f.byNS[ns].Len() > 0 || f.busy[ns] > 0 {
			active++
		}
	}
	return max(1, (workers+active-1)/max(active, 1))
}

// pop takes the first due task of the next namespace in turn that holds fewer than
// share workers; nil when there is none.
func (f *fairQueue) pop(now time.Time, share int) *task {
	for i := range f.order {
		k := (f.next + i) % len(f.order)
		ns := f.order[k]
		q := f.byNS[ns]
		if q.Len() == 0 || f.busy[ns] >= share || (*q)[0].due.After(now) {
			continue
		}
		f.next = k + 1
		f.n--
		f.busy[ns]++
		return heap.Pop(q).(*task)
	}
	return nil
}

// done gives back the worker t's namespace held.
func (f *fairQueue) done(t *task) { f.busy[t.w.namespace]-- }

// earliest is when the first task of a namespace that may take a worker is due.
func (f *fairQueue) earliest(share int) (time.Time, bool) {
	var at time.Time
	found := false
	for _, ns := range f.order {
		q := f.byNS[ns]
		if q.Len() == 0 || f.busy[ns] >= share {
			continue
		}
		if d := (*q)[0].due; !found || d.Before(at) {
			at, found = d, true
		}
	}
	return at, found
}

// all is every queued task, by due time.
func (f *fairQueue) all() []*task {
	var ts []*task
	for _, ns := range f.order {
		ts = append(ts, *f.byNS[ns]...)
	}
	slices.SortFunc(ts, func(a, b *task) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return ts
}

// queue is a heap of tasks by due time.
type queue []*task

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*task)) }
func (q *queue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return t
}

// schedule drives the records of todo on o.Workers workers until each is finished for
// this run, runCtx is done, or ctx is (an interruption), and returns their items and
// how many records were left with a step still to take. Records of pre have their item
// already and are not taken up. interrupted says whether runCtx ended by
// Options.Interrupt.
func (r *Reconciler) schedule(ctx, runCtx context.Context, todo []work, pre []Item, o Options, interrupted func() bool) ([]Item, int) {
	workers := max(o.Workers, 1)
	obs := o.observer()
	var tasks []*task
	q := newFairQueue()
	known := map[string]bool{}
	// open counts, per namespace, the instances and bindings whose item is not final;
	// finished, those whose item became final.
	open := map[string]int{}
	finished := map[string]int{}
	var parked []*task
	// openBindings counts the bindings whose item is not final, goneBindings those the
	// run found gone (unbound, or deleted meanwhile); blocked are the instances parked
	// until a binding they wait for is gone, by work key.
	openBindings, goneBindings := 0, 0
	blocked := map[string]*task{}
	for _, it := range pre {
		known[work{kind: it.Kind, namespace: it.Namespace, name: it.Name}.key()] = true
	}
	add := func(w work) *task {
		if known[w.key()] {
			return nil
		}
		known[w.key()] = true
		t := &task{w: w, seq: len(tasks), it: Item{Namespace: w.namespace, Kind: w.kind, Name: w.name}}
		if w.kind != v1alpha1.KindBroker {
			t.rec = r.recordOf(w)
			open[w.namespace]++
		}
		if w.kind == v1alpha1.KindServiceBinding {
			openBindings++
		}
		tasks = append(tasks, t)
		obs.RecordQueued(t.ref())
		return t
	}
	for _, w := range todo {
		if t := add(w); t != nil {
			q.push(t)
		}
	}

	// finish counts a task whose item became final.
	finish := func(t *task) {
		if t.rec != nil {
			open[t.w.namespace]--
			finished[t.w.namespace]++
		}
		obs.RecordFinished(finalItem(t))
	}

	in := make(chan *task, workers)
	out := make(chan *task, workers)
	var wg sync.WaitGroup
	for range min(workers, len(tasks)) {
		wg.Go(func() {
			for t := range in {
				r.visitSafely(ctx, t, o)
				out <- t
			}
		})
	}
	clk := r.runClock()
	timer := clk.NewTimer(time.Hour)
	timer.Stop()
	seq, busy := len(tasks), 0
	for {
		// Drain and Interrupt end runCtx; looking at them too starts no step once
		// they are closed, even before runCtx says so.
		running := runCtx.Err() == nil && !closed(o.Drain) && !closed(o.Interrupt)
		if running {
			now := clk.Now()
			share := q.share(workers)
			for busy < workers {
				t := q.pop(now, share)
				if t == nil {
					break
				}
				busy++
				t.finishedAtStart = finished[t.w.namespace]
				t.bindingsAtStart = goneBindings
				in <- t
			}
		}
		if busy == 0 && (q.len() == 0 || !running) {
			break
		}
		var wake <-chan time.Time
		var stop <-chan struct{}
		if running {
			stop = runCtx.Done()
			if at, ok := q.earliest(q.share(workers)); busy < workers && ok {
				timer.Reset(at.Sub(clk.Now()))
				wake = timer.C()
			}
		}
		select {
		case t := <-out:
			busy--
			q.done(t)
			for _, w := range t.more {
				if n := add(w); n != nil {
					n.seq, seq = seq, seq+1
					q.push(n)
				}
			}
			t.more = nil
			switch {
			case t.park:
				t.park = false
				switch {
				case open[t.w.namespace] > 0:
					parked = append(parked, t)
					obs.StepScheduled(t.ref(), time.Time{}, t.it.Detail)
				case finished[t.w.namespace] > t.finishedAtStart:
					// The last of its namespace's records finished while it looked (a
					// worker deprovisioned the instance it found): it looks again.
					t.due, t.seq, seq = clk.Now(), seq, seq+1
					q.push(t)
					obs.StepScheduled(t.ref(), t.due, t.it.Detail)
				default:
					t.done = true // nothing of its namespace left to drive in this run
				}
			case t.blocked:
				t.blocked = false
				switch {
				case goneBindings > t.bindingsAtStart:
					// A binding went while it looked: it looks again at once.
					t.due, t.seq, seq = clk.Now(), seq, seq+1
					q.push(t)
					obs.StepScheduled(t.ref(), t.due, t.it.Detail)
				case openBindings > 0:
					blocked[t.w.key()] = t
					obs.StepScheduled(t.ref(), time.Time{}, t.it.Detail)
				default:
					// No binding is left to drive in this run: nothing can progress on
					// it until a later run. Its item says what it waits for.
					t.done = true
				}
			case !t.done:
				t.seq, seq = seq, seq+1
				q.push(t)
				obs.StepScheduled(t.ref(), t.due, scheduledWhy(t))
			}
			if t.done {
				finish(t)
				if t.w.kind == v1alpha1.KindServiceBinding {
					openBindings--
					if t.gone {
						goneBindings++
					}
					// Once a binding is gone, the instance it belonged to (any, when the
					// run never read it) looks again; once no binding is left to drive,
					// the instances still waiting can make no progress in this run.
					for _, b := range sortedTasks(blocked) {
						switch k := b.w.key(); {
						case t.gone && (k == bindingInstanceKey(t) || !t.rec.loaded()):
							delete(blocked, k)
							b.due, b.seq, seq = clk.Now(), seq, seq+1
							q.push(b)
							obs.StepScheduled(b.ref(), b.due, b.it.Detail)
						case openBindings == 0:
							delete(blocked, k)
							b.done = true // its item says what it waits for
							finish(b)
						}
					}
				}
			}
			parked = slices.DeleteFunc(parked, func(p *task) bool {
				if open[p.w.namespace] > 0 {
					return false
				}
				p.due, p.seq, seq = clk.Now(), seq, seq+1
				q.push(p)
				return true
			})
		case <-wake:
		case <-stop:
		}
		timer.Stop()
	}
	close(in)
	wg.Wait()
	for _, p := range parked {
		p.done = true // its item says what it waits for
		obs.RecordFinished(finalItem(p))
	}
	// Instances still waiting for bindings when the time ran out (or the run was
	// interrupted): their item says what they wait for.
	for _, b := range sortedTasks(blocked) {
		b.done = true
		obs.RecordFinished(finalItem(b))
	}

	// What is still queued is left for the next run: the time is up, or the run was
	// interrupted.
	left := q.all()
	stopped := interrupted()
	Pool(context.WithoutCancel(ctx), workers, len(left), func(i int) Item {
		r.leaveSafely(ctx, left[i], stopped, o)
		return Item{}
	}, func(int) Item { return Item{} })
	for _, t := range left {
		obs.RecordFinished(finalItem(t))
	}

	items := make([]Item, len(tasks))
	for i, t := range tasks {
		items[i] = finalItem(t)
	}
	return items, len(left)
}

// sortedTasks is the tasks of m in the order they were queued.
func sortedTasks(m map[string]*task) []*task {
	return slices.SortedFunc(maps.Values(m), func(a, b *task) int { return a.seq - b.seq })
}

// bindingInstanceKey is the work key of the instance of binding t, "" when the run
// never read the binding.
func bindingInstanceKey(t *task) string {
	if t.rec == nil || !t.rec.loaded() {
		return ""
	}
	b, ok := t.rec.object().(*v1alpha1.ServiceBinding)
	if !ok {
		return ""
	}
	return work{kind: v1alpha1.KindServiceInstance, namespace: cmp.Or(b.Spec.InstanceNamespace, b.Namespace), name: b.Spec.InstanceName}.key()
}

// closed reports whether c is closed (false for nil).
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// finalItem is the summary's line of a task whose item is final.
func finalItem(t *task) Item {
	it := t.it
	if it.Rotated {
		it.Detail = "rotated; " + it.Detail
	}
	return it
}

func (t *task) ref() Ref { return Ref{Kind: t.w.kind, Namespace: t.w.namespace, Name: t.w.name} }

// scheduledWhy says why a queued record waits: its last failure when a retry is
// scheduled, else what its last step found.
func scheduledWhy(t *task) string {
	if t.rec != nil && t.rec.loaded() {
		if rt := t.rec.object().OpStatus().Retry; rt != nil && rt.LastError != "" {
			return fmt.Sprintf("%s (attempt %d): %s", rt.Reason, rt.Attempts, rt.LastError)
		}
	}
	if t.last.Message != "" {
		return t.last.Message
	}
	return t.it.Detail
}

// visit takes a record's next step, and either finishes its item for this run or sets
// when it is due again. Steps use ctx (only an interruption cuts a broker call short);
// o.timeUpAt says when the run's time is up.
func (r *Reconciler) visit(ctx context.Context, t *task, o Options) {
	first := !t.started
	t.started = true
	obs := o.observer()
	if t.rec == nil {
		obs.StepStarted(t.ref(), ActionBroker)
		it, waits := r.driveBroker(ctx, t.w, t.it, o.DryRun)
		t.it, t.done = it, true
		if waits && !t.parked {
			t.park, t.parked, t.done = true, true, false
		}
		return
	}
	if !t.held {
		if !r.read(ctx, t) {
			return
		}
		next := t.rec.next()
		if next.ClaimedBy != "" && !o.DryRun {
			// A claim its process (of this host) can no longer renew: a killed
			// "--wait", say. Taken over at once where no call may be under way.
			took, err := t.rec.takeOver(ctx)
			if err != nil {
				r.finish(ctx, t, failed(t.it, err))
				return
			}
			if took {
				r.logf("%s: took over the claim of %s, whose process has ended", t.ref(), next.ClaimedBy)
				next = t.rec.next()
			}
		}
		if next.ClaimedBy != "" {
			r.finish(ctx, t, waitingFor(t.it, next, t.rec))
			return
		}
		if !t.checked {
			if first && t.w.rotate && !r.rotate(ctx, t, o.DryRun) {
				return
			}
			next = t.rec.next()
			switch {
			case next.NeedsUser:
				r.finish(ctx, t, needsUser(t.it, t.rec))
				return
			case !next.Due(r.now()):
				// A run never shortens a backoff or a Retry-After. A run by hand waits
				// for one due within its horizon; otherwise a later run takes it up.
				if !t.waited && r.waitUntilDue(t, next, o) {
					return
				}
				r.finish(ctx, t, waitingFor(t.it, next, t.rec))
				return
			case !o.DryRun && r.heldBack(t):
				r.release(ctx, t)
				return
			case o.DryRun:
				t.it.Outcome, t.it.Detail, t.done = WouldDrive, next.Action, true
				return
			}
			t.checked = true
		}
	}

	obs.StepStarted(t.ref(), t.rec.next().Action)
	res, err := t.rec.step(ctx)
	t.it.Steps++
	t.last, t.held = res, false
	r.countFloor(ctx, t, res, err)
	if err == nil && res.Refused {
		t.it.Outcome, t.it.Detail = Refused, res.Message
		r.finish(ctx, t, t.it)
		return
	}
	if err != nil {
		if ctx.Err() != nil {
			t.it.Outcome, t.it.Detail = InProgress, "interrupted; left pending"
			r.finish(ctx, t, t.it)
			return
		}
		if store.IsNotFound(err) {
			// Another driver may have finished the record meanwhile (removed its
			// finalizer, and the API server deleted it): a record that is gone is done.
			// Anything else not found (its broker, a Secret) is this step's failure.
			if found, rerr := t.rec.read(ctx); rerr == nil && !found {
				t.it.Outcome, t.it.Detail, t.done, t.gone = Done, "gone", true, true
				return
			}
		}
		r.finish(ctx, t, failed(t.it, err))
		return
	}
	switch res.State {
	case engine.StateSettled:
		r.finish(ctx, t, r.settled(t, o))
		return
	case engine.StateDeleted:
		t.it.Outcome, t.it.Detail, t.done, t.gone = Done, res.Message, true, true
		return
	case engine.StateNeedsUser:
		r.finish(ctx, t, needsUser(t.it, t.rec))
		return
	}
	next := t.rec.next()
	if next.ClaimedBy != "" {
		r.finish(ctx, t, waitingFor(t.it, next, t.rec))
		return
	}
	r.follow(ctx, t, o)
	if why, ok := waitsForBindings(t.rec); ok {
		// Nothing but its bindings' going moves it on: the scheduler steps it again
		// when one of them is gone, not every poll interval.
		t.blocked = true
		t.it.Outcome, t.it.Until, t.it.Detail = Waiting, nil, why
		r.release(ctx, t)
		return
	}
	wait := res.RequeueAfter
	if op := t.rec.object().OpStatus().InFlight; wait <= 0 && op != nil && op.Async {
		// The next poll is due at once: records keep times to the second, so a
		// sub-second interval reads back as due. Never poll in a tight loop.
		wait = minPollWait
	}
	if wait <= 0 {
		t.immediate++
		if t.immediate > maxImmediate {
			r.finish(ctx, t, progress(t.it, t.rec, res))
			return
		}
		wait = 50 * time.Millisecond * time.Duration(t.immediate)
	} else {
		t.immediate = 0
	}
	if at, ok := r.floors.until(t.w.key(), r.now()); ok {
		wait = max(wait, at.Sub(r.now()))
	}
	now := r.runClock().Now()
	if !o.timeUpAt.IsZero() && now.Add(wait).After(o.timeUpAt) {
		r.finish(ctx, t, progress(t.it, t.rec, res))
		return
	}
	if o.RetryHorizon > 0 && wait > o.RetryHorizon {
		// Nothing can progress on it soon: a run by hand ends rather than wait; a
		// later run takes it up.
		r.finish(ctx, t, progress(t.it, t.rec, res))
		return
	}
	t.due = now.Add(wait)
	if r.keepsClaim(t.rec, wait) {
		t.held = true
		return
	}
	r.release(ctx, t)
}

// waitUntilDue queues a record whose first step is not due yet until it is, when the
// run has a retry horizon (a run by hand) and the step is due within it and before the
// run's time is up; false leaves it to a later run. The time a record gives is stored
// to the second, and the time the broker or the backoff asked for may lie anywhere in
// that second: the record is taken up once the second has passed, never sooner.
func (r *Reconciler) waitUntilDue(t *task, next engine.NextStep, o Options) bool {
	if o.DryRun || o.RetryHorizon <= 0 || next.At.IsZero() || next.ClaimedBy != "" {
		return false
	}
	now := r.now()
	if next.At.Sub(now) > o.RetryHorizon {
		return false
	}
	wait := notBefore(next.At).Sub(now)
	due := r.runClock().Now().Add(wait)
	if !o.timeUpAt.IsZero() && due.After(o.timeUpAt) {
		return false
	}
	t.due, t.waited = due, true
	t.last = engine.Result{Message: waitingFor(t.it, next, t.rec).Detail}
	return true
}

// notBefore is when a step due at at, a time read from a record, may be taken: a time
// to the whole second may have been cut to it when it was stored, so the end of that
// second.
func notBefore(at time.Time) time.Time {
	if at.Equal(at.Truncate(time.Second)) {
		return at.Add(time.Second)
	}
	return at
}

// waitsForBindings reports whether rec is an instance being deleted whose last step
// found bindings still there (engine.ReasonDeprovisionBlockedByExistingBindings), with
// no operation in flight and no retry scheduled, and says what it waits for.
func waitsForBindings(rec record) (string, bool) {
	inst, ok := rec.object().(*v1alpha1.ServiceInstance)
	if !ok || inst == nil || inst.DeletionTimestamp == nil || inst.Status.InFlight != nil || inst.Status.Retry != nil {
		return "", false
	}
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Reason != engine.ReasonDeprovisionBlockedByExistingBindings {
		return "", false
	}
	return c.Message, true
}

// heldBack finishes the item of a record whose retry floor has not passed: it waits,
// whatever its status says.
func (r *Reconciler) heldBack(t *task) bool {
	at, ok := r.floors.until(t.w.key(), r.now())
	if !ok {
		return false
	}
	at = wholeSecond(at)
	t.it.Outcome, t.it.Until, t.done = Waiting, &at, true
	t.it.Detail = "its last steps failed: taken up again no sooner than " + at.UTC().Format(time.RFC3339) +
		" (reconcile's own backoff, which the record's status does not shorten)"
	return true
}

// countFloor counts the outcome of a step of t towards its retry floor: a failure, a
// refusal or a retry scheduled raises it; a record settled or gone clears it.
func (r *Reconciler) countFloor(ctx context.Context, t *task, res engine.Result, err error) {
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil || res.Refused || (res.State == engine.StateWaiting && res.RequeueAfter > 0 && t.rec.loaded() && t.rec.object().OpStatus().Retry != nil):
		r.floors.failed(t.w.key(), r.now(), r.Engine.RetryDelay)
	case res.State == engine.StateSettled || res.State == engine.StateDeleted:
		r.floors.cleared(t.w.key())
	}
}

// follow finds the bindings an instance's deletion waits for (the engine marked them
// for deletion in this step) and adds them to the run, so that one run unbinds and
// then deprovisions. Bindings of another shard are left to that shard's run.
func (r *Reconciler) follow(ctx context.Context, t *task, o Options) {
	if t.followed || t.w.kind != v1alpha1.KindServiceInstance {
		return
	}
	c := meta.FindStatusCondition(t.rec.object().OpStatus().Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Reason != engine.ReasonDeprovisionBlockedByExistingBindings {
		return
	}
	t.followed = true
	bindings, err := r.Store.Bindings().List(ctx, t.w.namespace, store.Filter{Instance: t.w.name})
	if err != nil && bindings == nil {
		return // the instance says what it waits for; the next run finds them pending
	}
	for _, b := range bindings {
		if o.Owns(b.Namespace, b.Name) {
			t.more = append(t.more, work{kind: v1alpha1.KindServiceBinding, namespace: b.Namespace, name: b.Name})
		}
	}
}

// read reads the record; false when its item is final (gone, unreadable).
func (r *Reconciler) read(ctx context.Context, t *task) bool {
	found, err := t.rec.read(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		t.it.Outcome, t.it.Detail = InProgress, "interrupted; left pending"
	case store.IsCorrupt(err) || store.IsUnsupportedFormat(err):
		t.it = failed(t.it, unreadable(err))
	case err != nil:
		t.it = failed(t.it, err)
	case !found:
		t.it.Outcome, t.it.Detail, t.gone = Done, "gone", true
	default:
		return true
	}
	t.done = true
	return false
}

// rotate starts the rotation of a binding's credentials whose renew_before has passed
// (--rotate-due); false when the item is final (a dry run, a failure).
func (r *Reconciler) rotate(ctx context.Context, t *task, dryRun bool) bool {
	b, ok := t.rec.object().(*v1alpha1.ServiceBinding)
	if !ok || b.DeletionTimestamp != nil || !engine.RotationDue(b, r.now()) {
		return true // rotated meanwhile, or being unbound
	}
	if engine.CheckBindingChangeable(b) != nil || b.Status.Bound.BindingID != b.CurrentExternalID() {
		// An operation (maybe a rotation) is under way: it is driven first, and a
		// rotation still due after it is the next run's.
		t.rotationBlocked = true
		return true
	}
	if dryRun {
		t.it.Outcome, t.it.Detail, t.done = WouldDrive, "rotate the credentials: "+rotationReason(b), true
		return false
	}
	if _, err := r.Engine.RotateScheduled(ctx, b.Namespace, b.Name); err != nil {
		if ctx.Err() != nil {
			t.it.Outcome, t.it.Detail, t.done = InProgress, "interrupted; left pending", true
			return false
		}
		t.it, t.done = failed(t.it, fmt.Errorf("cannot rotate the credentials: %w", err)), true
		return false
	}
	t.it.Rotated = true
	return r.read(ctx, t)
}

func rotationReason(b *v1alpha1.ServiceBinding) string {
	return "the broker's renew_before passed at " + b.Status.Bound.RenewBefore.UTC().Format(time.RFC3339)
}

// settled is the item of a record that settled. A binding whose rotation is due and
// was not done in this run says so.
func (r *Reconciler) settled(t *task, o Options) Item {
	it := t.it
	it.Outcome, it.Detail = Done, "ready"
	if b, ok := t.rec.object().(*v1alpha1.ServiceBinding); ok && engine.RotationDue(b, r.now()) {
		it.Outcome = Waiting
		it.Detail = "ready; rotation due: " + rotationReason(b)
		if o.RotateDue && t.rotationBlocked {
			it.Detail += " (an operation was in flight; the next run rotates it)"
		} else if !o.RotateDue {
			it.Detail += ` ("reconcile --rotate-due" rotates it)`
		}
	}
	return it
}

// keepsClaim reports whether a record queued for wait keeps the run's claim: the wait
// is short and the claim outlasts it comfortably.
func (r *Reconciler) keepsClaim(rec record, wait time.Duration) bool {
	hold := cmp.Or(r.holdClaimFor, holdClaimFor)
	if wait >= hold {
		return false
	}
	l, ok := store.LeaseOf(rec.object())
	return ok && l.Holder == r.Engine.Holder() && l.ExpiresAt.After(r.now().Add(wait+hold))
}

// finish makes it the task's final item and releases the run's claim on the record.
// The record is the copy last read or stored, so this writes only when that copy
// carries the run's claim.
func (r *Reconciler) finish(ctx context.Context, t *task, it Item) {
	t.it, t.done = it, true
	r.release(ctx, t)
}

// release drops the run's claim on the record, even when ctx was interrupted. A failure
// is not reported: the claim then lapses by itself.
func (r *Reconciler) release(ctx context.Context, t *task) {
	if t.rec == nil || !t.rec.loaded() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = t.rec.release(rctx)
	t.held = false
}

// leave finishes the item of a record still queued when the run ends. interrupted:
// Options.Interrupt ended it.
func (r *Reconciler) leave(ctx context.Context, t *task, interrupted bool) {
	switch {
	case !t.started && (ctx.Err() != nil || interrupted):
		t.it.Outcome, t.it.Detail = InProgress, "not reached: interrupted"
	case !t.started:
		t.it.Outcome, t.it.Detail = InProgress, "not reached: --max-duration ran out first"
	case ctx.Err() != nil:
		t.it.Outcome, t.it.Detail = InProgress, "interrupted; left pending"
	case t.rec == nil:
		// A broker waiting for its instances: its item says what it waits for.
		if t.it.Outcome == "" {
			t.it.Outcome = InProgress
		}
	default:
		t.it = progress(t.it, t.rec, t.last)
		if interrupted {
			t.it.Detail = "interrupted; " + t.it.Detail
		}
	}
	t.done = true
	if t.held {
		r.release(ctx, t)
	}
}

// progress is the item of a record left with work: in progress when an operation runs
// at the broker or the step is due, waiting when a retry is scheduled.
func progress(it Item, rec record, res engine.Result) Item {
	it.Detail = res.Message
	if !rec.loaded() {
		it.Outcome = InProgress
		return it
	}
	if next := rec.next(); !next.At.IsZero() {
		at := wholeSecond(next.At)
		it.Until = &at
	}
	st := rec.object().OpStatus()
	if op := st.InFlight; op != nil && op.Async {
		if it.Until == nil && op.NextPollAt != nil {
			at := op.NextPollAt.Time // due already: polled first by the next run
			it.Until = &at
		}
		it.Outcome = InProgress
		return it
	}
	if it.Until != nil {
		it.Outcome = Waiting
		if rt := st.Retry; rt != nil && rt.LastError != "" {
			it.Detail = fmt.Sprintf("%s (attempt %d): %s", rt.Reason, rt.Attempts, rt.LastError)
		}
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRefused); c != nil && c.Status == metav1.ConditionTrue {
			it.Outcome, it.Detail = Refused, c.Reason+": "+c.Message
		}
		return it
	}
	it.Outcome = InProgress
	return it
}

// waitingFor is the item of a record whose next step is not due: claimed by someone
// else, or waiting for a retry or poll (with the last failure, when a retry is
// scheduled).
func waitingFor(it Item, next engine.NextStep, rec record) Item {
	at := wholeSecond(next.At)
	it.Until = &at
	if next.ClaimedBy != "" {
		it.Outcome = Skipped
		it.Detail = fmt.Sprintf("%s holds it until %s", next.ClaimedBy, at.UTC().Format(time.RFC3339))
		return it
	}
	it.Outcome, it.Detail = Waiting, "next: "+next.Action
	if rec != nil && rec.loaded() {
		if rt := rec.object().OpStatus().Retry; rt != nil && rt.LastError != "" {
			it.Detail = fmt.Sprintf("%s (attempt %d): %s; next: %s", rt.Reason, rt.Attempts, rt.LastError, next.Action)
		}
	}
	return it
}

// wholeSecond rounds a NextStep's time to the second: the times it comes from are
// stored to the second (a retry's, a poll's, a claim's), and it is computed from them and
// the clock, read twice, so it may be off by the time between the two reads.
func wholeSecond(t time.Time) time.Time { return t.Round(time.Second) }

func needsUser(it Item, rec record) Item {
	it.Outcome, it.Detail = Failed, "needs the user: "+rec.remedy()
	if rec.loaded() {
		for _, c := range rec.object().OpStatus().Conditions {
			if c.Type == v1alpha1.ConditionFailed && c.Message != "" {
				it.Detail = c.Reason + ": " + c.Message
			}
		}
	}
	return it
}

// unreadable is the failure of a record whose ConfigMap holds no readable record.
func unreadable(err error) error {
	return fmt.Errorf("cannot read it: %w", err)
}

func failed(it Item, err error) Item {
	it.Outcome, it.Detail = Failed, err.Error()
	return it
}
