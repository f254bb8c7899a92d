package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The unbind step: a deletion, orphan mitigation or the ids a rotation retired; the projections
// and the Secret go first, then the broker call.

// unbindTarget is the OSB binding id an unbind step is about: an interrupted unbind's,
// a retired id, the id of an uncertain bind, the bound one, then (for a deletion) any
// other id the broker may hold.
func unbindTarget(b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation) string {
	switch st := b.Status; {
	case prev != nil && prev.Type == v1alpha1.OperationUnbind:
		return prev.BindingID
	case len(st.Retired) > 0:
		return st.Retired[0]
	case st.OrphanMitigation != nil:
		return b.CurrentExternalID()
	case st.Bound != nil:
		return st.Bound.BindingID
	case st.InFlight != nil && st.InFlight.BindingID != "":
		return st.InFlight.BindingID
	}
	if ids := bindingIDsAtBroker(b); len(ids) > 0 {
		return ids[0]
	}
	return b.CurrentExternalID()
}

func (e bindingSteps) unbind(ctx context.Context, b *v1alpha1.ServiceBinding, prev *v1alpha1.Operation) (Result, error) {
	if prev == nil && ctx.Value(unownedForgottenKey{}) == nil {
		// Ids b does not own are never sent for it: they keep nothing waiting.
		if ids := e.auth.UnownedIDs(ctx, b, bindingIDsAtBroker(b)); len(ids) > 0 {
			return e.forgetUnownedIDs(ctx, b, ids)
		}
	}
	deleting := b.DeletionTimestamp != nil
	id := unbindTarget(b, prev)
	retiring := slices.Contains(b.Status.Retired, id)
	mitigating := !deleting && !retiring
	action := actionUnbind
	if mitigating {
		action = actionOrphanMitigation
	}
	// A deletion of a binding the broker never held (a refused one, say) waits for no
	// retry: nothing is sent.
	if prev == nil && (!deleting || len(bindingIDsAtBroker(b)) > 0) {
		if d := e.retryWait(b, action); d > 0 {
			return resultOf(e.Engine, b), nil
		}
	}
	// The instance, its broker and class are read while the credentials are removed (b
	// was read after its deletion mark).
	var pending *ahead.Read[instanceRead]
	if deleting && len(bindingIDsAtBroker(b)) > 0 {
		pending = e.readBoundInstance(ctx, b, id)
		instNS, _ := b.InstanceRef()
		e.auth.ReadNamespaceKeysAhead(ctx, bindingIDsAtBroker(b), b.Namespace, instNS)
	}
	if deleting {
		// Workloads stop receiving the credentials before the broker revokes them.
		if err := e.cleanUpBinding(ctx, b); err != nil {
			return preCallFailure(e.Engine, ctx, b, ReasonUnbindCleanupFailed, err)
		}
		b.Status.Projected, b.Status.Secret = nil, nil
	}
	if deleting && len(bindingIDsAtBroker(b)) == 0 {
		// Every id a bind was written ahead for stays listed until the broker confirmed
		// it gone or refused the first request naming it: with none, the broker never
		// held the binding.
		return release(e.Engine, ctx, b, "unbound", false)
	}
	t, ctx, err := e.unbindTargetOf(ctx, b, pending)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonBrokerUnavailable, err)
	}
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationUnbind, InstanceID: t.inst.CurrentExternalID(), BindingID: id,
		ServiceID: t.inst.Spec.ClassID, PlanID: cmp.Or(boundPlanOf(b, id), t.planID), RequestID: e.newRequestID(), StartedAt: metav1.NewTime(e.now()),
	}
	if prev != nil && prev.Type == v1alpha1.OperationUnbind {
		op.InstanceID, op.ServiceID, op.PlanID = prev.InstanceID, prev.ServiceID, prev.PlanID
		op.RequestID, op.StartedAt = prev.RequestID, prev.StartedAt
	}
	opts, err := e.requestOptions(ctx, b, op.RequestID, mitigating)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonPlatformUnavailable, err)
	}
	req := &osb.UnbindRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, BindingID: op.BindingID,
		ServiceID: op.ServiceID, PlanID: op.PlanID, AcceptsIncomplete: true,
	}
	var resp *osb.UnbindResponse
	call := brokerCall{
		op: op, keepsNothing: true, broker: t.broker, osbOp: osb.OpUnbind,
		vet: func(ctx context.Context) error { return e.auth.VetBindingCall(ctx, b, t, op, false) },
		call: func(ctx context.Context) (int, error) {
			var callErr error
			resp, callErr = t.client.Unbind(ctx, req)
			return resp.Status(), bounded(callErr, resp, resp.Status(), "DELETE", bindingPath(op))
		},
	}
	call.phase, call.reason, call.msg = unbindWriteAhead(t, id, mitigating, retiring && !deleting)
	return sendCall(e.Engine, ctx, b, call, func(stored *v1alpha1.ServiceBinding, act osb.Action, callErr error) (Result, error) {
		if act.Result == osb.ResultSucceeded {
			res, err := e.unbound(ctx, stored, op)
			// The instance, read after the deletion mark, holds no place for the binding:
			// none is to be given back once it is gone.
			res.noPlace = !reserved(t.inst, b)
			return res, err
		}
		return finish(e.Engine, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			if act.Poll {
				r := ReasonUnbindInProgress
				if mitigating {
					r = ReasonOrphanMitigationInProgress
				}
				e.bindingAccepted(x, t, resp.Operation, r, "the broker is unbinding", now)
				return
			}
			e.unbindFailed(x, act, describe(callErr, resp.Status())+bindingNotFoundNote(x, op, callErr), false, now)
			brokerMayWork(e.Engine, x, osb.OutcomeOf(resp.Status(), callErr), callErr, now)
		})
	})
}

