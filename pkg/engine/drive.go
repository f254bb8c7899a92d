package engine

import (
	"context"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// DriveOptions tune DriveInstance and DriveBinding.
type DriveOptions struct {
	// Progress is called after every step, and about every Tick while waiting.
	Progress func(Result)
	// StopWhenWaiting returns at the first wait that is not immediate: a verb without
	// --wait does the work it can do now (a sync call, orphan mitigation) and leaves
	// polling to a later --wait or reconcile.
	StopWhenWaiting bool
	// Tick is how often Progress is called while waiting; default 1 second.
	Tick time.Duration
	// Created is the record as the caller has just created it, with its
	// resourceVersion: the first step takes it instead of reading the record again.
	// Its writes are guarded by that resourceVersion, so a change by anyone since makes
	// the first write conflict, and the record is then read as it is now. A record of
	// another kind or name is ignored.
	Created v1alpha1.Record
}

// DriveInstance calls StepInstance until the instance settles, needs the user, is gone,
// is refused in a way only a person can lift (Result.NeedsPerson), or ctx ends (its
// deadline is --timeout). While it waits for an async operation it
// renews its claim, so reconcile leaves the record to it.
func (e *Engine) DriveInstance(ctx context.Context, namespace, name string, o DriveOptions) (Result, error) {
	if inst, ok := o.Created.(*v1alpha1.ServiceInstance); ok && inst != nil {
		ownCreated(e, inst)
	}
	return drive(e, ctx, namespace, name, o, e.StepInstance, "deprovisioned", nil)
}

// DriveBinding calls StepBinding until the binding settles, needs the user, is gone, or
// ctx ends, like DriveInstance.
func (e *Engine) DriveBinding(ctx context.Context, namespace, name string, o DriveOptions) (Result, error) {
	return drive(e, ctx, namespace, name, o, e.StepBinding, "unbound", e.bindingPollAhead)
}

// recordOf is the record a result carries, of T's kind (nil when it carries none).
func recordOf[T driven[T]](r Result) T {
	var x any
	var zero T
	if _, ok := any(zero).(*v1alpha1.ServiceInstance); ok {
		x = r.Instance
	} else {
		x = r.Binding
	}
	return x.(T)
}

// readAhead, when not nil, starts the reads the next step needs besides the record, from
// the record as the last step left it, together with the drive's read of the record: it
// returns the context that carries them for that step.
func drive[T driven[T]](e *Engine, ctx context.Context, namespace, name string, o DriveOptions, step func(context.Context, T) (Result, error), gone string,
	readAhead func(context.Context, T) context.Context) (Result, error) {
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	records := recordsOf[T](e.cfg.Store)
	var last Result
	immediate := 0
	created, ok := o.Created.(T)
	ok = ok && any(created) != any(T(nil)) && created.GetNamespace() == namespace && created.GetName() == name && created.GetResourceVersion() != ""
	for {
		var x T
		var err error
		sctx := ctx
		if ok {
			x, ok = created, false
		} else {
			if prev := recordOf[T](last); readAhead != nil && any(prev) != any(T(nil)) {
				sctx = readAhead(ctx, prev)
			}
			x, err = records.Get(ctx, namespace, name)
		}
		if store.IsNotFound(err) {
			return Result{State: StateDeleted, Message: gone}, nil
		}
		if err != nil {
			return last, err
		}
		res, err := step(sctx, x)
		if store.IsNotFound(err) {
			// Another driver may have finished the record during this step (removed
			// its finalizer, and the API server deleted it): gone is done. Anything
			// else not found (its broker, a Secret) stays this step's error.
			if _, gerr := records.Get(ctx, namespace, name); store.IsNotFound(gerr) {
				return Result{State: StateDeleted, Message: gone}, nil
			}
		}
		if any(recordOf[T](res)) == any(T(nil)) && res.State == StateWaiting {
			res = withRecord(res, x)
		}
		last = res
		if o.Progress != nil {
			o.Progress(res)
		}
		if err != nil || res.Done() {
			return res, err
		}
		if res.NeedsPerson {
			// Refused in a way only a person can lift (the record's author to adopt, a
			// grant, a role, a spec): retrying meets the same refusal, so the wait ends
			// here with it, and reconcile looks at the record again after its backoff.
			return res, nil
		}
		if res.RequeueAfter <= 0 {
			// Immediate work (a conflict re-read, orphan mitigation right after a failed
			// call): go on, but never spin.
			immediate++
			if o.StopWhenWaiting && immediate > 10 {
				return res, nil
			}
			res.RequeueAfter = 50 * time.Millisecond * time.Duration(min(immediate, 20))
		} else {
			immediate = 0
			if o.StopWhenWaiting {
				return res, nil
			}
			// Another driver's claim: it usually finishes or releases the record long
			// before the claim expires, so look again as soon as a watch of the record
			// sees it change, or every poll interval (at least a second) when the watch
			// cannot be made or breaks, rather than sleeping out the claim.
			if l, ok := store.LeaseOf(x); ok && l.Holder != e.cfg.Holder && e.claimLeft(x, l) > 0 {
				pollEvery := max(e.cfg.PollInterval, time.Second)
				wctx, cancel := context.WithCancel(ctx)
				var changed <-chan bool
				if e.cfg.Sleep == nil {
					changed = records.WatchChange(wctx, namespace, name, x.GetResourceVersion())
				}
				err := waitChange[T](e, ctx, res, o, changed, pollEvery)
				cancel()
				if err != nil {
					return last, err
				}
				continue
			}
		}
		if err := wait[T](e, ctx, res, o); err != nil {
			return last, err
		}
	}
}

// waitChange waits for another driver's claim: until changed says the record changed,
// or res.RequeueAfter passed; when changed says the watch broke, it falls back to
// looking again after pollEvery.
func waitChange[T driven[T]](e *Engine, ctx context.Context, res Result, o DriveOptions, changed <-chan bool, pollEvery time.Duration) error {
	if e.cfg.Sleep != nil {
		return e.cfg.Sleep(ctx, min(res.RequeueAfter, pollEvery))
	}
	return tickUntil(e, ctx, res, o, changed, pollEvery, nil)
}

// tickUntil waits res.RequeueAfter, waking every o.Tick to let woke (when not nil) update
// res and to report progress. A value on changed ends the wait (true) or, false, says the
// watch broke: the wait then ends at the latest pollEvery from then, and changed is no
// longer read. A nil changed is never read.
func tickUntil(e *Engine, ctx context.Context, res Result, o DriveOptions, changed <-chan bool, pollEvery time.Duration, woke func(Result) Result) error {
	deadline := e.now().Add(res.RequeueAfter)
	for {
		left := deadline.Sub(e.now())
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(min(left, o.Tick))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case ok := <-changed:
			t.Stop()
			if ok {
				return nil
			}
			changed = nil
			deadline = minTime(deadline, e.now().Add(pollEvery))
			continue
		case <-t.C:
		}
		if woke != nil {
			res = woke(res)
		}
		if o.Progress != nil && deadline.Sub(e.now()) > 0 {
			o.Progress(res)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// wait sleeps until the next step is due, reporting progress every tick and renewing an
// async operation's claim before it runs low.
func wait[T driven[T]](e *Engine, ctx context.Context, res Result, o DriveOptions) error {
	if e.cfg.Sleep != nil {
		return e.cfg.Sleep(ctx, res.RequeueAfter)
	}
	return tickUntil(e, ctx, res, o, nil, 0, func(res Result) Result {
		x := recordOf[T](res)
		if any(x) != any(T(nil)) {
			if op := x.OpStatus().InFlight; op != nil && op.Async {
				if l, ok := store.LeaseOf(x); ok && l.Holder == e.cfg.Holder && e.ownClaimLeft(x, l) < e.cfg.ClaimTTL/2 {
					if renewed, err := recordsOf[T](e.cfg.Store).Claim(ctx, x, e.cfg.Holder, e.cfg.ClaimTTL); err == nil {
						res = withRecord(res, renewed)
					}
				}
			}
		}
		return res
	})
}

// Release drops this engine's claim on the instance, so reconcile may drive it at once.
// It is what a verb does when it stops waiting.
func (e *Engine) Release(ctx context.Context, inst *v1alpha1.ServiceInstance) error {
	return releaseClaim(e, ctx, inst)
}

// ReleaseBinding drops this engine's claim on the binding, like Release.
func (e *Engine) ReleaseBinding(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	return releaseClaim(e, ctx, b)
}

func releaseClaim[T driven[T]](e *Engine, ctx context.Context, x T) error {
	if l, ok := store.LeaseOf(x); !ok || l.Holder != e.cfg.Holder {
		return nil
	}
	if op := x.OpStatus().InFlight; op != nil && !op.Async {
		// A call whose answer never came (interrupted, or its outcome not stored): the
		// broker may still be working on it. The claim, which outlasts the call, keeps
		// the next driver from re-sending it until then.
		return nil
	}
	_, err := recordsOf[T](e.cfg.Store).Release(ctx, x, e.cfg.Holder)
	if store.IsNotFound(err) {
		return nil
	}
	return err
}
