package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Polling a binding's asynchronous operation, and settling a bound binding: its Secret projected
// into workloads.

func (e bindingSteps) poll(ctx context.Context, b *v1alpha1.ServiceBinding) (Result, error) {
	op := b.Status.InFlight
	now := e.now()
	if op.NextPollAt != nil && now.Before(op.NextPollAt.Time) {
		return resultOf(e.Engine, b), nil
	}
	t, err := e.pollTarget(ctx, b)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonBrokerUnavailable, err)
	}
	if err := e.auth.VetBindingCall(ctx, b, t, op, false); err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonPlatformUnavailable, err)
	}
	mitigating := op.Type == v1alpha1.OperationUnbind && b.DeletionTimestamp == nil && !slices.Contains(b.Status.Retired, op.BindingID)
	opts, err := e.requestOptions(ctx, b, "", mitigating)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonPlatformUnavailable, err)
	}
	// A verb's poll goes through its gate (callgate.go): the first interrupt lets it
	// finish and its outcome be stored, and so does a --wait whose time runs out once
	// the answer came (a Retry-After above all would be lost).
	end, begun := beginCall(ctx)
	if !begun {
		return interrupted(b, context.Canceled)
	}
	defer end()
	if b, err = claimToPoll(e.Engine, ctx, b, now); err != nil {
		return pollNotClaimed(e.Engine, ctx, b, err)
	}
	pollOp := osb.OpPollBind
	if op.Type == v1alpha1.OperationUnbind {
		pollOp = osb.OpPollUnbind
	}
	resp, cut, callErr := waitBound(ctx, func(ctx context.Context) (*osb.LastOperationResponse, error) {
		return t.client.BindingLastOperation(ctx, &osb.BindingLastOperationRequest{
			RequestOptions: opts, InstanceID: op.InstanceID, BindingID: op.BindingID,
			ServiceID: op.ServiceID, PlanID: op.PlanID, OperationKey: op.OperationKey,
		})
	})
	if err := cutShort(ctx, callErr); err != nil {
		return interrupted(b, err)
	}
	if cut != nil {
		return interrupted(b, cut)
	}
	p := judgePoll(e.Engine, op, pollOp, resp, callErr)
	act, msg := p.act, p.msg
	if act.Result == osb.ResultSucceeded {
		if op.Type == v1alpha1.OperationUnbind {
			res, err := e.unbound(ctx, b, op)
			// The instance, read in this step (after the binding's deletion mark, made
			// before the unbind was sent), holds no place for the binding: none is to
			// be given back once it is gone.
			res.noPlace = !reserved(t.inst, b)
			return res, err
		}
		return e.fetchBound(ctx, b, t, op, opts)
	}
	if res, quiet := quietPoll(e.Engine, b, p); quiet {
		return res, nil
	}
	// A bind whose answer reached the Secret: see secretHoldsBind.
	held := act.Result != osb.ResultInProgress && op.Type == v1alpha1.OperationBind && e.secretHoldsBind(ctx, b, op)
	return finish(e.Engine, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		switch {
		case act.Result == osb.ResultInProgress:
			p.inProgress(e.Engine, x.Status.InFlight, now)
			if callErr == nil {
				phase, reason, msg := inProgressShownBinding(x)
				resumeShown(x, phase, reason, msg, now)
			}
		case held:
			e.answeredBindPolledAgain(x, msg, now)
		case op.Type == v1alpha1.OperationBind:
			e.startBindMitigation(x, act.Reason, "the asynchronous bind failed: "+msg, act.Retry || act.Reason == osb.ReasonPollingExpired, now)
		default:
			e.unbindFailed(x, act, "the asynchronous unbind failed: "+msg, true, now)
		}
	})
}

// inProgressShownBinding is what x shows while its asynchronous operation in flight
// goes on: the phase, reason and message its write-ahead and acceptance recorded
// (unbindWriteAhead, bindingAccepted).
func inProgressShownBinding(x *v1alpha1.ServiceBinding) (v1alpha1.Phase, string, string) {
	op := x.Status.InFlight
	if op.Type == v1alpha1.OperationBind {
		return v1alpha1.PhaseBinding, ReasonBindInProgress, "the broker is binding"
	}
	deleting := x.DeletionTimestamp != nil
	retiring := slices.Contains(x.Status.Retired, op.BindingID)
	switch {
	case !deleting && !retiring:
		return v1alpha1.PhaseOrphanMitigation, ReasonOrphanMitigationInProgress, "the broker is unbinding"
	case !deleting:
		return v1alpha1.PhaseReady, ReasonUnbindInProgress, "the broker is unbinding"
	}
	return v1alpha1.PhaseUnbinding, ReasonUnbindInProgress, "the broker is unbinding"
}

// pollTarget is bindTarget for b's poll: on the read of the instance the drive started
// with its read of b (bindingPollAhead) when it carries one of the instance b names,
// else on a read made now. The cross-namespace rule is checked on it first either way
// (bindTargetOf).
func (e bindingSteps) pollTarget(ctx context.Context, b *v1alpha1.ServiceBinding) (bindTarget, error) {
	read := takePollInstanceRead(ctx, b)
	if read == nil {
		return e.bindTarget(ctx, b)
	}
	inst, err := read.Wait()
	return e.bindTargetOf(ctx, b, inst, err)
}