// unbindTargetOf is what the unbind of b calls: from the reads pending started, with
// the context they carry, else read now.
func (e bindingSteps) unbindTargetOf(ctx context.Context, b *v1alpha1.ServiceBinding, pending *ahead.Read[instanceRead]) (bindTarget, context.Context, error) {
	if pending == nil {
		t, err := e.bindTarget(ctx, b)
		return t, ctx, err
	}
	r, rerr := pending.Wait()
	if r.ctx != nil {
		// It carries the lists of the id checks started with the reads.
		ctx = r.ctx
	}
	t, err := e.bindTargetOf(ctx, b, r.inst, rerr)
	return t, ctx, err
}

// unbindWriteAhead is what the write-ahead of an unbind of id records: an orphan
// mitigation's, a rotation's retiring the credentials it replaced, or a deletion's.
func unbindWriteAhead(t bindTarget, id string, mitigating, retiring bool) (v1alpha1.Phase, string, string) {
	phase, reason, msg := v1alpha1.PhaseUnbinding, ReasonUnbindRequestInFlight, fmt.Sprintf("sending the unbind request to broker %q", t.broker.Name)
	switch {
	case mitigating:
		phase, reason = v1alpha1.PhaseOrphanMitigation, ReasonOrphanMitigationInProgress
		msg = fmt.Sprintf("unbinding at broker %q what the failed bind may have created (orphan mitigation)", t.broker.Name)
	case retiring:
		phase = v1alpha1.PhaseReady
		msg = fmt.Sprintf("unbinding the credentials the rotation replaced (binding id %s) at broker %q", id, t.broker.Name)
	}
	return phase, reason, msg
}

// cleanUpBinding removes the binding's projections from workloads (those made, and
// those recorded as possibly begun), then its Secret, and forgets the projections begun.
func (e bindingSteps) cleanUpBinding(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	ps := unionProjections(b.Status.Projected, b.Status.Projecting)
	if len(ps) > 0 && e.cfg.Projector == nil {
		return errors.New("the binding is projected into workloads, and this engine has no projector to remove it")
	}
	for _, p := range ps {
		if err := e.cfg.Projector.Unproject(ctx, b.Namespace, b.Name, p); err != nil {
			return fmt.Errorf("removing the projection of binding %q from %s %q: %w", b.Name, p.Kind, p.Name, err)
		}
	}
	if err := e.cfg.Store.DeleteBindingSecret(ctx, b, secretReads(ctx, b)); err != nil {
		return err
	}
	b.Status.Projecting = nil
	return nil
}

