package reconcile

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
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

func (t *task) ref() Ref { return Ref{Kind: t.w.kind, Namespace: t.w.namespace, Name: t.w.name} }
