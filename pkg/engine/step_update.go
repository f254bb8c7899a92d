package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The update step: a changed spec sent to the broker, its re-send, and how a failure or refusal is recorded.

func (e instanceSteps) update(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation) (Result, error) {
	if prev == nil {
		if d := e.retryWait(inst, actionUpdate); d > 0 {
			return resultOf(e.Engine, inst), nil
		}
	}
	prov := inst.Status.Provisioned
	// A re-send is the update first sent, kept at its write-ahead: its plan, maintenance
	// version and parameters, whatever the spec or its Secrets say now, and it is sent
	// even if the spec now matches what was provisioned (the broker may have applied it).
	// Its success records what it sent; a spec that moved on meanwhile is a later update.
	// An interrupted update of an earlier release, which kept nothing, is built from the
	// spec again.
	resend := prev != nil && prev.Sent != nil
	var params Parameters
	var sent *Parameters
	planID, targetMI := inst.Spec.PlanID, prov.MaintenanceInfoVersion
	if inst.Spec.MaintenanceInfoVersion != "" {
		targetMI = inst.Spec.MaintenanceInfoVersion
	}
	if resend {
		planID, targetMI = prev.PlanID, prev.MaintenanceInfoVersion
		var err error
		if sent, err = sentParameters(e.Engine, ctx, inst, prev.Sent); isSentLost(err) {
			return e.updateLost(ctx, inst, prev, err)
		} else if err != nil {
			return preCallFailure(e.Engine, ctx, inst, ReasonParametersUnavailable, err)
		}
	} else {
		var err error
		if params, err = e.parameters(ctx, inst); err != nil {
			return preCallFailure(e.Engine, ctx, inst, ReasonParametersUnavailable, err)
		}
	}
	planChange := planID != prov.PlanID
	miChange := targetMI != prov.MaintenanceInfoVersion
	paramsChange := sent != nil || (!resend && !params.SameChecksum(prov.ParametersChecksum))
	// An instance moved from another cluster: the update carries only the new context.
	contextChange := !resend && contextUpdateDue(inst)
	if !resend && !planChange && !miChange && !paramsChange && !contextChange {
		if rebindDue(inst) {
			// Settled: the bindings follow the update (rebind.go).
			return e.stepRebind(ctx, inst)
		}
		return e.settle(ctx, inst)
	}
	if prev == nil && terminallyFailed(inst) {
		return resultOf(e.Engine, inst), nil
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonBrokerUnavailable, err)
	}
	if planChange && t.class != nil && !resend {
		if cur := t.plan(prov.PlanID); cur != nil && !t.class.EffectivePlanUpdateable(cur) {
			x := inst.DeepCopy()
			e.updateRefused(x, ReasonUpdateRejected, fmt.Sprintf(
				"plan %q of class %q cannot be changed (the broker says plan_updateable: false); to move to another plan, deprovision and provision again",
				cur.ExternalName, t.class.Spec.ExternalName), e.now())
			store.ClearClaim(x, e.cfg.Holder)
			return storeStatus(e.Engine, ctx, inst, x)
		}
	}
	kctx, cluster, space, err := callContext(e.Engine, ctx, inst, prev, resend)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonPlatformUnavailable, err)
	}
	op := updateOperation(inst, prev, planID, targetMI, params, resend, e.newRequestID(), e.now())
	opts, err := e.requestOptions(ctx, inst, op.RequestID, false)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonPlatformUnavailable, err)
	}
	if paramsChange && !resend {
		changed := params.changed(prov.ParameterHashes)
		sent = &changed
	}
	req, changes := updateRequest(inst, t, op, opts, kctx, planChange, miChange, sent)
	if len(changes) == 0 {
		changes = []string{"this cluster's context only"}
	}
	if !resend {
		// Written ahead with the call: the rebind spec.rebindOnUpdate asks for after it.
		from, to := prov.PlanID, planID
		if p := t.plan(from); p != nil {
			from = p.ExternalName
		}
		if p := t.plan(to); p != nil {
			to = p.ExternalName
		}
		planRebind(inst, planChange, from, to, e.now())
	}
	var resp *osb.UpdateResponse
	call := brokerCall{
		op: op, resend: resend, planID: req.PlanID, params: sent, osbOp: osb.OpUpdate,
		sent:  v1alpha1.SentRequest{ClusterID: cluster, NamespaceUID: space},
		phase: v1alpha1.PhaseUpdating, reason: ReasonUpdateRequestInFlight,
		msg: fmt.Sprintf("sending the update (%s) to broker %q", strings.Join(changes, ", "), t.broker.Name),
		call: func(ctx context.Context) (int, error) {
			var callErr error
			resp, callErr = t.client.Update(ctx, req)
			return resp.Status(), bounded(callErr, resp, resp.Status(), "PATCH", "/v2/service_instances/"+op.InstanceID)
		},
	}
	return e.send(ctx, inst, t, call, func(stored *v1alpha1.ServiceInstance, act osb.Action, callErr error) (Result, error) {
		var outcome osb.Outcome = osb.OutcomeOf(resp.Status(), callErr)
		msg := describe(callErr, resp.Status()) + instanceNotFoundNote(stored, op.InstanceID, callErr)
		// A refusal of a re-send says nothing of the first send: where the broker serves
		// GET instance, it says which plan it holds.
		refusedResend := resend && act.Result == osb.ResultFailed && (act.Terminal || act.RefetchCatalog)
		var held heldUpdate
		if refusedResend && (planChange || miChange) {
			held = e.heldUpdate(ctx, t, op, prov, planChange)
		}
		return finish(e.Engine, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
			switch {
			case act.Result == osb.ResultSucceeded:
				e.succeeded(x, resp.DashboardURL, now)
			case act.Poll:
				e.accepted(x, t, resp.Operation, "", ReasonUpdateInProgress, "the broker is updating", now)
			case held.applied:
				e.succeeded(x, "", now)
				setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonUpdated,
					"the broker updated the instance (its answer was lost; it refused the update sent again, and GET instance shows it applied)", now)
			case refusedResend:
				e.updateFailed(x, act, outcome, msg+"; "+held.refusal(), false, now)
				if sent != nil && !held.known {
					// Whether the first send's parameters were applied is unknown:
					// the next update sends every parameter.
					if p := x.Status.Provisioned; p != nil {
						p.ParametersChecksum, p.ParameterHashes = unknownChecksum, nil
					}
				}
			case !act.Terminal && (updateUnknown(outcome) || resend):
				// (A 5xx carrying update_repeatable: false is the broker's word that
				// the update failed: refused below.)
				e.updateUncertain(x, act, msg, now)
			default:
				e.updateFailed(x, act, outcome, msg, false, now)
			}
			brokerMayWork(e.Engine, x, outcome, callErr, now)
		})
	})
}