// settleBinding projects the Secret into the workloads the spec names (and out of
// those it no longer names), then marks the binding Ready. Before any workload is
// changed, the workloads about to be changed are recorded (status.projecting), so that
// a projection interrupted or failed halfway is still taken back by an unbind.
func (e bindingSteps) settleBinding(ctx context.Context, b *v1alpha1.ServiceBinding) (Result, error) {
	if !v1alpha1.SameProjections(b.Spec.Projections, b.Status.Projected) || len(b.Status.Projecting) > 0 {
		if d := e.retryWait(b, actionBind); d > 0 {
			return resultOf(e.Engine, b), nil
		}
		if err := e.auth.AuthorizeProjections(ctx, b); err != nil {
			return preCallFailure(e.Engine, ctx, b, ReasonBindProjectionFailed, err)
		}
		if err := checkBindingEnv(b); err != nil {
			return preCallFailure(e.Engine, ctx, b, ReasonBindProjectionFailed, err)
		}
		stored, err := e.projectionAhead(ctx, b)
		if store.IsConflict(err) {
			return reread(e.Engine, ctx, b, nil)
		}
		if err != nil {
			return Result{}, err
		}
		b = stored
		if err := e.project(ctx, b); err != nil {
			if ctx.Err() != nil {
				return interrupted(b, ctx.Err())
			}
			return preCallFailure(e.Engine, ctx, b, ReasonBindProjectionFailed, err)
		}
	}
	x := b.DeepCopy()
	now := e.now()
	x.Status.Projected = append([]v1alpha1.WorkloadProjection(nil), b.Spec.Projections...)
	x.Status.Projecting = nil
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionRefused)
	x.Status.InFlight, x.Status.Retry = nil, nil
	x.Status.ObservedGeneration = x.Generation
	x.Status.Phase = v1alpha1.PhaseReady
	if c := meta.FindStatusCondition(x.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonBound,
			fmt.Sprintf("the broker holds the binding; the credentials are in Secret %q", x.Spec.SecretName), now)
	} else {
		c.ObservedGeneration = x.Generation
	}
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
	store.ClearClaim(x, e.cfg.Holder)
	if equalStatus(x, b) && v1alpha1.SameProjections(x.Status.Projected, b.Status.Projected) && len(x.Status.Projected) == len(b.Status.Projected) &&
		len(b.Status.Projecting) == 0 {
		return resultOf(e.Engine, b), nil
	}
	return storeStatus(e.Engine, ctx, b, x)
}

// projectionAhead records in status.projecting every workload the projection is about
// to change (the spec's), in one write guarded by resourceVersion, unless they are
// recorded already.
func (e bindingSteps) projectionAhead(ctx context.Context, b *v1alpha1.ServiceBinding) (*v1alpha1.ServiceBinding, error) {
	ahead := unionProjections(b.Status.Projecting, b.Spec.Projections)
	if len(ahead) == len(b.Status.Projecting) {
		return b, nil
	}
	x := b.DeepCopy()
	x.Status.Projecting = ahead
	return e.cfg.Store.Bindings().Update(ctx, x)
}

// project makes the workloads hold the projections of the spec and no other: those no
// longer named (made, or possibly begun) are taken back, those named are made.
func (e bindingSteps) project(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	if e.cfg.Projector == nil {
		return errors.New("the binding is to be projected into workloads, and this engine has no projector")
	}
	for _, p := range unionProjections(b.Status.Projected, b.Status.Projecting) {
		if !containsProjection(b.Spec.Projections, p) {
			if err := e.cfg.Projector.Unproject(ctx, b.Namespace, b.Name, p); err != nil {
				return fmt.Errorf("removing the projection from %s %q: %w", p.Kind, p.Name, err)
			}
		}
	}
	for _, p := range b.Spec.Projections {
		if err := e.cfg.Projector.Project(ctx, b.Namespace, b.Name, b.Spec.SecretName, p); err != nil {
			return fmt.Errorf("projecting Secret %q into %s %q: %w", b.Spec.SecretName, p.Kind, p.Name, err)
		}
	}
	return nil
}

// fetchBound fetches the credentials of a bind the broker finished and stores them. The
// grant is checked before the credentials are fetched: the bind in flight may be forged
// (a status is free to write), or the grant revoked meanwhile. Nothing is fetched then:
// the operation stays to be polled again after a backoff (the refusal shows), and a
// binding being deleted unbinds instead.
func (e bindingSteps) fetchBound(ctx context.Context, b *v1alpha1.ServiceBinding, t bindTarget, op *v1alpha1.Operation, opts osb.RequestOptions) (Result, error) {
	if err := e.auth.CheckConsumer(ctx, b, t.inst); err != nil {
		if b.DeletionTimestamp == nil {
			return e.refusedConsumer(ctx, b, t.inst, err)
		}
		return finish(e.Engine, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			e.startBindMitigation(x, ReasonRefusedNotShared, "the bind succeeded, but its credentials are not fetched: "+err.Error(), false, now)
		})
	}
	// (Part of the poll, under its gate: callgate.go.)
	got, cut, err := waitBound(ctx, func(ctx context.Context) (*osb.GetBindingResponse, error) {
		return t.client.GetBinding(ctx, &osb.GetBindingRequest{RequestOptions: opts,
			InstanceID: op.InstanceID, BindingID: op.BindingID, ServiceID: op.ServiceID, PlanID: op.PlanID})
	})
	err = bounded(err, got, http.StatusOK, "GET", bindingPath(op))
	if cerr := cmp.Or(cutShort(ctx, err), cut); cerr != nil {
		return interrupted(b, cerr)
	}
	if err == nil {
		return e.bound(ctx, b, t, answerOf(got))
	}
	// The binding may not be retrievable yet (404 while being created): poll again;
	// the broker remembers the operation's final state.
	msg := "the bind succeeded but the binding could not be fetched: " + describe(err, 0)
	return finish(e.Engine, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		f := x.Status.InFlight
		f.LastDescription = storedText(msg)
		f.NextPollAt = mtime(now.Add(pollDelay(e.Engine, f, 0, now)))
	})
}
