package sim

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Reconcile processes run the real pkg/reconcile: each is a replica of "reconcile
// --serve" (runs of at most 30 s with no retry horizon, one after the other) or a run by
// hand (a 10 s retry horizon), with its scheduler, its queue, the claims it holds
// between polls, its retry floors (kept by the replica from run to run) and its takeover
// of abandoned claims. Its run clock is the simulation's time: a run waiting for a
// queued record's next step pauses its process until then. It has one worker, so that
// one seed is still one interleaving.
//
// A replica runs as PID 1 of its container, its host name the Pod's: killed, it
// restarts with the same host name and pid, and only the holder's per-process nonce
// (store.HolderName) tells the new process from the dead one. -sim.oldholder drops the
// nonce, as releases before it named holders.

var wideSkew = flag.Bool("sim.skew", false, "let clocks differ by up to the skew the engine tolerates (store.MaxClockSkew), not only a sixth of the claim, with every invariant checked")

var oldHolder = flag.Bool("sim.oldholder", false, "name reconcile replicas' claims without a per-process nonce, as releases before it did (a restarted container then holds its predecessor's claims)")

// holderName is the claims' holder of process p in its generation gen: for a reconcile
// replica "reconcile@HOST/1.NONCE", the nonce drawn per process lifetime.
func (p *proc) holderName() string {
	switch p.kind {
	case reconcileByHand:
		return p.handHolder() // takeover_test.go
	case reconciler:
	default:
		return fmt.Sprintf("%s/%d", p.name, p.gen)
	}
	if *oldHolder {
		return fmt.Sprintf("reconcile@%s/1", p.name)
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%s/%d", p.w.seed, p.name, p.gen)
	return fmt.Sprintf("reconcile@%s/1.%08x", p.name, h.Sum32())
}

// reconcileRun is one run of the real reconcile on every namespace, the engine acting
// with its runner's rights (no trust policy in the simulated cluster). Half of the runs
// are "reconcile --rotate-due" (rotatedue_test.go).
func (p *proc) reconcileRun(ctx context.Context, quiescing bool) error {
	w := p.w
	o := reconcile.Options{Workers: 1, TrustUnverifiedAuthors: p.trustsWriters(), Observer: simObserver{p}}
	o.ListedCopiesMin = p.listedCopiesMin()   // listed_test.go
	o.CatalogNamespace = p.catalogNamespace() // aslisted_test.go
	if p.kind == reconcileByHand {
		// As a person runs it, on her namespace (takeover_test.go).
		o.Namespace, o.CatalogNamespace = p.ns, ""
	}
	if !quiescing && p.kind == reconciler && w.rng.IntN(2) == 0 {
		// --serve: each run lasts at most --serve-interval, and waits for retries.
		o.MaxDuration = 30 * time.Second
	} else {
		o.RetryHorizon = 10 * time.Second
	}
	// (A run by hand on one namespace does not rotate: rotatedue_test.go checks the
	// replicas' runs over every namespace.)
	o.RotateDue = p.kind == reconciler && (!quiescing && w.rot.rng.IntN(3) > 0 || quiescing && w.rot.quiescing)
	g, err := p.joinGroup(ctx)
	if err != nil {
		return err
	}
	o.Group = g
	o.Shard = p.staticShard() // staticshard_test.go
	p.apiFaults = 0
	p.runs++
	p.clockHigh = p.now()
	var due map[string]string
	if o.RotateDue && !p.onNew() {
		due = p.rotationsDue()
		w.logf("%-14s run with --rotate-due (%d bindings due)", p.name, len(due))
	}
	p.rotating = o.RotateDue
	sum, err := p.rec.Run(ctx, o)
	p.rotating = false
	if o.RotateDue && !p.onNew() {
		p.checkRotateDueRun(o, due, sum, err)
	}
	if err != nil {
		return err
	}
	w.logf("%-14s run took %s: %v", p.name, sum.Took, sum.Counts)
	return nil
}

// checkFailedItem is part of invariant 6: whatever the broker answers, a record's step
// fails only as the engine's API says it may (the record could not be read or written,
// or the process stopped): a broker's answer is recorded in the record's status, never
// an error. A run reports a failed step as its item's detail (the error's text), so a
// failure is the API server's when the run met one of its faults or refusals, or the
// record went meanwhile.
func (p *proc) checkFailedItem(it reconcile.Item) {
	d := it.Detail
	if strings.Contains(d, "internal error while driving it") {
		p.w.fail("reconcile crashed on %s %s/%s: %s", reconcile.KindWord(it.Kind), it.Namespace, it.Name, d)
		return
	}
	if p.apiFaults > 0 || p.dead || p.ctx.Err() != nil {
		return
	}
	// (A record of a newer release is one this release cannot read: release_test.go.)
	for _, ok := range []string{"not found", "the claim on the record could not be renewed", "needs the user: ", "was written by a newer kubectl-catalog"} {
		if strings.Contains(d, ok) {
			return
		}
	}
	if p.w.failedForGood(it) {
		return
	}
	p.w.fail("the step of %s %s/%s failed with an error that is not the API server's: %s", reconcile.KindWord(it.Kind), it.Namespace, it.Name, d)
}

// simObserver follows a run: the record a step is taken on is the process's record
// (the namespace of a bind it sends, invariant 6), and each step is a line of the trace.
type simObserver struct{ p *proc }

func (o simObserver) RecordQueued(reconcile.Ref) {}

func (o simObserver) StepStarted(ref reconcile.Ref, action string) {
	o.p.record = ref.Namespace + "/" + ref.Name
	o.p.w.logf("%-14s step %s: %s", o.p.name, ref, action)
	o.p.checkShard(ref) // staticshard_test.go
}

func (o simObserver) StepScheduled(ref reconcile.Ref, at time.Time, why string) {
	o.p.record = ""
	if !at.IsZero() {
		o.p.w.logf("%-14s next step of %s at %s: %s", o.p.name, ref, at.Format("15:04:05.000"), firstLine(why))
	}
}

// RecordFinished checks a failed item as the run reports it, before anything else
// moves.
func (o simObserver) RecordFinished(it reconcile.Item) {
	o.p.record = ""
	if it.Outcome == reconcile.Failed {
		o.p.w.logf("%-14s run: %s %s/%s failed: %s", o.p.name, reconcile.KindWord(it.Kind), it.Namespace, it.Name, firstLine(it.Detail))
		o.p.checkFailedItem(it)
	}
}

// runClock is a reconcile process's run clock: the simulation's time (durations only:
// the engine reads the process's own, skewed clock). A timer's channel is read only by
// a run with no step under way, waiting for the next queued record: reading it pauses
// the process until the timer is due, or the process stops.
type runClock struct{ p *proc }

var _ clock.WithDelayedExecution = runClock{}

func (c runClock) Now() time.Time                  { return c.p.w.t }
func (c runClock) Since(t time.Time) time.Duration { return c.p.w.t.Sub(t) }
func (c runClock) After(d time.Duration) <-chan time.Time {
	return c.NewTimer(d).C()
}
func (c runClock) NewTimer(d time.Duration) clock.Timer {
	return &runTimer{p: c.p, at: c.p.w.t.Add(d)}
}
func (c runClock) Sleep(d time.Duration) { c.p.waitUntil(c.p.w.t.Add(d)) }
func (c runClock) Tick(time.Duration) <-chan time.Time {
	panic("sim: reconcile ticks")
}

// AfterFunc runs f once the simulation's time reaches d from now, at the process's
// first pause after that (MaxDuration's end of a run).
func (c runClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &runTimer{p: c.p, at: c.p.w.t.Add(d), f: f}
	c.p.timers = append(c.p.timers, t)
	return t
}

type runTimer struct {
	p             *proc
	at            time.Time
	f             func()
	stopped, done bool
}

func (t *runTimer) C() <-chan time.Time {
	ch := make(chan time.Time, 1)
	if !t.stopped && !t.done && t.p.waitUntil(t.at) {
		t.done = true
		ch <- t.at
	}
	return ch
}

func (t *runTimer) Stop() bool {
	was := !t.stopped && !t.done
	t.stopped = true
	return was
}

func (t *runTimer) Reset(d time.Duration) bool {
	was := !t.stopped && !t.done
	t.at, t.stopped, t.done = t.p.w.t.Add(d), false, false
	return was
}

// fireTimers runs the functions of the process's AfterFunc timers that are due, and
// reports whether one ran.
func (p *proc) fireTimers() bool {
	fired := false
	for _, t := range p.timers {
		if !t.stopped && !t.done && !p.w.t.Before(t.at) {
			t.done, fired = true, true
			t.f()
		}
	}
	return fired
}

// waitUntil pauses the process until the simulation's time reaches at; false when it
// stopped first (killed, interrupted, or its run's time ran out).
func (p *proc) waitUntil(at time.Time) bool {
	if p.dead || p.ctx.Err() != nil {
		return false
	}
	p.waiting = at
	defer func() { p.waiting = time.Time{} }()
	p.pause("waits until " + at.Format("15:04:05.000"))
	for {
		if p.dead || p.ctx.Err() != nil || p.fireTimers() {
			return false
		}
		if !p.w.t.Before(at) {
			return true
		}
		p.quietPause()
	}
}

// failedForGood reports an item of a record that failed for good and waits for its
// user: its detail is its Failed condition's. A record its user deleted since (released
// at once, the broker holding nothing of it) is taken as one that went meanwhile.
func (w *world) failedForGood(it reconcile.Item) bool {
	ctx := context.Background()
	var st *v1alpha1.OperationStatus
	var err error
	switch it.Kind {
	case v1alpha1.KindServiceInstance:
		var x *v1alpha1.ServiceInstance
		if x, err = w.checker.Instances().Get(ctx, it.Namespace, it.Name); err == nil {
			st = &x.Status.OperationStatus
		}
	case v1alpha1.KindServiceBinding:
		var x *v1alpha1.ServiceBinding
		if x, err = w.checker.Bindings().Get(ctx, it.Namespace, it.Name); err == nil {
			st = &x.Status.OperationStatus
		}
	}
	if store.IsNotFound(err) {
		return true
	}
	if st == nil {
		return false
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailed)
	return c != nil && c.Status == metav1.ConditionTrue && it.Detail == c.Reason+": "+c.Message
}