// updateUnknown reports whether o, the outcome of a first update, leaves unknown
// whether the broker applied it: no answer (a client timeout, a connection reset), a
// 5xx, a 1xx, 2xx or 3xx that is not a valid answer, or a body that does not decode. A
// 4xx is a refusal: the broker left the instance as it was.
func updateUnknown(o osb.Outcome) bool {
	if o.NotSent || o.PlatformError {
		return false
	}
	return o.NoAnswer || o.Malformed || o.StatusCode < 400 || o.StatusCode >= 500
}

// updateUncertain records an update whose outcome is unknown: the broker may hold the
// instance as it was or as the update asked. The update stays in flight (the request
// kept at its write-ahead with it), so nothing settles on a guess and no later call
// names a plan or previous_values the broker may not hold: it is sent again, the
// identical request, once its retry is due, until the broker answers it (its success,
// a 202 and its poll, or a refusal, which GET instance checks where the broker serves
// it). A verb may not change the spec meanwhile (BusyError); a spec changed by other
// means is a later update, sent once this one is settled.
func (e instanceSteps) updateUncertain(x *v1alpha1.ServiceInstance, act osb.Action, msg string, now time.Time) {
	op := x.Status.InFlight
	reason := ReasonUpdateCallFailed
	if act.WaitForOtherOperation {
		reason = ReasonUpdateBlockedByConcurrentOperation
	}
	e.retryLater(x, reason, msg+"; whether the broker applied the update is unknown, so the same update is sent again until the broker answers it", false, now)
	x.Status.InFlight = op
}