// unbindFailed records a failed unbind: the broker may still hold the binding, so it
// is retried with backoff, visibly.
func (e bindingSteps) unbindFailed(x *v1alpha1.ServiceBinding, act osb.Action, msg string, async bool, now time.Time) {
	op := x.Status.InFlight
	reason := ReasonUnbindCallFailed
	switch {
	case x.Status.OrphanMitigation != nil && op != nil && !slices.Contains(x.Status.Retired, op.BindingID) && async:
		reason = ReasonOrphanMitigationFailed
	case x.Status.OrphanMitigation != nil && op != nil && !slices.Contains(x.Status.Retired, op.BindingID):
		reason = ReasonOrphanMitigationCallFailed
	case act.WaitForOtherOperation:
		reason = ReasonUnbindBlockedByConcurrentOperation
	case async:
		reason = ReasonUnbindFailed
	}
	removalFailed(e.Engine, x, reason, msg, "unbind", now)
	if x.Status.Bound != nil && x.Status.Bound.BindingID == x.CurrentExternalID() && x.DeletionTimestamp == nil && x.Status.OrphanMitigation == nil {
		// Retiring an old id failed; the new credentials are in place and usable.
		x.Status.Phase = v1alpha1.PhaseReady
	}
}

// unbound finishes an unbind the broker confirmed (200, or 410 Gone) for op's binding
// id: a deletion releases the record once no other id may be held at the broker (a
// rotation holds two); a retired id is dropped; orphan mitigation forgets what was bound
// and binds again under a new id (OSB ids are not reused: a broker may refuse a deleted
// id with 409).
func (e bindingSteps) unbound(ctx context.Context, b *v1alpha1.ServiceBinding, op *v1alpha1.Operation) (Result, error) {
	id := op.BindingID
	retired := slices.Contains(b.Status.Retired, id)
	if b.DeletionTimestamp != nil {
		rest := slices.DeleteFunc(bindingIDsAtBroker(b), func(x string) bool { return x == id })
		if len(rest) == 0 {
			return release(e.Engine, ctx, b, "unbound", true)
		}
		return finish(e.Engine, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
			forget(x, id)
			x.Status.InFlight = nil
			if id == x.CurrentExternalID() {
				x.Status.OrphanMitigation = nil
			}
			if r := x.Status.Retry; r != nil && (actionOf(r.Reason) == actionUnbind || actionOf(r.Reason) == actionOrphanMitigation) {
				x.Status.Retry = nil
			}
			x.Status.Phase = v1alpha1.PhaseUnbinding
			setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonUnbindInProgress,
				fmt.Sprintf("the broker unbound binding id %s; unbinding the other ids it may hold (%s)", id, strings.Join(rest, ", ")), now)
		})
	}
	om := b.Status.OrphanMitigation
	templateFailed := b.Status.Retry != nil && b.Status.Retry.Reason == ReasonSecretTemplateFailed
	return finish(e.Engine, ctx, b, op.RequestID, func(x *v1alpha1.ServiceBinding, now time.Time) {
		forget(x, id)
		x.Status.InFlight = nil
		if retired {
			if x.Status.Retry != nil && actionOf(x.Status.Retry.Reason) == actionUnbind {
				x.Status.Retry = nil
			}
			if x.Status.Bound != nil && x.Status.Bound.BindingID == x.CurrentExternalID() {
				x.Status.Phase = v1alpha1.PhaseReady
				setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonBound,
					fmt.Sprintf("the credentials were rotated; the ones replaced were unbound; the new ones are in Secret %q", x.Spec.SecretName), now)
			}
			return
		}
		x.Status.OrphanMitigation = nil
		if id == x.CurrentExternalID() {
			// OSB ids are never reused: the next bind gets a new one.
			x.Status.ExternalID = e.recordBoundID(x.UID)
		}
		setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionFalse, ReasonOrphanMitigationSucceeded,
			"the broker confirmed it holds nothing of the failed bind", now)
		msg := "bind failed"
		if om != nil {
			msg = om.Message
		}
		if om != nil && om.Reason == ReasonBindCredentialsLost {
			e.retryLater(x, ReasonBindCallFailed, msg+"; the old binding id is unbound, binding again under a new id", true, now)
			return
		}
		if om == nil || om.RetryAfter {
			if x.Status.Retry != nil && actionOf(x.Status.Retry.Reason) == actionBind {
				x.Status.Retry.Attempts--
			}
			e.retryLater(x, ReasonBindCallFailed, msg+"; orphan mitigation done, binding again under a new binding id", false, now)
			return
		}
		if templateFailed && keepPredecessor(x, msg, now) {
			return
		}
		e.terminalFailure(x, ReasonBindFailed, msg+": fix the cause, then unbind and bind again", now)
	})
}

