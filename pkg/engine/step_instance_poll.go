package engine

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Polling an instance's asynchronous operation, settling a spec the broker holds, and the
// outcomes an instance's calls record.

func (e instanceSteps) poll(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	op := inst.Status.InFlight
	now := e.now()
	if op.NextPollAt != nil && now.Before(op.NextPollAt.Time) {
		return resultOf(e.Engine, inst), nil
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonBrokerUnavailable, err)
	}
	if err := e.auth.VetInstanceCall(ctx, inst, t, op.InstanceID, ""); err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonPlatformUnavailable, err)
	}
	mitigating := op.Type == v1alpha1.OperationDeprovision && inst.DeletionTimestamp == nil
	opts, err := e.requestOptions(ctx, inst, "", mitigating)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonPlatformUnavailable, err)
	}
	// A verb's poll goes through its gate (callgate.go): the first interrupt lets it
	// finish and its outcome be stored, and so does a --wait whose time runs out once
	// the answer came (a Retry-After above all would be lost).
	end, begun := beginCall(ctx)
	if !begun {
		return interrupted(inst, context.Canceled)
	}
	defer end()
	// Polling is a broker call too: hold the claim while doing it, renewing it only
	// when it runs low so a long --wait costs one write per poll at most.
	if inst, err = claimToPoll(e.Engine, ctx, inst, now); err != nil {
		return pollNotClaimed(e.Engine, ctx, inst, err)
	}
	pollOp, planID := osb.OpPollProvision, op.PlanID
	switch op.Type {
	case v1alpha1.OperationUpdate:
		pollOp = osb.OpPollUpdate
		// The spec: after a plan change, poll with the plan before the update.
		if inst.Status.Provisioned != nil {
			planID = inst.Status.Provisioned.PlanID
		}
	case v1alpha1.OperationDeprovision:
		pollOp = osb.OpPollDeprovision
	}
	resp, cut, callErr := waitBound(ctx, func(ctx context.Context) (*osb.LastOperationResponse, error) {
		return t.client.LastOperation(ctx, &osb.LastOperationRequest{
			RequestOptions: opts, InstanceID: op.InstanceID, ServiceID: op.ServiceID, PlanID: planID, OperationKey: op.OperationKey,
		})
	})
	if err := cutShort(ctx, callErr); err != nil {
		return interrupted(inst, err)
	}
	if cut != nil {
		return interrupted(inst, cut)
	}
	p := judgePoll(e.Engine, op, pollOp, resp, callErr)
	act, outcome, msg := p.act, p.outcome, p.msg
	if act.Result == osb.ResultSucceeded && op.Type == v1alpha1.OperationDeprovision {
		return e.gone(ctx, inst, op)
	}
	if res, quiet := quietPoll(e.Engine, inst, p); quiet {
		return res, nil
	}
	return finish(e.Engine, ctx, inst, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		switch {
		case act.Result == osb.ResultInProgress:
			p.inProgress(e.Engine, x.Status.InFlight, now)
			if callErr == nil {
				phase, reason, msg := e.inProgressShown(x)
				resumeShown(x, phase, reason, msg, now)
			}
		case act.Result == osb.ResultSucceeded:
			e.succeeded(x, "", now)
		case op.Type == v1alpha1.OperationProvision:
			e.startMitigation(x, act, "the asynchronous provision failed: "+msg, now)
		case op.Type == v1alpha1.OperationUpdate:
			e.updateFailed(x, act, outcome, "the asynchronous update failed: "+msg, true, now)
		default:
			e.deleteFailed(x, act, outcome, "the asynchronous deprovision failed: "+msg, true, now)
		}
	})
}

