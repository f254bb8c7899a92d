package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Writing a step's outcome: the write-ahead before a call, the answer stored after it, a
// failure before any call, and what a stored record waits for.

// store writes x (read as in) and says what it waits for; on a conflict it reads the
// record again.
func storeStatus[T driven[T]](e *Engine, ctx context.Context, in, x T) (Result, error) {
	stored, err := recordsOf[T](e.cfg.Store).Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e, ctx, in, nil)
	}
	if err != nil {
		return Result{}, err
	}
	statusEvents(e, ctx, in, stored)
	return resultOf(e, stored), nil
}

func persistTerminal[T driven[T]](e *Engine, ctx context.Context, in T, reason, msg string) (Result, error) {
	x := in.DeepCopy()
	e.terminalFailure(x, reason, msg, e.now())
	store.ClearClaim(x, e.cfg.Holder)
	return storeStatus(e, ctx, in, x)
}

// preCallFailure records a failure before any broker call (broker record, credentials,
// parameters Secret, cluster id, the instance of a binding) and schedules a retry. An
// operation in flight stays as it is: it is still to be re-sent or polled.
func preCallFailure[T driven[T]](e *Engine, ctx context.Context, in T, reason string, cause error) (Result, error) {
	if err := cutShort(ctx, cause); err != nil {
		// The step's own context ended it (a wait's deadline): not a failure (cutShort).
		return interrupted(in, err)
	}
	if ltr, ok := AsLeftToReconcile(cause); ok {
		if !isReconcile(ctx) {
			return leaveToReconcile(e, ctx, in, ltr)
		}
		// Reconcile never hands work to itself: what it may not do is retried with
		// backoff, as any refusal.
		cause = reconcileMayNot(ltr)
	}
	x := in.DeepCopy()
	st := x.OpStatus()
	now := e.now()
	inFlight := st.InFlight
	r, isRefusal := AsRefused(cause)
	if isRefusal {
		reason = r.Reason
	}
	e.retryLater(x, reason, cause.Error(), false, now)
	if isRefusal {
		setCondition(x, v1alpha1.ConditionRefused, metav1.ConditionTrue, r.Reason, r.Message+"; nothing is sent to the broker for this record until that changes", now)
	}
	if inFlight != nil {
		st.InFlight = inFlight
		if inFlight.Async {
			inFlight.NextPollAt = st.Retry.NextRetryAt
		}
	}
	store.ClearClaim(x, e.cfg.Holder)
	res, err := storeStatus(e, ctx, in, x)
	if err == nil && res.State == StateWaiting {
		res.RequeueAfter = st.Retry.NextRetryAt.Sub(now)
	}
	res.Refused = isRefusal
	res.NeedsPerson = isRefusal && r.NeedsPerson()
	if isRefusal && err == nil {
		// What the user reads is why nothing is sent, not the broker's last word on an
		// operation in flight (resultOf's message for one).
		res.Message = cause.Error()
	}
	return res, err
}

// writeAhead stores the call about to be made, with a claim, in one write guarded by
// resourceVersion. It reports false when someone else changed or claimed the record:
// then no call may be made.
func writeAhead[T driven[T]](e *Engine, ctx context.Context, in T, op *v1alpha1.Operation, phase v1alpha1.Phase, reason, msg string) (T, bool, error) {
	var none T
	x := in.DeepCopy()
	st := x.OpStatus()
	now := e.now()
	replaced := st.InFlight
	// Until its outcome is stored, this send may be at the broker whatever becomes of
	// this driver (sendMayRun).
	op.SentAt = mtime(now)
	// An id a provision or bind is about to be sent for, or one whose uncertain call this
	// one replaces, may exist at the broker from now on.
	listExternalID(st, createdID(st.InFlight))
	listExternalID(st, createdID(op))
	st.InFlight = op
	if replaced == nil || replaced.RequestID != op.RequestID {
		// A re-send keeps the generation its first send was made from: a spec changed
		// since is still to be done once the re-send's outcome is stored.
		st.ObservedGeneration = x.GetGeneration()
	}
	st.Phase = phase
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg, now)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionRefused)
	if err := e.cfg.Store.Claims().Set(x, e.cfg.Holder, e.cfg.ClaimTTL, now); err != nil {
		if store.IsClaimed(err) {
			return none, false, nil
		}
		return none, false, err
	}
	stored, err := recordsOf[T](e.cfg.Store).Update(ctx, x)
	if store.IsConflict(err) || store.IsClaimed(err) {
		return none, false, nil
	}
	if err != nil {
		return none, false, err
	}
	statusEvents(e, ctx, in, stored)
	dropSent(e, ctx, replaced, stored)
	sendMayRun(e, stored) // this process times the send's grace from its write-ahead
	stored, ok, err := freshClaim(e, ctx, stored)
	return stored, ok, err
}

