// Package reconcile finishes pending work: it finds records with work to do without
// reading every record (store.ListPending), reads only those, and drives each with the
// engine's own step (engine.Engine.StepInstance for instances, StepBinding for
// bindings, StepBroker for brokers) on a bounded pool of workers, within a
// time budget. A record whose next step is due later (an asynchronous operation's next
// poll, a retry) waits in a time-ordered queue, not on a worker. It is what "kubectl
// catalog reconcile" runs; it holds no cobra and prints nothing.
package reconcile

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Options configure a run.
type Options struct {
	// Namespace to reconcile; "" for all namespaces.
	Namespace string
	// Workers is how many broker calls the run has in flight at once (its broker
	// slots, slots.go); default 8. A step holds one only around its broker call, and
	// the run steps up to stepsPerSlot times as many records at once (one at a time on
	// one worker), so that one step's reads and writes of records overlap another's
	// call. Records waiting for their next poll or retry wait in the run's queue,
	// holding neither.
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
	Group *shard.Group
	// StarvationBound: a record of another member's share that has had work, no live
	// claim and no change for this long, and whose next step was due this long ago, is
	// taken up. Default Group.StarvationBound(0).
	StarvationBound time.Duration
	// FullPassEvery: a run lists the metadata of every record of its namespaces (a
	// full pass: the records deleted by "kubectl delete configmap", which only such a
	// list finds, and the index of every record's OSB ids) when this has passed since
	// the last full pass; the runs in between list only the records with work
	// (store.ListWork). The last full pass is this process's or, for a run over every
	// namespace, the one CatalogNamespace's marker records (store.FullPassMarker). 0:
	// every run makes a full pass.
	FullPassEvery time.Duration
	// CatalogNamespace holds the marker of the last full pass over every namespace.
	CatalogNamespace string
	// Deleted, when set, are the records of the run's namespaces the caller saw
	// carrying a deletionTimestamp (serve's watch): a run between full passes drives
	// them too, although no label marks a deletion the engine did not write.
	Deleted func() []store.WorkItem
	// ListedCopiesMin is how many instances (or bindings) with work a run needs before
	// it lists them in full and steps their due polls on that list's copies
	// (listed.go). 0: listedCopiesMin.
	ListedCopiesMin int

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
	// Now is the clock the engine uses; default time.Now.
	Now func() time.Time
	// Logf, if not nil, logs what a run's summary cannot hold: the stack of a step
	// that failed hard (see visitSafely).
	Logf func(format string, args ...any)

	// floors is the run's own retry floor of the records that failed (retryfloor.go).
	floors retryFloors
	// fullPasses are the times of this process's full passes (fullpass.go).
	fullPasses fullPassTimes
	// sizes are the namespaces' sizes its last lists found (listcost.go).
	sizes namespaceSizes
	// holdClaimFor replaces holdsClaimUpTo's answer in tests.
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
	// rotate: a binding whose renew_before has passed, to be rotated (--rotate-due).
	rotate bool
	// listed is the instance or binding as the run's list of the records with work
	// read it (listed.go); nil: it is read on its own.
	listed engineRecord
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
	todo, pre, group, owns, al, err := r.selectWork(listCtx, o, true)
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
	items, left := r.schedule(ctx, runCtx, todo, pre, o, isInterrupted, al.more())
	// A full pass whose list the run ended before is not waited for.
	listErr := al.end()
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
	if al != nil && len(sum.Items) == 0 && (listErr != nil || sum.Interrupted && !al.listed()) {
		// Nothing was done before the list failed, or before the interruption: as
		// when the work could not be listed.
		sum.Items = nil
		if listErr == nil && ctx.Err() == nil {
			listErr = fmt.Errorf("interrupted: %w", context.Canceled)
		}
	}
	if listErr != nil && ctx.Err() == nil {
		return sum, listErr
	}
	return sum, ctx.Err()
}
