package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// This file holds the part of the engine's protocol that instances and bindings share:
// write-ahead, storing an outcome, retries with backoff, terminal failures, and what a
// stored record waits for.

// opRecord is a record with the engine's operation status: what the status helpers
// change.
type opRecord interface {
	metav1.Object
	OpStatus() *v1alpha1.OperationStatus
	HasPendingWork() bool
}

// driven is a record kind the engine drives: instances and bindings.
type driven[T any] interface {
	*v1alpha1.ServiceInstance | *v1alpha1.ServiceBinding
	v1alpha1.Record
	OpStatus() *v1alpha1.OperationStatus
	DeepCopy() T
}

// recordsOf is the store's records of T's kind.
func recordsOf[T driven[T]](s *store.Store) store.Records[T] {
	var zero T
	if _, ok := any(zero).(*v1alpha1.ServiceInstance); ok {
		return any(s.Instances()).(store.Records[T])
	}
	return any(s.Bindings()).(store.Records[T])
}

// withRecord sets the record of a result, in the field of its kind.
func withRecord[T driven[T]](r Result, x T) Result {
	switch v := any(x).(type) {
	case *v1alpha1.ServiceInstance:
		r.Instance = v
	case *v1alpha1.ServiceBinding:
		r.Binding = v
	}
	return r
}

// setCondition sets a condition, stamping the generation it speaks for.
func setCondition(x opRecord, typ string, status metav1.ConditionStatus, reason, msg string, now time.Time) {
	meta.SetStatusCondition(&x.OpStatus().Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: storedText(msg),
		ObservedGeneration: x.GetGeneration(), LastTransitionTime: metav1.NewTime(now),
	})
}

// retryWait is how long a retry of action is still held back by status.retry.
func (e *Engine) retryWait(x opRecord, action string) time.Duration {
	r := x.OpStatus().Retry
	if r == nil || r.NextRetryAt == nil {
		return 0
	}
	if a := actionOf(r.Reason); a != "" && a != action {
		return 0
	}
	return r.NextRetryAt.Sub(e.now())
}

// terminallyFailed reports a failure recorded for the current spec that retrying will
// not fix: the record waits for the user.
func terminallyFailed(x opRecord) bool {
	return terminalCondition(x) != nil
}

// terminalCondition is the condition of a failure recorded for the current spec that
// retrying will not fix (Failed, or an instance's UpdateFailed), or nil.
func terminalCondition(x opRecord) *metav1.Condition {
	st := x.OpStatus()
	if st.Retry != nil {
		return nil
	}
	for _, typ := range []string{v1alpha1.ConditionFailed, v1alpha1.ConditionUpdateFailed} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == x.GetGeneration() {
			return c
		}
	}
	return nil
}

// equalStatus reports whether a settled record's status would not change by writing b
// over a.
func equalStatus(a, b opRecord) bool {
	_, ca := store.LeaseOf(a)
	_, cb := store.LeaseOf(b)
	sa, sb := a.OpStatus(), b.OpStatus()
	return ca == cb && sa.Phase == sb.Phase && sa.ObservedGeneration == sb.ObservedGeneration &&
		sa.InFlight == nil && sb.InFlight == nil && sa.Retry == nil && sb.Retry == nil &&
		len(sa.Conditions) == len(sb.Conditions) && conditionsEqual(sa.Conditions, sb.Conditions)
}

func conditionsEqual(a, b []metav1.Condition) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

// retryLater clears the operation in flight and schedules the next attempt with backoff
// (at once when immediate is set), counting attempts per action.
func (e *Engine) retryLater(x opRecord, reason, msg string, immediate bool, now time.Time) {
	st := x.OpStatus()
	attempts := int32(1)
	if r := st.Retry; r != nil && sameOperation(actionOf(r.Reason), actionOf(reason)) {
		attempts = r.Attempts + 1
	}
	delay := e.backoff(attempts)
	if immediate {
		delay = 0
	}
	next := now.Add(delay)
	st.Retry = &v1alpha1.RetryState{
		Attempts: attempts, Reason: reason, LastError: storedText(msg), LastAttemptAt: mtime(now), NextRetryAt: mtime(next),
	}
	st.InFlight = nil
	st.Phase = v1alpha1.PhaseFailed
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, reason,
		fmt.Sprintf("%s (attempt %d; next retry at %s)", msg, attempts, next.UTC().Format(time.RFC3339)), now)
}

// sameOperation reports whether two actions' retries are attempts of one operation of a
// record: the same action, or a provision or bind and the orphan mitigation of its
// uncertain call. Attempts are counted across them, so that a call failing and its
// mitigation failing once in turn still back off further and further.
func sameOperation(a, b string) bool {
	if a == b {
		return true
	}
	creates := func(x string) bool { return x == actionProvision || x == actionBind }
	return (a == actionOrphanMitigation && creates(b)) || (b == actionOrphanMitigation && creates(a))
}