// freshClaim makes sure the claim on stored, just written, still has most of its time
// left before a broker call is made under it: a call must end while every other driver,
// reading the claim by its own clock, still sees it live. A write that took long to land
// (a slow API server, a paused process) renews the claim first; a renewal refused means
// someone else took the record over: no call.
func freshClaim[T driven[T]](e *Engine, ctx context.Context, stored T) (T, bool, error) {
	var none T
	for range 3 {
		l, ok := store.LeaseOf(stored)
		if !ok || l.Holder != e.cfg.Holder {
			return none, false, nil
		}
		if e.ownClaimLeft(stored, l) >= e.cfg.ClaimTTL*7/8 {
			return stored, true, nil
		}
		renewed, err := recordsOf[T](e.cfg.Store).Claim(ctx, stored, e.cfg.Holder, e.cfg.ClaimTTL)
		if store.IsClaimed(err) || store.IsConflict(err) {
			return none, false, nil
		}
		if err != nil {
			return none, false, err
		}
		stored = renewed
	}
	return none, false, nil
}

// finish stores the outcome of a broker call. The outcome is about the operation in
// flight, which nobody else replaces while the claim holds, so on a conflict (a user's
// spec edit, say) it is re-applied to the newer record as long as that still carries the
// same operation.
//
// The Events that say only what the broker answered go out with the first write of the
// outcome, not after it (answerEvents): a command does not wait for them. When no write
// of the outcome lands, a Warning Event says so (outcomeNotRecordedEvent).
func finish[T driven[T]](e *Engine, ctx context.Context, in T, requestID string, mutate func(T, time.Time)) (Result, error) {
	cur := in
	records := recordsOf[T](e.cfg.Store)
	op := in.OpStatus().InFlight
	var sent []string
	notRecorded := func(cause error, then string) {
		if len(sent) > 0 {
			outcomeNotRecordedEvent(e, ctx, in, cause, then)
		}
	}
	again := "the record keeps the call in flight: " + askedAgain(op) + " and its answer recorded then"
	for i := range 5 {
		x := cur.DeepCopy()
		now := e.now()
		mutate(x, now)
		if f := x.OpStatus().InFlight; f != nil {
			f.SentAt = nil // the send's outcome is stored (sendMayRun)
		}
		if any(cur) != any(in) {
			// Re-applied to a record someone else wrote since the write-ahead: whatever
			// the outcome says, an id listed there may be held at the broker (a re-send
			// may have created it), so none is removed.
			keepListed(x.OpStatus(), cur.OpStatus().ExternalIDs)
		}
		if op := x.OpStatus().InFlight; op != nil && op.Async {
			_ = e.cfg.Store.Claims().Set(x, e.cfg.Holder, e.cfg.ClaimTTL, now)
		} else {
			store.ClearClaim(x, e.cfg.Holder)
		}
		if i == 0 {
			sent = answerEvents(e, ctx, cur, x)
		}
		stored, err := records.Update(ctx, x)
		if err == nil {
			statusEvents(e, ctx, cur, stored, sent...)
			dropSent(e, ctx, op, stored)
			return resultOf(e, stored), nil
		}
		if !store.IsConflict(err) {
			if stored, ok := landedAnyway(e, ctx, cur, x); ok {
				statusEvents(e, ctx, cur, stored, sent...)
				dropSent(e, ctx, op, stored)
				return resultOf(e, stored), nil
			}
			notRecorded(err, again)
			return outcomeNotStored(e, ctx, cur, x, err)
		}
		fresh, err := records.Get(ctx, cur.GetNamespace(), cur.GetName())
		if err != nil {
			notRecorded(err, again)
			return Result{}, err
		}
		if op := fresh.OpStatus().InFlight; op == nil || op.RequestID != requestID {
			notRecorded(errLost, "the record holds another call now; its status says what is recorded")
			return reread(e, ctx, fresh, errLost)
		}
		if l, ok := store.LeaseOf(fresh); ok && l.Holder != e.cfg.Holder {
			// Another driver took the record over (our claim ran out) and may have
			// re-sent the same request: its outcome is the one to store, not this late
			// one.
			notRecorded(errLost, "another driver took the record over and records the answer it gets")
			return reread(e, ctx, fresh, errLost)
		}
		cur = fresh
	}
	notRecorded(errors.New("the record kept changing"), again)
	return reread(e, ctx, cur, nil)
}

