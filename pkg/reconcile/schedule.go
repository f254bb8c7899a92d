package reconcile

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

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
// a record it polls. A record whose next step is due within a quarter of the claim's
// duration (holdsClaimUpTo: 30 s, the engine's longest interval between polls, of a
// 2-minute claim; at least holdClaimFor) keeps that claim while it is queued, when the
// claim outlasts the wait by holdClaimFor, so that no other reconcile or command takes
// it over between two polls; its next step uses the copy the last step stored (with
// what the polls that wrote nothing learnt: engine's pollquiet.go). A record due later
// is released when it is queued (the claim never outlives the wait unrenewed) and read
// again when it is due, and a live claim someone else took meanwhile is respected. When
// the run stops working on a record (it settled, failed, the run's time is up or it
// was interrupted), its claim is released.

// holdClaimFor: a record whose next step is due within this keeps its claim while it
// waits in the queue, whatever the claim's duration (holdsClaimUpTo), and a kept claim
// outlasts the wait by this much. It must stay well below the engine's claim TTL.
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
//
// late, when not nil, brings more work while the run goes on (a full pass whose list is
// still read: aslisted.go), until it is closed: the run does not end before, unless
// runCtx does. The items of the records it brings with their item already (its pre) are
// returned with the others.
func (r *Reconciler) schedule(ctx, runCtx context.Context, todo []work, pre []Item, o Options, interrupted func() bool, late <-chan lateWork) ([]Item, int) {
	s := newScheduler(r, o, pre)
	for _, w := range todo {
		if t := s.add(w); t != nil {
			s.q.push(t)
		}
	}
	s.seq = len(s.tasks)
	s.run(ctx, runCtx, late)
	left := s.leaveAll(ctx, interrupted)
	items := make([]Item, len(s.tasks), len(s.tasks)+len(s.latePre))
	for i, t := range s.tasks {
		items[i] = finalItem(t)
	}
	return append(items, s.latePre...), left
}

// addLate takes up the work late brought.
func (s *scheduler) addLate(lw lateWork) {
	for _, it := range lw.pre {
		key := work{kind: it.Kind, namespace: it.Namespace, name: it.Name}.key()
		if s.known[key] {
			continue
		}
		s.known[key] = true
		s.latePre = append(s.latePre, it)
		s.obs.RecordQueued(RefOf(it))
		s.obs.RecordFinished(it)
	}
	for _, w := range lw.todo {
		if t := s.add(w); t != nil {
			t.seq = s.nextSeq()
			s.q.push(t)
		}
	}
}

// scheduler is the state of one run's schedule.
type scheduler struct {
	r       *Reconciler
	o       Options
	obs     Observer
	clk     clock.WithDelayedExecution
	workers int
	tasks   []*task
	q       *fairQueue
	known   map[string]bool
	// seq numbers the tasks queued again, first in, first out.
	seq int
	// open counts, per namespace, the instances and bindings whose item is not final;
	// finished, those whose item became final.
	open, finished map[string]int
	// parked are the brokers being deleted that wait for their namespace's records.
	parked []*task
	// openBindings counts the bindings whose item is not final, goneBindings those the
	// run found gone (unbound, or deleted meanwhile); blocked are the instances parked
	// until a binding they wait for is gone, by work key.
	openBindings, goneBindings int
	blocked                    map[string]*task
	// latePre are the items, final already, that late work brought.
	latePre []Item

	// slots bound the run's broker calls in flight (Options.Workers); workers, the steps
	// it takes at once, are more (stepsFor, slots.go).
	slots *brokerSlots
}

func newScheduler(r *Reconciler, o Options, pre []Item) *scheduler {
	s := &scheduler{r: r, o: o, obs: o.observer(), clk: r.runClock(), workers: stepsFor(o.Workers), slots: newBrokerSlots(o.Workers), q: newFairQueue(),
		known: map[string]bool{}, open: map[string]int{}, finished: map[string]int{}, blocked: map[string]*task{}}
	for _, it := range pre {
		s.known[work{kind: it.Kind, namespace: it.Namespace, name: it.Name}.key()] = true
	}
	return s
}

