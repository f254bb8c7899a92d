package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// How a failed broker call is described and stored: its reason, its message bounded for a
// record, and a call left to reconcile.

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

// reconcileMayNot is the failure of a reconcile run refused what a verb would leave to
// reconcile: nobody else takes it up, so it is retried with backoff, saying that
// reconcile's own rights are short.
func reconcileMayNot(l *LeftToReconcileError) error {
	why := l.Error()
	if l.Err != nil {
		why = l.Err.Error()
	}
	return fmt.Errorf("reconcile itself was refused (%s), so nothing more is done for this record until its rights allow it: grant reconcile's ServiceAccount what the refusal names (\"kubectl catalog reconcile install\" grants what reconcile needs); retried with backoff", why)
}

// AsLeftToReconcile returns the LeftToReconcileError err carries, if any.
func AsLeftToReconcile(err error) (*LeftToReconcileError, bool) {
	var l *LeftToReconcileError
	ok := errors.As(err, &l)
	return l, ok
}

// leaveToReconcile records that the call is reconcile's to make: no failure, no backoff
// (reconcile takes it up at once), the record as pending as it was.
//
// A record with no pending work (a settled one a verb stepped only to check it) has
// nothing to leave: reconcile, which takes up only pending records, would never come
// back to it, and the condition would stay. It is left as it was, unwritten.
func leaveToReconcile[T driven[T]](e *Engine, ctx context.Context, in T, cause *LeftToReconcileError) (Result, error) {
	if !in.HasPendingWork() {
		return resultOf(e, in), nil
	}
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
