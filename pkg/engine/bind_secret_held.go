package engine

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A bind whose answer reached the binding's Secret and whose outcome could not be
// recorded (the record's write refused, the process killed between the two writes) was
// answered: the call is certain, only its record is missing. The Secret names the id
// whose credentials it holds (store.AnnotationBindingID), so that such a bind is finished
// by recording it, never by orphan mitigation: unbinding that id would leave the Secret
// holding credentials the broker no longer has (a rotation's binding, bound under its
// old id, would serve nobody's credentials until it bound again).

// secretHoldsBind reports whether b's Secret holds the credentials of op, b's bind in
// flight.
func (e bindingSteps) secretHoldsBind(ctx context.Context, b *v1alpha1.ServiceBinding, op *v1alpha1.Operation) bool {
	if op == nil || op.Type != v1alpha1.OperationBind || op.BindingID == "" || b.Spec.SecretName == "" {
		return false
	}
	s, err := e.cfg.Store.GetSecret(ctx, b.Namespace, b.Spec.SecretName)
	return err == nil && store.HeldBindingID(s, b) == op.BindingID
}

// answeredBindRetried records in x that the re-send of its bind, whose answer reached
// the Secret before, got no usable answer (msg): the call stays in flight and the
// identical request is sent again after the backoff, instead of orphan mitigation.
func (e bindingSteps) answeredBindRetried(x *v1alpha1.ServiceBinding, msg string, now time.Time) {
	op := x.Status.InFlight
	e.retryLater(x, ReasonBindCallFailed, fmt.Sprintf("%s; the broker answered this bind before and Secret %q holds its credentials (only recording the answer failed): the identical request is sent again until the broker answers, and the binding id is not unbound meanwhile", msg, x.Spec.SecretName), false, now)
	x.Status.InFlight = op
}

// boundHeld records b bound by its bind in flight, whose re-send the broker answered
// without credentials (it hands them out once) while the Secret holds those of the first
// answer: the Secret is left as it is.
func (e bindingSteps) boundHeld(ctx context.Context, b *v1alpha1.ServiceBinding, a bindAnswer) (Result, error) {
	op := b.Status.InFlight
	s, err := e.cfg.Store.GetSecret(ctx, b.Namespace, b.Spec.SecretName)
	if err != nil {
		return Result{}, err
	}
	return finish(e.Engine, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		e.markBound(x, a, op, s.Data, nil, now)
	})
}

// answeredBindPolledAgain records in x that a poll of its asynchronous bind, whose
// credentials reached the Secret before, got no usable answer (msg): the operation is
// polled again after the backoff (its polling deadline notwithstanding), instead of
// orphan mitigation.
func (e bindingSteps) answeredBindPolledAgain(x *v1alpha1.ServiceBinding, msg string, now time.Time) {
	op := x.Status.InFlight
	e.retryLater(x, ReasonBindFailed, fmt.Sprintf("%s; the broker finished this bind before and Secret %q holds its credentials (only recording them failed): the operation is polled again until the broker answers, and the binding id is not unbound meanwhile", msg, x.Spec.SecretName), false, now)
	x.Status.InFlight = op
	op.NextPollAt = x.Status.Retry.NextRetryAt
}

// lostBindHeld finishes op, b's bind in flight, whose kept request cannot be read back
// (cause: it cannot be sent again as it was) while b's Secret holds the credentials of
// its answer. Where the service serves GET binding, the broker's binding is read: found,
// b is recorded bound with the Secret as it is (the answer's other fields from the
// read); any other answer is read again after the backoff, the call kept in flight.
// Where it does not, nothing can be asked of the broker, and the Secret is the record of
// its answer: b is recorded bound at once. The id is never unbound for it.
func (e bindingSteps) lostBindHeld(ctx context.Context, b *v1alpha1.ServiceBinding, t bindTarget, op *v1alpha1.Operation, cause error) (Result, error) {
	// The bind in flight and the Secret's annotation are free to write: op's ids are
	// checked as for any call about them, before anything is asked or recorded.
	if err := e.auth.VetBindingCall(ctx, b, t, op, false); err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonPlatformUnavailable, err)
	}
	if !t.retrievable() {
		return e.boundHeld(ctx, b, bindAnswer{})
	}
	opts, err := e.requestOptions(ctx, b, "", false)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonPlatformUnavailable, err)
	}
	// A verb's read goes through its gate as its calls do (callgate.go).
	end, begun := beginCall(ctx)
	if !begun {
		return interrupted(b, context.Canceled)
	}
	defer end()
	got, cut, err := waitBound(ctx, func(ctx context.Context) (*osb.GetBindingResponse, error) {
		return t.client.GetBinding(ctx, &osb.GetBindingRequest{RequestOptions: opts,
			InstanceID: op.InstanceID, BindingID: op.BindingID, ServiceID: op.ServiceID, PlanID: op.PlanID})
	})
	if cerr := cmp.Or(cutShort(ctx, err), cut); cerr != nil {
		return interrupted(b, cerr)
	}
	if err = bounded(err, got, http.StatusOK, "GET", bindingPath(op)); err == nil {
		return e.boundHeld(ctx, b, answerOf(got))
	}
	return preCallFailure(e.Engine, ctx, b, ReasonBindCallFailed, fmt.Errorf(
		"%v; the broker answered this bind before and Secret %q holds its credentials (only recording the answer failed), but the binding could not be read back from the broker (%s): it is read again until the broker answers, and the binding id is not unbound meanwhile",
		cause, b.Spec.SecretName, describe(err, 0)))
}