// add makes w a task of the run; nil when the run has it already.
func (s *scheduler) add(w work) *task {
	if s.known[w.key()] {
		return nil
	}
	s.known[w.key()] = true
	t := &task{w: w, seq: len(s.tasks), it: Item{Namespace: w.namespace, Kind: w.kind, Name: w.name}}
	if w.kind != v1alpha1.KindBroker {
		t.rec = s.r.recordOf(w)
		s.open[w.namespace]++
	}
	if w.kind == v1alpha1.KindServiceBinding {
		s.openBindings++
	}
	s.tasks = append(s.tasks, t)
	s.obs.RecordQueued(t.ref())
	return t
}

// nextSeq is the sequence number of a task queued again.
func (s *scheduler) nextSeq() int {
	n := s.seq
	s.seq++
	return n
}

// requeueNow queues t again, due at once.
func (s *scheduler) requeueNow(t *task) {
	t.due, t.seq = s.clk.Now(), s.nextSeq()
	s.q.push(t)
}

// finish counts a task whose item became final.
func (s *scheduler) finish(t *task) {
	if t.rec != nil {
		s.open[t.w.namespace]--
		s.finished[t.w.namespace]++
	}
	s.obs.RecordFinished(finalItem(t))
}

// run hands the due tasks to the workers, and takes them back when their visit is over,
// until no task is left or runCtx is done.
func (s *scheduler) run(ctx, runCtx context.Context, late <-chan lateWork) {
	in := make(chan *task, s.workers)
	out := make(chan *task, s.workers)
	var wg sync.WaitGroup
	workers := min(s.workers, len(s.tasks))
	if late != nil {
		workers = s.workers
	}
	for range workers {
		wg.Go(func() {
			for t := range in {
				s.r.visitSafely(engine.WithBrokerSlots(ctx, s.slots.of(t.w.namespace)), t, s.o)
				out <- t
			}
		})
	}
	timer := s.clk.NewTimer(time.Hour)
	timer.Stop()
	// turns: late is a listing on the run's turns (aslisted.go): it reads only while
	// the run waits for it.
	turns, _ := s.clk.(ListingTurns)
	busy := 0
	for {
		// Drain and Interrupt end runCtx; looking at them too starts no step once
		// they are closed, even before runCtx says so.
		running := runCtx.Err() == nil && !closed(s.o.Drain) && !closed(s.o.Interrupt)
		if running && turns != nil && late != nil && busy == 0 && s.listingsTurn(turns) {
			if !s.takeTurn(late) {
				late = nil
			}
			continue
		}
		if running {
			busy = s.start(in, busy)
		}
		if busy == 0 && (s.q.len() == 0 || !running) && (late == nil || !running) {
			break
		}
		var wake <-chan time.Time
		var stop <-chan struct{}
		var more <-chan lateWork
		if running {
			stop = runCtx.Done()
			if turns == nil {
				more = late
			}
			if at, ok := s.q.earliest(s.q.share(s.workers)); busy < s.workers && ok {
				timer.Reset(at.Sub(s.clk.Now()))
				wake = timer.C()
			}
		}
		select {
		case t := <-out:
			busy--
			s.visited(t)
		case lw, ok := <-more:
			if !ok {
				late = nil
				break
			}
			s.addLate(lw)
		case <-wake:
		case <-stop:
		}
		timer.Stop()
	}
	close(in)
	wg.Wait()
}

// listingsTurn says whether the listing on the run's turns reads on now, the run having
// no step under way: when no record is due, or as turns draws it.
func (s *scheduler) listingsTurn(turns ListingTurns) bool {
	at, ok := s.q.earliest(s.q.share(s.workers))
	if !ok || at.After(s.clk.Now()) {
		return true
	}
	return turns.ListingTurn()
}

// takeTurn gives the listing on the run's turns its turn: it takes the listing's ask and
// waits for what it hands over then, and takes that up; false once the listing is over.
func (s *scheduler) takeTurn(late <-chan lateWork) bool {
	for {
		lw, ok := <-late
		if !ok {
			return false
		}
		if !lw.turn {
			s.addLate(lw)
			return true
		}
	}
}

// start hands the due tasks to free workers, of which busy are busy, and returns how
// many are busy then.
func (s *scheduler) start(in chan<- *task, busy int) int {
	now := s.clk.Now()
	share := s.q.share(s.workers)
	for busy < s.workers {
		t := s.q.pop(now, share)
		if t == nil {
			break
		}
		busy++
		s.slots.begin(t.w.namespace)
		t.finishedAtStart = s.finished[t.w.namespace]
		t.bindingsAtStart = s.goneBindings
		in <- t
	}
	return busy
}