// terminalFailure records a failure that retrying will not fix; the record settles
// until the user changes its spec.
func (e *Engine) terminalFailure(x opRecord, reason, msg string, now time.Time) {
	st := x.OpStatus()
	st.InFlight, st.Retry = nil, nil
	st.ObservedGeneration = x.GetGeneration()
	st.Phase = v1alpha1.PhaseFailed
	setCondition(x, v1alpha1.ConditionFailed, metav1.ConditionTrue, reason, msg, now)
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg, now)
}

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
	e.statusEvents(ctx, in, stored)
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
	if ctx.Err() != nil {
		return interrupted(in, ctx.Err())
	}
	if ltr, ok := AsLeftToReconcile(cause); ok {
		return leaveToReconcile(e, ctx, in, ltr)
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
	if err := store.SetClaim(x, e.cfg.Holder, e.cfg.ClaimTTL, now); err != nil {
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
	e.statusEvents(ctx, in, stored)
	dropSent(e, ctx, replaced, stored)
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
		if l.ExpiresAt.Sub(e.now()) >= e.cfg.ClaimTTL*7/8 {
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
			e.outcomeNotRecordedEvent(ctx, in, cause, then)
		}
	}
	again := "the record keeps the call in flight: " + askedAgain(op) + " and its answer recorded then"
	for i := range 5 {
		x := cur.DeepCopy()
		now := e.now()
		mutate(x, now)
		if any(cur) != any(in) {
			// Re-applied to a record someone else wrote since the write-ahead: whatever
			// the outcome says, an id listed there may be held at the broker (a re-send
			// may have created it), so none is removed.
			keepListed(x.OpStatus(), cur.OpStatus().ExternalIDs)
		}
		if op := x.OpStatus().InFlight; op != nil && op.Async {
			_ = store.SetClaim(x, e.cfg.Holder, e.cfg.ClaimTTL, now)
		} else {
			store.ClearClaim(x, e.cfg.Holder)
		}
		if i == 0 {
			sent = e.answerEvents(ctx, cur, x)
		}
		stored, err := records.Update(ctx, x)
		if err == nil {
			e.statusEvents(ctx, cur, stored, sent...)
			dropSent(e, ctx, op, stored)
			return resultOf(e, stored), nil
		}
		if !store.IsConflict(err) {
			notRecorded(err, again)
			return outcomeNotStored(e, ctx, cur, err)
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
// polls again) after the backoff instead of at once. The write error is still returned.
func outcomeNotStored[T driven[T]](e *Engine, ctx context.Context, in T, cause error) (Result, error) {
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

// callFailedReason is the retry reason of a call of type t whose outcome is unknown: its
// action is t's, so the retry holds back exactly the re-send of that call.
func callFailedReason(t v1alpha1.OperationType) string {
	switch t {
	case v1alpha1.OperationUpdate:
		return ReasonUpdateCallFailed
	case v1alpha1.OperationDeprovision:
		return ReasonDeprovisionCallFailed
	case v1alpha1.OperationBind:
		return ReasonBindCallFailed
	case v1alpha1.OperationUnbind:
		return ReasonUnbindCallFailed
	}
	return ReasonProvisionCallFailed
}

// bounded is callErr or, when the call succeeded with an answer that has a field over
// the limits of osb.OversizedAnswer, a malformed answer (status, to method path): a
// broker error, retried with backoff (a created resource of a malformed 201 or 202 is
// mitigated), never an outcome too large to store that would be re-sent forever.
func bounded(callErr error, answer any, status int, method, path string) error {
	if callErr != nil {
		return callErr
	}
	if err := osb.OversizedAnswer(answer); err != nil {
		return &osb.MalformedResponseError{Method: method, Path: path, StatusCode: status, Err: err}
	}
	return nil
}

// bindingPath is the path of the OSB binding op is about, for messages.
func bindingPath(op *v1alpha1.Operation) string {
	return "/v2/service_instances/" + op.InstanceID + "/service_bindings/" + op.BindingID
}

// maxStoredText is the longest message, in bytes, the engine stores in one field of a
// record (a condition's message, status.retry.lastError, inFlight.lastDescription,
// orphanMitigation.message). Brokers' descriptions have no limit, and a record holding
// one several times must still fit in a ConfigMap (1 MiB).
const maxStoredText = 4096

// storedTextTail is how much of the end of a long message storedText keeps: the engine
// appends there what the user can do next.
const storedTextTail = 512

// storedText shortens a message longer than maxStoredText to its start and its end,
// joined by a visible mark saying how much was cut. It never splits a UTF-8 sequence.
func storedText(s string) string {
	if len(s) <= maxStoredText {
		return s
	}
	const markFormat = " [... %d bytes cut ...] "
	head := maxStoredText - storedTextTail - len(fmt.Sprintf(markFormat, len(s)))
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - storedTextTail
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + fmt.Sprintf(markFormat, tail-head) + s[tail:]
}

// release removes the finalizer of a record whose deletion is done, letting the API
// server delete it.
//
// A deletion the broker confirmed has its Event go out with the removal (it says only
// what the broker answered), followed by a Warning when the removal fails; a release
// without a broker call has its Event once the removal is made.
func release[T driven[T]](e *Engine, ctx context.Context, in T, done string, confirmed bool) (Result, error) {
	if confirmed {
		e.releaseEvent(ctx, in, true)
	}
	_, err := recordsOf[T](e.cfg.Store).RemoveFinalizer(ctx, in)
	if err != nil && !store.IsNotFound(err) {
		if confirmed {
			e.outcomeNotRecordedEvent(ctx, in, err, "the record is not released yet: it keeps the call in flight; "+askedAgain(in.OpStatus().InFlight)+" and the record released then")
		}
		return withRecord(Result{State: StateWaiting, Message: "the broker confirmed the deletion but the record could not be released"}, in), err
	}
	if err == nil && !confirmed {
		e.releaseEvent(ctx, in, false)
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

// describe turns a broker call's failure into a message for the record: the broker's
// own words when it sent some (the description of an error body, else its message or
// the start of a page that is not JSON), never anything of a 2xx or 3xx body, which may
// hold credentials (the osb errors keep none of it).
func describe(err error, status int) string {
	if err == nil {
		return fmt.Sprintf("the broker answered %d %s, which is not a valid answer to this call", status, http.StatusText(status))
	}
	if he, ok := osb.AsHTTPStatusError(err); ok {
		msg := fmt.Sprintf("the broker answered %d %s", he.StatusCode, http.StatusText(he.StatusCode))
		if he.ErrorCode != "" {
			msg += " " + he.ErrorCode
		}
		switch {
		case he.Description != "":
			msg += ": " + he.Description
		case he.Message != "":
			msg += ": " + he.Message
		case he.BodyExcerpt != "":
			msg += ": " + he.BodyExcerpt
		case he.StatusCode >= 300 && he.StatusCode < 400 && he.RedirectHost != "":
			msg += fmt.Sprintf(": a redirect (to host %q), which is not followed for this call", he.RedirectHost)
		case he.StatusCode >= 300 && he.StatusCode < 400:
			msg += ": a redirect, which is not followed for this call"
		}
		return msg
	}
	return err.Error()
}

// LeftToReconcileError says the user running the engine may not read a cluster broker's
// credentials: the broker call is left to reconcile, which may.
type LeftToReconcileError struct {
	Broker string
	// What, when set, says which write the user may not make instead.
	What string
	Err  error
}

func (e *LeftToReconcileError) Error() string {
	if e.What != "" {
		return e.What
	}
	return fmt.Sprintf("you may not read the credentials of cluster broker %q, so reconcile sends the request (the installed CronJob or \"kubectl catalog reconcile\" run by an administrator)", e.Broker)
}

func (e *LeftToReconcileError) Unwrap() error { return e.Err }

// reconcileMayNotRead is the failure of a reconcile run that may not read the
// credentials of cluster broker b: nobody else will make the call, so it is retried with
// backoff, saying what to grant.
func reconcileMayNotRead(b *v1alpha1.Broker, err error) error {
	secret := "its credentials Secret"
	if b.Spec.Auth != nil {
		secret = fmt.Sprintf("Secret %q", b.Spec.Auth.SecretRef.Name)
	}
	return fmt.Errorf("reconcile itself may not read the credentials of cluster broker %q (%s in namespace %q), so no request can be sent: grant reconcile's ServiceAccount \"get\" on that Secret (\"kubectl catalog reconcile install\" does; \"kubectl auth can-i get secrets -n %s --as system:serviceaccount:NAMESPACE:NAME\" checks it); retried with backoff: %w",
		b.Name, secret, b.Namespace, b.Namespace, err)
}

// AsLeftToReconcile returns the LeftToReconcileError err carries, if any.
func AsLeftToReconcile(err error) (*LeftToReconcileError, bool) {
	var l *LeftToReconcileError
	ok := errors.As(err, &l)
	return l, ok
}

// leaveToReconcile records that the call is reconcile's to make: no failure, no backoff
// (reconcile takes it up at once), the record as pending as it was.
func leaveToReconcile[T driven[T]](e *Engine, ctx context.Context, in T, cause *LeftToReconcileError) (Result, error) {
	x := in.DeepCopy()
	now := e.now()
	msg := cause.Error()
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonWaitingForReconcile, msg, now)
	store.ClearClaim(x, e.cfg.Holder)
	res := withRecord(Result{State: StateWaiting, RequeueAfter: e.cfg.PollInterval, Message: msg}, in)
	if c := meta.FindStatusCondition(in.OpStatus().Conditions, v1alpha1.ConditionReady); c != nil && c.Reason == ReasonWaitingForReconcile {
		if l, ok := store.LeaseOf(in); !ok || l.Holder != e.cfg.Holder {
			return res, nil
		}
	}
	stored, err := recordsOf[T](e.cfg.Store).Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e, ctx, in, nil)
	}
	if err != nil {
		return Result{}, err
	}
	return withRecord(res, stored), nil
}

// WaitingForReconcile reports whether x waits for reconcile to make a broker call its
// user may not make (nil is not waiting).
func WaitingForReconcile(x opRecord) bool {
	if x == nil || reflect.ValueOf(x).IsNil() {
		return false
	}
	c := meta.FindStatusCondition(x.OpStatus().Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == ReasonWaitingForReconcile
}

// ReasonRefusedInconsistentStatus: the record's status contradicts itself (an update in
// flight for an instance never provisioned, an operation of no known type, a call
// without the OSB id it is about). A status is free to write for anyone who may update
// the record's ConfigMap, so it is read as untrusted input: such a record is refused,
// visibly, and no call is made from it.
const ReasonRefusedInconsistentStatus = "RefusedInconsistentStatus"

// inconsistentStatus is the refusal of a record whose operation in flight (the part of
// the status a step acts on) cannot be what the engine wrote, or nil. fix says what the
// user does about it.
func inconsistentStatus(kind, name string, op *v1alpha1.Operation, types []v1alpha1.OperationType, why string) error {
	if op == nil {
		return nil
	}
	switch {
	case !slices.Contains(types, op.Type):
		why = fmt.Sprintf("status.inFlight has an operation of unknown type %q", op.Type)
	case op.InstanceID == "":
		why = "status.inFlight names no instance id"
	}
	if why == "" {
		return nil
	}
	return refused(ReasonRefusedInconsistentStatus,
		"%s %q has an inconsistent status (%s), which the engine never writes: nothing is sent to the broker from it; remove status.inFlight from the record's ConfigMap, or drop the record without the broker (\"kubectl catalog %s %s --abandon\")",
		kind, name, why, map[string]string{"instance": "deprovision", "binding": "unbind"}[kind], name)
}

// checkInstanceStatus refuses an instance whose operation in flight cannot be acted on.
func checkInstanceStatus(inst *v1alpha1.ServiceInstance) error {
	op := inst.Status.InFlight
	why := ""
	if op != nil && op.Type == v1alpha1.OperationUpdate && inst.Status.Provisioned == nil {
		why = "an update in flight for an instance that was never provisioned"
	}
	return inconsistentStatus("instance", inst.Name, op,
		[]v1alpha1.OperationType{v1alpha1.OperationProvision, v1alpha1.OperationUpdate, v1alpha1.OperationDeprovision}, why)
}

// checkBindingStatus refuses a binding whose operation in flight cannot be acted on.
func checkBindingStatus(b *v1alpha1.ServiceBinding) error {
	op := b.Status.InFlight
	why := ""
	if op != nil && op.BindingID == "" {
		why = "status.inFlight names no binding id"
	}
	return inconsistentStatus("binding", b.Name, op, []v1alpha1.OperationType{v1alpha1.OperationBind, v1alpha1.OperationUnbind}, why)
}

// pollDeadline is when polling op gives up: its recorded deadline, else (a status that
// lost it, or never had it) the engine's own bound from when it started, so that no
// status makes a record poll forever.
func (e *Engine) pollDeadline(op *v1alpha1.Operation) time.Time {
	if op.PollDeadline != nil {
		return op.PollDeadline.Time
	}
	return op.StartedAt.Add(e.cfg.MaxPollingDuration)
}

// ReasonRefusedUserProvidedChange: spec.userProvided was added to an instance a broker
// holds, or removed from a user-provided one; neither is a change an instance can make.
const ReasonRefusedUserProvidedChange = "RefusedUserProvidedChange"

// heldAtBroker reports whether inst's status says a broker may hold something of it.
func heldAtBroker(inst *v1alpha1.ServiceInstance) bool {
	st := &inst.Status
	return st.Provisioned != nil || len(st.ExternalIDs) > 0 || st.InFlight != nil || st.OrphanMitigation != nil
}

// wasUserProvided reports whether inst's status is a user-provided instance's (or the
// refusal of its change).
func wasUserProvided(inst *v1alpha1.ServiceInstance) bool {
	if heldAtBroker(inst) {
		return false
	}
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionRefused); c != nil && c.Reason == ReasonRefusedUserProvidedChange {
		return true
	}
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == ReasonUserProvided
}