// inProgressShown is what x shows while its asynchronous operation in flight goes on:
// the phase, reason and message its acceptance recorded (accepted).
func (e instanceSteps) inProgressShown(x *v1alpha1.ServiceInstance) (v1alpha1.Phase, string, string) {
	switch x.Status.InFlight.Type {
	case v1alpha1.OperationUpdate:
		return v1alpha1.PhaseUpdating, ReasonUpdateInProgress, "the broker is updating"
	case v1alpha1.OperationDeprovision:
		if x.DeletionTimestamp == nil {
			return v1alpha1.PhaseOrphanMitigation, ReasonOrphanMitigationInProgress, "the broker is deprovisioning"
		}
		return v1alpha1.PhaseDeprovisioning, ReasonDeprovisionInProgress, "the broker is deprovisioning"
	}
	return v1alpha1.PhaseProvisioning, ReasonProvisionInProgress, "the broker is provisioning"
}

// pollDelay honours Retry-After; without it, polls slow down as the operation ages (a
// tenth of its age), between PollInterval and MaxPollInterval.
func pollDelay(e *Engine, op *v1alpha1.Operation, retryAfter time.Duration, now time.Time) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := now.Sub(op.StartedAt.Time) / 10
	return min(max(d, e.cfg.PollInterval), e.cfg.MaxPollInterval)
}

func (e instanceSteps) refreshCatalog(ctx context.Context, b *v1alpha1.Broker) {
	if e.cfg.RefreshCatalog == nil {
		return
	}
	// The catalog's fetch is a broker call too: it holds a broker slot (brokerslots.go).
	release, err := TakeBrokerSlot(ctx)
	if err != nil {
		return
	}
	defer release()
	// A failed refresh shows up as the conflict again on the retry.
	_ = e.cfg.RefreshCatalog(WithBrokerSlots(ctx, nil), b)
}

// NoBrokerCallMessage is the Ready condition of an instance whose spec changed in what
// needs no broker call (its limits, its grants, a revert to what the broker holds).
const NoBrokerCallMessage = "the change needs no broker call: nothing was sent to the broker, which holds the instance as specified"

// settle marks an instance with nothing left to do as Ready.
func (e instanceSteps) settle(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	if inst.Generation != inst.Status.ObservedGeneration && inst.Status.RevokedGeneration != inst.Generation {
		// The spec changed: bindings of namespaces it no longer lets bind go.
		_, _, _ = e.RevokeConsumers(ctx, inst)
	}
	x := inst.DeepCopy()
	now := e.now()
	x.Status.InFlight, x.Status.Retry = nil, nil
	x.Status.ObservedGeneration = x.Generation
	x.Status.Phase = v1alpha1.PhaseReady
	refused := meta.FindStatusCondition(x.Status.Conditions, v1alpha1.ConditionUpdateFailed) != nil
	if c := meta.FindStatusCondition(x.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || refused {
		setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonProvisioned, "the broker holds the instance as specified", now)
	} else if inst.Generation != inst.Status.ObservedGeneration {
		// A change of the spec that needs no broker call (its limits, its grants): the
		// condition says so, not what the last call did.
		setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonProvisioned, NoBrokerCallMessage, now)
	} else {
		c.ObservedGeneration = x.Generation
	}
	if refused {
		// The spec is back to what the broker holds: the refusal no longer stands.
		meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionUpdateFailed)
		x.Status.UpdateRepeatable = nil
	}
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionRefused)
	rememberGrants(x)
	store.ClearClaim(x, e.cfg.Holder)
	if equalStatus(x, inst) && slices.Equal(x.Status.SharedBefore, inst.Status.SharedBefore) {
		return resultOf(e.Engine, inst), nil
	}
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e.Engine, ctx, inst, nil)
	}
	if err != nil {
		return Result{}, err
	}
	return resultOf(e.Engine, stored), nil
}