// heldUpdate is what GET instance says of an update whose re-send the broker refused.
type heldUpdate struct {
	// known: the broker said which plan (or maintenance version) it holds; applied:
	// it holds the update's.
	known, applied bool
	// why says why the broker could not be asked, or what it said.
	why string
}

func (h heldUpdate) refusal() string {
	if h.why == "" {
		return "the first send of this update got no answer, and the broker refused it when sent again: it is taken to hold the instance as before"
	}
	return h.why
}

// heldUpdate asks the broker which plan and maintenance version it holds the instance
// with (GET instance, where its service has instances_retrievable), after it refused
// the re-send of op, an update whose first send's outcome is unknown; prov is what the
// record says it held before op.
func (e instanceSteps) heldUpdate(ctx context.Context, t target, op *v1alpha1.Operation, prov *v1alpha1.ProvisionedState, planChange bool) heldUpdate {
	if t.class == nil || !t.class.Spec.InstancesRetrievable {
		return heldUpdate{}
	}
	resp, err := t.client.GetInstance(ctx, &osb.GetInstanceRequest{
		RequestOptions: osb.RequestOptions{OmitOriginatingIdentity: true},
		InstanceID:     op.InstanceID, ServiceID: op.ServiceID,
	})
	if err != nil || resp == nil {
		return heldUpdate{why: "the first send of this update got no answer, the broker refused it when sent again, and GET instance failed (" + describe(err, 0) + "): it is taken to hold the instance as before"}
	}
	mi := ""
	if resp.MaintenanceInfo != nil {
		mi = resp.MaintenanceInfo.Version
	}
	var h heldUpdate
	switch {
	case planChange && resp.PlanID == op.PlanID:
		h.known, h.applied = true, true
	case planChange && resp.PlanID == prov.PlanID:
		h.known = true
	case !planChange && mi != "" && mi == op.MaintenanceInfoVersion:
		h.known, h.applied = true, true
	case !planChange && mi != "" && mi == prov.MaintenanceInfoVersion:
		h.known = true
	}
	if h.known && !h.applied {
		h.why = "GET instance shows the broker holds the instance as before"
	} else if !h.known {
		h.why = fmt.Sprintf("GET instance names plan %q, neither the one before nor the one asked for: the instance is taken to be as before", resp.PlanID)
	}
	return h
}

// updateOperation is the update call to make to planID, targetMI and params: a new one,
// or the identical request of prev when it is re-sent.
func updateOperation(inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation, planID, targetMI string, params Parameters, resend bool, requestID string, now time.Time) *v1alpha1.Operation {
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationUpdate, InstanceID: inst.CurrentExternalID(), ServiceID: inst.Spec.ClassID,
		PlanID: planID, MaintenanceInfoVersion: targetMI,
		ParametersChecksum: params.Checksum(), ParameterHashes: params.InlineHashes(),
		RequestID: requestID, StartedAt: metav1.NewTime(now),
	}
	if prev != nil {
		op.InstanceID, op.RequestID, op.StartedAt = prev.InstanceID, prev.RequestID, prev.StartedAt
	}
	if resend {
		op.ServiceID, op.ParametersChecksum, op.ParameterHashes, op.Sent = prev.ServiceID, prev.ParametersChecksum, prev.ParameterHashes, prev.Sent
	}
	return op
}

// updateRequest is the update request of op, which names only what changes: the plan
// (planChange), the maintenance version (miChange) and the parameters sent (nil for
// none); changes names them for the user.
func updateRequest(inst *v1alpha1.ServiceInstance, t target, op *v1alpha1.Operation, opts osb.RequestOptions, kctx *osb.KubernetesContext, planChange, miChange bool, sent *Parameters) (*osb.UpdateRequest, []string) {
	prov := inst.Status.Provisioned
	req := &osb.UpdateRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, AcceptsIncomplete: true,
		ServiceID: op.ServiceID, Context: kctx,
		PreviousValues: &osb.PreviousValues{PlanID: prov.PlanID},
	}
	if prov.MaintenanceInfoVersion != "" {
		req.PreviousValues.MaintenanceInfo = &osb.MaintenanceInfo{Version: prov.MaintenanceInfoVersion}
	}
	var changes []string
	if planChange {
		req.PlanID = op.PlanID
		name := inst.Spec.PlanExternalName
		if p := t.plan(op.PlanID); p != nil {
			name = p.ExternalName
		}
		changes = append(changes, "plan "+name)
	}
	if sent != nil {
		req.Parameters = sent.body()
		changes = append(changes, "parameters")
	}
	if miChange {
		req.MaintenanceInfo = &osb.MaintenanceInfo{Version: op.MaintenanceInfoVersion}
		changes = append(changes, "maintenance version "+op.MaintenanceInfoVersion)
	}
	return req, changes
}

