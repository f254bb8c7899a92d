package engine

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// This file holds the part of the engine's protocol that instances and bindings share:
// the record kinds it drives, conditions, retries with backoff and terminal failures.
// Writing a step's outcome is in record_outcome.go, the step itself in step.go.

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
	if inst, ok := x.(*v1alpha1.ServiceInstance); ok {
		dropRebindOfUnprovisioned(inst, now)
	}
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

// startOrphanMitigation records in x that the outcome of its create call (provision,
// bind) is uncertain, for reason: what the broker may hold is removed right away, and
// the call is made again afterwards when retry is set. retryReason is the retry's
// reason, cond the message of the OrphanMitigation condition.
func startOrphanMitigation(e *Engine, x opRecord, reason, msg string, retry bool, retryReason, cond string, now time.Time) {
	st := x.OpStatus()
	st.OrphanMitigation = &v1alpha1.OrphanMitigationState{
		Reason: reason, Message: storedText(msg), StartedAt: metav1.NewTime(now), RetryAfter: retry,
	}
	e.retryLater(x, retryReason, msg, true, now)
	st.Phase = v1alpha1.PhaseOrphanMitigation
	setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionTrue, ReasonOrphanMitigationInProgress, cond, now)
}

// removalFailed records that a call removing what the broker holds of x (a deletion's,
// or orphan mitigation's) failed, for reason: it is retried with backoff, and a
// deletion's message says how to drop the record without the broker (verb --abandon).
func removalFailed(e *Engine, x opRecord, reason, msg, verb string, now time.Time) {
	if x.GetDeletionTimestamp() != nil {
		msg += fmt.Sprintf(`; it is retried until the broker confirms (to drop the record without the broker: %s)`, hint.Quoted(x.GetNamespace(), verb, x.GetName(), "--abandon"))
	}
	e.retryLater(x, reason, msg, false, now)
	if x.OpStatus().OrphanMitigation != nil {
		setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionTrue, reason, msg, now)
	}
}