// succeeded copies the operation in flight into what the broker holds.
func (e instanceSteps) succeeded(x *v1alpha1.ServiceInstance, dashboardURL string, now time.Time) {
	op := x.Status.InFlight
	prev := x.Status.Provisioned
	p := &v1alpha1.ProvisionedState{
		PlanID: op.PlanID, ParametersChecksum: op.ParametersChecksum,
		MaintenanceInfoVersion: op.MaintenanceInfoVersion, ParameterHashes: op.ParameterHashes,
	}
	switch {
	case dashboardURL != "":
		p.DashboardURL = dashboardURL
	case op.DashboardURL != "":
		p.DashboardURL = op.DashboardURL
	case prev != nil:
		// OSB: an update without a dashboard_url keeps the previous one.
		p.DashboardURL = prev.DashboardURL
	}
	if x.Generation == x.Status.ObservedGeneration {
		// The spec is the one the call was made from (a spec edited since has a newer
		// generation): keep its parameters, for "update --revert" to restore.
		p.Parameters = appliedParameters(&x.Spec)
	}
	x.Status.Provisioned = p
	x.Status.InFlight, x.Status.Retry, x.Status.OrphanMitigation = nil, nil, nil
	x.Status.Usable, x.Status.UpdateRepeatable = nil, nil
	x.Status.Phase = v1alpha1.PhaseReady
	reason, msg := ReasonProvisioned, "the broker provisioned the instance"
	if op.Type == v1alpha1.OperationUpdate {
		reason, msg = ReasonUpdated, "the broker updated the instance"
	}
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionTrue, reason, msg, now)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionFailed)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionOrphanMitigation)
	meta.RemoveStatusCondition(&x.Status.Conditions, v1alpha1.ConditionUpdateFailed)
}

// appliedParameters are the spec's parameters as "update --revert" restores them: the
// inline values (in clear in the spec already) and the Secret references, no Secret
// values.
func appliedParameters(s *v1alpha1.ServiceInstanceSpec) *v1alpha1.AppliedParameters {
	a := &v1alpha1.AppliedParameters{}
	if s.Parameters != nil && len(s.Parameters.Raw) > 0 {
		a.Inline = s.Parameters.DeepCopy()
	}
	for i := range s.ParametersFrom {
		a.From = append(a.From, *s.ParametersFrom[i].DeepCopy())
	}
	return a
}

// accepted records a 202: poll from now on with the operation key, the dashboard URL
// (sent only now) and a poll deadline from the plan's maximum_polling_duration.
func (e instanceSteps) accepted(x *v1alpha1.ServiceInstance, t target, key, dashboardURL, reason, msg string, now time.Time) {
	op := x.Status.InFlight
	op.Async, op.OperationKey, op.DashboardURL = true, key, dashboardURL
	limit := e.cfg.MaxPollingDuration
	if p := t.plan(op.PlanID); p != nil && p.MaximumPollingDuration != nil && p.MaximumPollingDuration.Duration > 0 {
		limit = p.MaximumPollingDuration.Duration
	}
	if op.Type == v1alpha1.OperationUpdate && x.Status.Provisioned != nil {
		if p := t.plan(x.Status.Provisioned.PlanID); p != nil && p.MaximumPollingDuration != nil && p.MaximumPollingDuration.Duration > limit {
			limit = p.MaximumPollingDuration.Duration
		}
	}
	op.PollDeadline = mtime(now.Add(limit))
	op.NextPollAt = mtime(now.Add(e.cfg.PollInterval))
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg, now)
}

// startMitigation records that the broker may hold an instance nobody can trust: delete
// it first (right away), then provision again if the failure was retriable.
func (e instanceSteps) startMitigation(x *v1alpha1.ServiceInstance, act osb.Action, msg string, now time.Time) {
	reason := ReasonProvisionCallFailed
	if x.Status.InFlight != nil && x.Status.InFlight.Async {
		reason = ReasonProvisionFailed
	}
	startOrphanMitigation(e.Engine, x, act.Reason, msg, act.Retry, reason,
		"the outcome of the provision is uncertain ("+msg+"); deleting what the broker may hold before trying again", now)
}