// updateLost handles an interrupted update whose kept request cannot be read back: the
// broker may or may not have applied it, so the next update sends every parameter again
// (as "touch" does) rather than only those that differ from what was provisioned.
func (e instanceSteps) updateLost(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation, cause error) (Result, error) {
	return finish(e.Engine, ctx, inst, prev.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		if p := x.Status.Provisioned; p != nil {
			p.ParametersChecksum, p.ParameterHashes = unknownChecksum, nil
		}
		e.retryLater(x, ReasonUpdateCallFailed, cause.Error()+"; a new update sends every parameter again", true, now)
	})
}

// unknownChecksum stands for parameters the broker may hold that nobody knows: it
// matches no parameters, so the next update sends them all.
const unknownChecksum = "unknown"

// updateFailed records a failed update: what the broker holds is unchanged, and its
// instance_usable and update_repeatable are kept for the user to see.
func (e instanceSteps) updateFailed(x *v1alpha1.ServiceInstance, act osb.Action, o osb.Outcome, msg string, async bool, now time.Time) {
	x.Status.Usable = o.InstanceUsable
	x.Status.UpdateRepeatable = o.UpdateRepeatable
	if act.InstanceUnusable {
		msg += " (the broker says the instance is not usable until an update succeeds)"
	}
	switch {
	case act.Terminal && o.UpdateRepeatable != nil && !*o.UpdateRepeatable:
		e.updateRefused(x, ReasonUpdateNotRepeatable, msg+"; the broker says this update cannot be repeated", now)
	case act.Terminal:
		e.updateRefused(x, ReasonUpdateRejected, msg, now)
	case act.WaitForOtherOperation:
		e.retryLater(x, ReasonUpdateBlockedByConcurrentOperation, msg, false, now)
	case act.RefetchCatalog:
		e.retryLater(x, ReasonUpdateMaintenanceInfoConflict, msg, x.Status.Retry == nil, now)
	case async:
		e.retryLater(x, ReasonUpdateFailed, msg, false, now)
	default:
		e.retryLater(x, ReasonUpdateCallFailed, msg, false, now)
	}
}

// updateRefused records an update refused for good: by the broker (400, 409, or
// update_repeatable: false), or before the call for a plan that is not plan_updateable.
// The broker still holds the instance as status.provisioned says, so, as a Deployment
// whose rollout failed stays Available, the instance stays Ready (and bindable) unless
// the broker said it is not usable. The UpdateFailed condition says what was refused;
// nothing is sent again until the spec changes ("update --revert" sets it back).
func (e instanceSteps) updateRefused(x *v1alpha1.ServiceInstance, reason, msg string, now time.Time) {
	msg += fmt.Sprintf(`: the instance still runs with its previous plan and parameters; go back to them with %s, or change the spec to try another update`, hint.Quoted(x.Namespace, "update", x.Name, "--revert"))
	setCondition(x, v1alpha1.ConditionUpdateFailed, metav1.ConditionTrue, reason, msg, now)
	dropRebindAfterRefusal(x, now)
	if x.Status.Usable != nil && !*x.Status.Usable {
		e.terminalFailure(x, reason, msg, now)
		return
	}
	x.Status.InFlight, x.Status.Retry = nil, nil
	x.Status.ObservedGeneration = x.Generation
	x.Status.Phase = v1alpha1.PhaseReady
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonProvisioned,
		"the broker holds the instance with its previous plan and parameters; the last update was refused (see the UpdateFailed condition)", now)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
}