// forget records that the broker holds nothing of the binding under id.
func forget(x *v1alpha1.ServiceBinding, id string) {
	forgetExternalID(&x.Status.OperationStatus, id)
	x.Status.Retired = slices.DeleteFunc(x.Status.Retired, func(r string) bool { return r == id })
	if len(x.Status.Retired) == 0 {
		x.Status.Retired = nil
	}
	if x.Status.Bound != nil && x.Status.Bound.BindingID == id {
		x.Status.Bound = nil
	}
}

// ReasonUnownedIDsForgotten is the reason of the Warning Event (and Ready condition) of
// a record whose status listed OSB ids it does not own, which its step forgot.
const ReasonUnownedIDsForgotten = "UnownedIDsForgotten"

// unownedForgottenKey marks a step's context once it forgot unowned ids: a step forgets
// them once, then goes on.
type unownedForgottenKey struct{}

// forgetUnownedIDs forgets ids, OSB ids b's status lists as held at the broker that b
// does not own (authority.UnownedIDs: a status is free to write for anyone who may update
// the ConfigMap, and the engine never sends such an id for b), with a Warning Event and
// a condition naming b and the ids, then goes on with b's step: they never keep b's
// deletion, or the unbind of the ids b does own, waiting. Only what a status names is
// forgotten: an id its spec names that it does not own stays, refused
// (RefusedIDNotOwned).
func (e bindingSteps) forgetUnownedIDs(ctx context.Context, b *v1alpha1.ServiceBinding, ids []string) (Result, error) {
	ctx = context.WithValue(ctx, unownedForgottenKey{}, true)
	x := b.DeepCopy()
	for _, id := range ids {
		forget(x, id)
		if op := x.Status.InFlight; op != nil && op.BindingID == id {
			x.Status.InFlight = nil
		}
		if x.Status.ExternalID == id {
			x.Status.ExternalID = ""
		}
		if p := x.Status.Predecessor; p != nil && p.ExternalID == id {
			x.Status.Predecessor = nil
		}
	}
	left := e.auth.UnownedIDs(ctx, x, bindingIDsAtBroker(x))
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(left, id) })
	if len(ids) == 0 {
		return e.fresh(ctx, b)
	}
	msg := authority.ForgottenIDsMessage(v1alpha1.KindServiceBinding, b, ids)
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonUnownedIDsForgotten, msg, e.now())
	stored, err := e.cfg.Store.Bindings().Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e.Engine, ctx, b, nil)
	}
	if err != nil {
		return Result{}, err
	}
	ev := NewEvent(b.Namespace, store.ConfigMapName(v1alpha1.KindServiceBinding, b.Name), EventWarning, ReasonUnownedIDsForgotten, "Unbind", msg)
	ev.UID = b.GetUID()
	e.event(ctx, ev)
	return e.fresh(ctx, stored)
}
