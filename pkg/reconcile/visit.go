package reconcile

import (
	"cmp"
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// visit takes a record's next step, and either finishes its item for this run or sets
// when it is due again. Steps use ctx (only an interruption cuts a broker call short);
// o.timeUpAt says when the run's time is up.
func (r *Reconciler) visit(ctx context.Context, t *task, o Options) {
	first := !t.started
	t.started = true
	if t.rec == nil {
		r.visitBroker(ctx, t, o)
		return
	}
	if !t.held && !r.ready(ctx, t, o, first) {
		return
	}
	o.observer().StepStarted(t.ref(), t.rec.next().Action)
	res, err := t.rec.step(ctx)
	t.it.Steps++
	t.last, t.held = res, false
	r.countFloor(ctx, t, res, err)
	if !r.stepped(ctx, t, o, res, err) {
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
	r.requeue(ctx, t, o, res)
}

// ready reads a record the run does not hold and checks it before its step: another
// driver's claim (taken over when its process has ended), and, before its first step,
// a rotation due (--rotate-due), whether it needs the user, whether its step is due and
// its retry floor has passed. False when its visit is over.
func (r *Reconciler) ready(ctx context.Context, t *task, o Options, first bool) bool {
	if !r.read(ctx, t) {
		return false
	}
	if t.rec.fromList() && !r.pollsListedCopy(t, o, first) {
		// The run's list's copy, which may be older than the record: only a poll,
		// whose claim is written guarded by that copy's resourceVersion before the
		// broker is called, acts on it. Anything else is decided on the record as it
		// is now.
		if !r.read(ctx, t) {
			return false
		}
	}
	next := t.rec.next()
	if next.ClaimedBy != "" && !o.DryRun {
		// A claim its process (of this host) can no longer renew: a killed
		// "--wait", say. Taken over at once where no call may be under way.
		took, err := t.rec.takeOver(ctx)
		if err != nil {
			r.finish(ctx, t, failed(t.it, err))
			return false
		}
		if took {
			r.logf("%s: took over the claim of %s, whose process has ended", t.ref(), next.ClaimedBy)
			next = t.rec.next()
		}
	}
	if next.ClaimedBy != "" {
		r.finish(ctx, t, waitingFor(t.it, next, t.rec))
		return false
	}
	if t.checked {
		return true
	}
	if first && t.w.rotate && !r.rotate(ctx, t, o.DryRun) {
		return false
	}
	next = t.rec.next()
	switch {
	case next.NeedsUser:
		r.finish(ctx, t, needsUser(t.it, t.rec))
		return false
	case !next.Due(r.now()):
		// A run never shortens a backoff or a Retry-After. A run by hand waits
		// for one due within its horizon; otherwise a later run takes it up.
		if !t.waited && r.waitUntilDue(t, next, o) {
			return false
		}
		r.finish(ctx, t, waitingFor(t.it, next, t.rec))
		return false
	case !o.DryRun && r.heldBack(t):
		r.release(ctx, t)
		return false
	case o.DryRun:
		t.it.Outcome, t.it.Detail, t.done = WouldDrive, next.Action, true
		return false
	}
	t.checked = true
	return true
}

// stepped finishes the item of a record whose step ended it for this run: refused,
// failed, interrupted, settled, gone, needing the user, or claimed by another driver.
// True when the record has a step still to take.
func (r *Reconciler) stepped(ctx context.Context, t *task, o Options, res engine.Result, err error) bool {
	if err == nil && res.Refused {
		t.it.Outcome, t.it.Detail = Refused, res.Message
		r.finish(ctx, t, t.it)
		return false
	}
	if err != nil {
		if ctx.Err() != nil {
			t.it.Outcome, t.it.Detail = InProgress, "interrupted; left pending"
			r.finish(ctx, t, t.it)
			return false
		}
		if store.IsNotFound(err) {
			// Another driver may have finished the record meanwhile (removed its
			// finalizer, and the API server deleted it): a record that is gone is done.
			// Anything else not found (its broker, a Secret) is this step's failure.
			if found, rerr := t.rec.read(ctx); rerr == nil && !found {
				t.it.Outcome, t.it.Detail, t.done, t.gone = Done, "gone", true, true
				return false
			}
		}
		r.finish(ctx, t, failed(t.it, err))
		return false
	}
	switch res.State {
	case engine.StateSettled:
		r.finish(ctx, t, r.settled(t, o))
		return false
	case engine.StateDeleted:
		t.it.Outcome, t.it.Detail, t.done, t.gone = Done, res.Message, true, true
		return false
	case engine.StateNeedsUser:
		r.finish(ctx, t, needsUser(t.it, t.rec))
		return false
	}
	if next := t.rec.next(); next.ClaimedBy != "" {
		r.finish(ctx, t, waitingFor(t.it, next, t.rec))
		return false
	}
	return true
}

// requeue sets when the next step of a record is due after a step that asked to be
// called again (res), or finishes its item when the run cannot wait that long.
func (r *Reconciler) requeue(ctx context.Context, t *task, o Options, res engine.Result) {
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
// nothing to poll and no retry scheduled, and says what it waits for. A synchronous
// call written ahead (a DELETE whose answer was lost) waits as the step said: only its
// bindings' going moves it on, so it is parked too.
func waitsForBindings(rec record) (string, bool) {
	inst, ok := rec.object().(*v1alpha1.ServiceInstance)
	if !ok || inst == nil || inst.DeletionTimestamp == nil || inst.Status.Retry != nil {
		return "", false
	}
	if op := inst.Status.InFlight; op != nil && (op.Async || op.OperationKey != "") {
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

// keepsClaim reports whether a record queued for wait keeps the run's claim: the wait
// is short beside the claim (holdsClaimUpTo) and the claim outlasts it by holdClaimFor.
func (r *Reconciler) keepsClaim(rec record, wait time.Duration) bool {
	l, ok := store.LeaseOf(rec.object())
	if !ok || l.Holder != r.Engine.Holder() || wait > r.holdsClaimUpTo(l) {
		return false
	}
	return r.Store.Claims().OwnLeft(store.RefOf(rec.object()), l) > wait+holdClaimFor
}

// holdsClaimUpTo is the longest wait for its next step a record keeps the run's claim
// l over: a quarter of the claim's duration (30 s of a 2-minute claim: the engine's
// longest interval between two polls, so that an operation polled for minutes is
// claimed once, its claim renewed once a minute), at least holdClaimFor.
func (r *Reconciler) holdsClaimUpTo(l store.Lease) time.Duration {
	return cmp.Or(r.holdClaimFor, max(holdClaimFor, l.Duration()/4))
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
