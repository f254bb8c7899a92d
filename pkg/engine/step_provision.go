package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// The provision step: the first broker call of an instance, its re-send, and a lost answer.

func (e instanceSteps) provision(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation) (Result, error) {
	if prev == nil {
		if terminallyFailed(inst) {
			return resultOf(e.Engine, inst), nil
		}
		if d := e.retryWait(inst, actionProvision); d > 0 {
			return resultOf(e.Engine, inst), nil
		}
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonBrokerUnavailable, err)
	}
	if prev == nil && t.broker.DeletionTimestamp != nil {
		// The broker waits for its instances to go; a new one would keep it forever.
		return preCallFailure(e.Engine, ctx, inst, ReasonBrokerUnavailable, fmt.Errorf(
			"broker %q is being deleted (it is kept until its instances are deprovisioned): no new instance is provisioned through it", t.broker.Name))
	}
	// A re-send is the request first sent, kept at its write-ahead; an interrupted call
	// of an earlier release, which kept nothing, is built from the spec again.
	resend := prev != nil && prev.Sent != nil
	in, reason, err := readCallInputs(e.Engine, ctx, inst, inst, prev, resend, func(ctx context.Context) (Parameters, error) { return e.parameters(ctx, inst) })
	if isSentLost(err) {
		return e.provisionLost(ctx, inst, prev, err)
	}
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, reason, err)
	}
	op := provisionOperation(inst, t, prev, in.params, resend, e.newRequestID(), e.now())
	// A refusal of the first request that names the id leaves nothing at the broker; one
	// of a re-send does not tell whether the first send created the instance.
	first := prev == nil && !slices.Contains(inst.Status.ExternalIDs, op.InstanceID)
	opts, err := e.requestOptions(ctx, inst, op.RequestID, false)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonPlatformUnavailable, err)
	}
	req := &osb.ProvisionRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, AcceptsIncomplete: true,
		ServiceID: op.ServiceID, PlanID: op.PlanID, Context: in.kctx,
		OrganizationGUID: in.org, SpaceGUID: in.space, Parameters: in.params.JSON(),
	}
	if op.MaintenanceInfoVersion != "" {
		req.MaintenanceInfo = &osb.MaintenanceInfo{Version: op.MaintenanceInfoVersion}
	}
	var resp *osb.ProvisionResponse
	call := brokerCall{
		op: op, resend: resend, planID: op.PlanID, params: nonEmpty(in.params), osbOp: osb.OpProvision,
		sent:  v1alpha1.SentRequest{ClusterID: in.org, NamespaceUID: in.space},
		phase: v1alpha1.PhaseProvisioning, reason: ReasonProvisionRequestInFlight,
		msg: fmt.Sprintf("sending the provision request to broker %q", t.broker.Name),
		call: func(ctx context.Context) (int, error) {
			var callErr error
			resp, callErr = t.client.Provision(ctx, req)
			return resp.Status(), bounded(callErr, resp, resp.Status(), "PUT", "/v2/service_instances/"+op.InstanceID)
		},
	}
	return e.send(ctx, inst, t, call, func(stored *v1alpha1.ServiceInstance, act osb.Action, callErr error) (Result, error) {
		outcome := osb.OutcomeOf(resp.Status(), callErr)
		return finish(e.Engine, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
			switch {
			case act.Result == osb.ResultSucceeded:
				e.succeeded(x, resp.DashboardURL, now)
			case act.Poll:
				e.accepted(x, t, resp.Operation, resp.DashboardURL, ReasonProvisionInProgress, "the broker is provisioning", now)
			case act.OrphanMitigation && mayStillWork(outcome) && now.Before(e.graceEnd(op)):
				awaitAnswer(e.Engine, x, ReasonProvisionCallFailed, describe(callErr, resp.Status()), now)
			case act.OrphanMitigation:
				e.startMitigation(x, act, describe(callErr, resp.Status()), now)
			case act.Terminal:
				e.terminalFailure(x, ReasonProvisionRejected, describe(callErr, resp.Status())+": change the instance's spec (plan or parameters) or deprovision it", now)
				if first && leftNothing(callErr) {
					forgetExternalID(&x.Status.OperationStatus, op.InstanceID)
				}
			default:
				e.retryLater(x, provisionRetryReason(act), describe(callErr, resp.Status()), act.RefetchCatalog && x.Status.Retry == nil, now)
				if first && leftNothing(callErr) {
					forgetExternalID(&x.Status.OperationStatus, op.InstanceID)
				}
			}
			brokerMayWork(e.Engine, x, outcome, callErr, now)
		})
	})
}

// provisionOperation is the provision call to make: a new one from the spec, or the
// identical request of prev (same ids, plan and request id) when it is re-sent.
func provisionOperation(inst *v1alpha1.ServiceInstance, t target, prev *v1alpha1.Operation, params Parameters, resend bool, requestID string, now time.Time) *v1alpha1.Operation {
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationProvision, InstanceID: inst.CurrentExternalID(),
		ServiceID: inst.Spec.ClassID, PlanID: inst.Spec.PlanID,
		MaintenanceInfoVersion: inst.Spec.MaintenanceInfoVersion,
		RequestID:              requestID, StartedAt: metav1.NewTime(now),
	}
	if op.MaintenanceInfoVersion == "" {
		if p := t.plan(op.PlanID); p != nil && p.MaintenanceInfo != nil {
			op.MaintenanceInfoVersion = p.MaintenanceInfo.Version
		}
	}
	if prev != nil {
		// A re-send must be the identical request: same ids, plan and request id.
		op.InstanceID, op.ServiceID, op.PlanID = prev.InstanceID, prev.ServiceID, prev.PlanID
		op.MaintenanceInfoVersion, op.RequestID, op.StartedAt = prev.MaintenanceInfoVersion, prev.RequestID, prev.StartedAt
	}
	op.ParametersChecksum, op.ParameterHashes = params.Checksum(), params.InlineHashes()
	if resend {
		op.ParametersChecksum, op.ParameterHashes, op.Sent = prev.ParametersChecksum, prev.ParameterHashes, prev.Sent
	}
	return op
}

// nonEmpty is &p when p holds parameters: the parameters a provision or bind sends.
func nonEmpty(p Parameters) *Parameters {
	if len(p.All) == 0 {
		return nil
	}
	return &p
}

// provisionLost handles an interrupted provision whose kept request cannot be read back:
// the broker may hold an instance made from a request that cannot be repeated, so it is
// deleted first (orphan mitigation), then provisioned again under a new id.
func (e instanceSteps) provisionLost(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation, cause error) (Result, error) {
	return finish(e.Engine, ctx, inst, prev.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		e.startMitigation(x, osb.Action{Reason: osb.ReasonPlatformError, OrphanMitigation: true, Retry: true}, cause.Error(), now)
	})
}

func provisionRetryReason(act osb.Action) string {
	switch {
	case act.WaitForOtherOperation:
		return ReasonProvisionBlockedByConcurrentOperation
	case act.RefetchCatalog:
		return ReasonProvisionMaintenanceInfoConflict
	}
	return ReasonProvisionCallFailed
}