// landedAnyway reports whether a write of x over cur that failed with an error other
// than a conflict (a timeout, a broken connection, a 500) landed all the same, its
// answer lost on the way back: the record, read again, is newer than cur and holds x's
// status. It is then the record stored, and the caller goes on as if the write had been
// answered (the Events of what it stored included), instead of leaving a stored outcome
// without them. Only this error path reads the record again.
func landedAnyway[T driven[T]](e *Engine, ctx context.Context, cur, x T) (T, bool) {
	var none T
	if ctx.Err() != nil {
		return none, false
	}
	fresh, err := recordsOf[T](e.cfg.Store).Get(ctx, cur.GetNamespace(), cur.GetName())
	if err != nil || fresh.GetUID() != cur.GetUID() || fresh.GetResourceVersion() == cur.GetResourceVersion() {
		return none, false
	}
	want, err1 := json.Marshal(x.OpStatus())
	got, err2 := json.Marshal(fresh.OpStatus())
	if err1 != nil || err2 != nil || !bytes.Equal(want, got) {
		return none, false
	}
	return fresh, true
}

// askedAgain says how the broker is asked again about op, a call still in flight whose
// answer could not be recorded.
func askedAgain(op *v1alpha1.Operation) string {
	if op != nil && op.Async {
		return "the broker is asked for its state again (by the next step, or reconcile)"
	}
	return "it is sent again (by the next step, or reconcile)"
}

// keepListed adds back to st.ExternalIDs any of ids that an outcome removed.
func keepListed(st *v1alpha1.OperationStatus, ids []string) {
	for _, id := range ids {
		if !slices.Contains(st.ExternalIDs, id) {
			st.ExternalIDs = append(st.ExternalIDs, id)
		}
	}
}

// outcomeNotStored handles an outcome that could not be written for a reason other than
// a conflict (a record too large, say). The record keeps its operation in flight, since
// nothing records what the broker did, and gets a retry with backoff and a short reason
// in a write small enough to succeed: the next step re-sends the identical request (or
// polls again) after the backoff instead of at once. outcome is the record the failed
// write carried: when it said the call got no answer (status.retry.brokerMayWorkUntil,
// brokerMayWork), the retry keeps that grace, so nothing is sent for the record while
// the broker may still be working on the call. The write error is still returned.
func outcomeNotStored[T driven[T]](e *Engine, ctx context.Context, in, outcome T, cause error) (Result, error) {
	failed := withRecord(Result{State: StateWaiting, Message: "the outcome could not be stored; the call will be re-sent"}, in)
	op := in.OpStatus().InFlight
	if ctx.Err() != nil || op == nil {
		return failed, cause
	}
	x := in.DeepCopy()
	st := x.OpStatus()
	now := e.now()
	e.retryLater(x, callFailedReason(op.Type), fmt.Sprintf("the broker's answer could not be recorded (%v); the request is sent again", cause), false, now)
	st.InFlight = op.DeepCopy()
	st.InFlight.SentAt = nil // the broker answered (sendMayRun), or brokerMayWorkUntil below says until when it may work
	if r := outcome.OpStatus().Retry; r != nil && r.BrokerMayWorkUntil != nil {
		// The call got no answer (brokerMayWork): the broker may still be working on it,
		// and nothing about the record is sent before that work is over, whether its
		// outcome was stored or not.
		st.Retry.BrokerMayWorkUntil = r.BrokerMayWorkUntil
		if st.Retry.NextRetryAt == nil || st.Retry.NextRetryAt.Before(r.BrokerMayWorkUntil) {
			st.Retry.NextRetryAt = r.BrokerMayWorkUntil
		}
		st.Retry.LastError += fmt.Sprintf(" once the broker's work on it may be over (%s)", r.BrokerMayWorkUntil.UTC().Format(time.RFC3339))
	}
	if op.Async {
		st.InFlight.NextPollAt = st.Retry.NextRetryAt
	}
	store.ClearClaim(x, e.cfg.Holder)
	stored, err := recordsOf[T](e.cfg.Store).Update(ctx, x)
	if err != nil {
		return failed, cause
	}
	r := resultOf(e, stored)
	r.Message = st.Retry.LastError
	return r, cause
}