// visited takes back task t from its worker: it queues the records its visit found,
// queues t again, parks it or finishes it, and takes up what waited for it.
func (s *scheduler) visited(t *task) {
	s.q.done(t)
	s.slots.end(t.w.namespace)
	for _, w := range t.more {
		if n := s.add(w); n != nil {
			n.seq = s.nextSeq()
			s.q.push(n)
		}
	}
	t.more = nil
	switch {
	case t.park:
		s.park(t)
	case t.blocked:
		s.block(t)
	case !t.done:
		t.seq = s.nextSeq()
		s.q.push(t)
		s.obs.StepScheduled(t.ref(), t.due, scheduledWhy(t))
	}
	if t.done {
		s.finish(t)
		if t.w.kind == v1alpha1.KindServiceBinding {
			s.bindingFinished(t)
		}
	}
	s.parked = slices.DeleteFunc(s.parked, func(p *task) bool {
		if s.open[p.w.namespace] > 0 {
			return false
		}
		s.requeueNow(p)
		return true
	})
}

// park parks broker t, being deleted, while records of its namespace are left to drive.
func (s *scheduler) park(t *task) {
	t.park = false
	switch {
	case s.open[t.w.namespace] > 0:
		s.parked = append(s.parked, t)
		s.obs.StepScheduled(t.ref(), time.Time{}, t.it.Detail)
	case s.finished[t.w.namespace] > t.finishedAtStart:
		// The last of its namespace's records finished while it looked (a worker
		// deprovisioned the instance it found): it looks again.
		s.requeueNow(t)
		s.obs.StepScheduled(t.ref(), t.due, t.it.Detail)
	default:
		t.done = true // nothing of its namespace left to drive in this run
	}
}

// block keeps instance t, being deleted, until one of the run's bindings is gone.
func (s *scheduler) block(t *task) {
	t.blocked = false
	switch {
	case s.goneBindings > t.bindingsAtStart:
		// A binding went while it looked: it looks again at once.
		s.requeueNow(t)
		s.obs.StepScheduled(t.ref(), t.due, t.it.Detail)
	case s.openBindings > 0:
		s.blocked[t.w.key()] = t
		s.obs.StepScheduled(t.ref(), time.Time{}, t.it.Detail)
	default:
		// No binding is left to drive in this run: nothing can progress on it until
		// a later run. Its item says what it waits for.
		t.done = true
	}
}

// bindingFinished counts binding t, whose item became final. Once a binding is gone,
// the instance it belonged to (any, when the run never read it) looks again; once no
// binding is left to drive, the instances still waiting can make no progress in this
// run.
func (s *scheduler) bindingFinished(t *task) {
	s.openBindings--
	if t.gone {
		s.goneBindings++
	}
	for _, b := range sortedTasks(s.blocked) {
		switch k := b.w.key(); {
		case t.gone && (k == bindingInstanceKey(t) || !t.rec.loaded()):
			delete(s.blocked, k)
			s.requeueNow(b)
			s.obs.StepScheduled(b.ref(), b.due, b.it.Detail)
		case s.openBindings == 0:
			delete(s.blocked, k)
			b.done = true // its item says what it waits for
			s.finish(b)
		}
	}
}

// leaveAll finishes the items of the tasks the run ends with, and returns how many
// were left with a step still to take. interrupted says whether Options.Interrupt ended
// the run.
func (s *scheduler) leaveAll(ctx context.Context, interrupted func() bool) int {
	for _, p := range s.parked {
		p.done = true // its item says what it waits for
		s.obs.RecordFinished(finalItem(p))
	}
	// Instances still waiting for bindings when the time ran out (or the run was
	// interrupted): their item says what they wait for.
	for _, b := range sortedTasks(s.blocked) {
		b.done = true
		s.obs.RecordFinished(finalItem(b))
	}
	// What is still queued is left for the next run: the time is up, or the run was
	// interrupted.
	left := s.q.all()
	stopped := interrupted()
	Pool(context.WithoutCancel(ctx), s.workers, len(left), func(i int) Item {
		s.r.leaveSafely(ctx, left[i], stopped, s.o)
		return Item{}
	}, func(int) Item { return Item{} })
	for _, t := range left {
		s.obs.RecordFinished(finalItem(t))
	}
	return len(left)
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