// release removes the finalizer of a record whose deletion is done, letting the API
// server delete it.
//
// A deletion the broker confirmed has its Event go out with the removal (it says only
// what the broker answered), followed by a Warning when the removal fails; a release
// without a broker call has its Event once the removal is made.
func release[T driven[T]](e *Engine, ctx context.Context, in T, done string, confirmed bool) (Result, error) {
	if confirmed {
		releaseEvent(e, ctx, in, true)
	}
	_, err := recordsOf[T](e.cfg.Store).RemoveFinalizer(ctx, in)
	if err != nil && !store.IsNotFound(err) {
		if confirmed {
			outcomeNotRecordedEvent(e, ctx, in, err, "the record is not released yet: it keeps the call in flight; "+askedAgain(in.OpStatus().InFlight)+" and the record released then")
		}
		return withRecord(Result{State: StateWaiting, Message: "the broker confirmed the deletion but the record could not be released"}, in), err
	}
	if err == nil && !confirmed {
		releaseEvent(e, ctx, in, false)
	}
	return Result{State: StateDeleted, Message: done}, nil
}

// reread reads the record again after someone else changed it.
func reread[T driven[T]](e *Engine, ctx context.Context, in T, cause error) (Result, error) {
	if cause != nil && !errors.Is(cause, errLost) {
		return withRecord(Result{State: StateWaiting}, in), cause
	}
	fresh, err := recordsOf[T](e.cfg.Store).Get(ctx, in.GetNamespace(), in.GetName())
	if store.IsNotFound(err) {
		return Result{State: StateDeleted, Message: "the record is gone"}, nil
	}
	if err != nil {
		return Result{}, err
	}
	r := resultOf(e, fresh)
	if r.State == StateSettled && fresh.HasPendingWork() {
		r.State = StateWaiting
	}
	if r.State == StateWaiting && r.Message == "" {
		r.Message = "the record changed meanwhile; reading it again"
	}
	return r, nil
}

// interrupted leaves the record as it is (pending, with its operation in flight if one
// was being sent) when ctx ended: the next step re-sends or polls.
func interrupted[T driven[T]](in T, cause error) (Result, error) {
	return withRecord(Result{State: StateWaiting, Message: "interrupted; the record is left pending"}, in), cause
}

// waitsOnlyForRevocation reports whether x is an instance whose only pending work is a
// withdrawn grant to revoke (RevokePending), which only a driver that sees every namespace
// it was shared with can finish: it is settled for the step meanwhile (Ready, nothing
// to wait for), and stays pending for reconcile.
func waitsOnlyForRevocation(x any) bool {
	inst, ok := x.(*v1alpha1.ServiceInstance)
	if !ok || !inst.RevokePending() {
		return false
	}
	y := inst.DeepCopy()
	y.Status.RevokedGeneration = y.Generation
	return !y.HasPendingWork()
}

// resultOf says what the stored record waits for.
func resultOf[T driven[T]](e *Engine, x T) Result {
	now := e.now()
	st := x.OpStatus()
	r := withRecord(Result{State: StateWaiting}, x)
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
		r.Message = c.Message
	}
	until := func(t *metav1.Time) time.Duration {
		if t == nil {
			return 0
		}
		return max(t.Sub(now), 0)
	}
	switch op := st.InFlight; {
	case op != nil && op.Async:
		r.RequeueAfter = until(op.NextPollAt)
		if op.LastDescription != "" {
			r.Message = op.LastDescription
		}
	case op != nil && st.Retry != nil:
		r.RequeueAfter = until(st.Retry.NextRetryAt)
	case op != nil:
	case st.Retry != nil:
		r.RequeueAfter = until(st.Retry.NextRetryAt)
	case terminallyFailed(x):
		r.State = StateNeedsUser
		r.Message = terminalCondition(x).Message
	case x.HasPendingWork() && !waitsOnlyForRevocation(x):
	default:
		r.State = StateSettled
	}
	return r
}
