package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// StepInstance moves an instance one step toward its spec: it polls the operation in
// flight, re-sends an interrupted call, deprovisions (for a deletion or orphan
// mitigation), provisions or updates, in that order, making at most one broker call.
// Before any broker call it stores the call in status.inFlight together with a claim, in
// one write guarded by resourceVersion; if that write conflicts, someone else drives the
// record and no call is made. Broker failures are recorded in the record and reported
// in the Result, not as errors; an error means the record could not be read or written
// (or ctx ended, in which case the record is left pending for the next step).
func (e *Engine) StepInstance(ctx context.Context, in *v1alpha1.ServiceInstance) (Result, error) {
	ctx = stepBindingLists(ctx, in)
	inst := in.DeepCopy()
	now := e.now()
	if l, ok := store.LeaseOf(inst); ok && l.Holder != e.cfg.Holder && l.Live(now) {
		return Result{Instance: inst, State: StateWaiting, RequeueAfter: l.ExpiresAt.Sub(now),
			Message: fmt.Sprintf("%s is working on it (claim until %s)", l.Holder, l.ExpiresAt.Format(time.RFC3339))}, nil
	}
	deleting := inst.DeletionTimestamp != nil
	switch brokered := heldAtBroker(inst); {
	case inst.IsUserProvided() && !brokered:
		return e.stepUserProvided(ctx, inst)
	case inst.IsUserProvided() && !deleting:
		// What the broker holds is deleted whatever the spec says now; until then the
		// instance is not user-provided.
		return preCallFailure(e, ctx, inst, ReasonRefusedUserProvidedChange, refused(ReasonRefusedUserProvidedChange,
			"spec.userProvided cannot be added to instance %q, which a broker holds (instance id %s): remove spec.userProvided again, or deprovision the instance and create a user-provided one",
			inst.Name, inst.CurrentExternalID()))
	case !inst.IsUserProvided() && !deleting && wasUserProvided(inst):
		return preCallFailure(e, ctx, inst, ReasonRefusedUserProvidedChange, refused(ReasonRefusedUserProvidedChange,
			"spec.userProvided cannot be removed from instance %q: put it back, or delete the instance and provision one from a broker", inst.Name))
	}
	if op := inst.Status.InFlight; op != nil && (op.Async || !deleting || op.Type == v1alpha1.OperationDeprovision) {
		// The operation in flight is acted on: it must be one the engine could have
		// written (a status is anyone's to edit who may update the ConfigMap).
		if err := checkInstanceStatus(inst); err != nil {
			return preCallFailure(e, ctx, inst, ReasonRefusedInconsistentStatus, err)
		}
	}
	if op := inst.Status.InFlight; op != nil {
		if op.Async {
			return e.poll(ctx, inst)
		}
		// A deletion needs no provision or update: whatever an interrupted one did is
		// removed by the deprovision, which also answers 410 if the broker never saw it.
		if !deleting || op.Type == v1alpha1.OperationDeprovision {
			if d := e.retryWait(inst, string(op.Type)); d > 0 {
				return resultOf(e, inst), nil
			}
			switch op.Type {
			case v1alpha1.OperationProvision:
				return e.provision(ctx, inst, op)
			case v1alpha1.OperationUpdate:
				return e.update(ctx, inst, op)
			case v1alpha1.OperationDeprovision:
				return e.deprovision(ctx, inst, op)
			default:
				return Result{}, fmt.Errorf("instance %s/%s has an in-flight operation of unknown type %q", inst.Namespace, inst.Name, op.Type)
			}
		}
	}
	if deleting || inst.Status.OrphanMitigation != nil {
		return e.deprovision(ctx, inst, nil)
	}
	if inst.Status.Provisioned == nil {
		return e.provision(ctx, inst, nil)
	}
	inst, err := e.revokeWithdrawn(ctx, inst)
	if err != nil {
		return Result{}, err
	}
	return e.update(ctx, inst, nil)
}

// revokeWithdrawn revokes the grants inst's spec withdrew, when that is pending
// (RevokePending): the bindings of the namespaces it was shared with that it no longer
// lets bind are marked for deletion, and once every such namespace could be looked at,
// the spec's generation is recorded as revoked (one write, guarded by resourceVersion).
// A driver that may not look at one of them leaves the instance as it is, still pending,
// for a reconcile that sees every namespace. This does not wait for the settling step,
// which revokes only a spec new to it: an update's success records the generation too,
// and an update refused for good never settles, so a grant withdrawn by someone who could
// not see its bindings would otherwise never be revoked.
func (e *Engine) revokeWithdrawn(ctx context.Context, inst *v1alpha1.ServiceInstance) (*v1alpha1.ServiceInstance, error) {
	if !inst.RevokePending() {
		return inst, nil
	}
	_, unseen, err := e.RevokeConsumers(ctx, inst, inst.Status.SharedBefore...)
	if err != nil || len(unseen) > 0 {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return inst, nil
	}
	x := inst.DeepCopy()
	x.Status.RevokedGeneration = x.Generation
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		// Changed meanwhile: the step goes on from what it read, and its own write
		// conflicts in turn; the next step revokes again.
		return inst, nil
	}
	return stored, err
}

// target is what a broker call needs from other records.
type target struct {
	broker *v1alpha1.Broker
	client osb.Client
	class  *v1alpha1.ServiceClass // nil when the class record is gone
}

func (t target) plan(id string) *v1alpha1.ServicePlan {
	if t.class == nil {
		return nil
	}
	return t.class.PlanByID(id)
}

// brokerNamespace is where the instance's broker and classes live.
func (e *Engine) brokerNamespace(inst *v1alpha1.ServiceInstance) string {
	if inst.Spec.Scope == v1alpha1.ScopeCluster {
		return e.cfg.CatalogNamespace
	}
	return inst.Namespace
}

// target reads the instance's broker and class records and builds the broker's client,
// or, with Config.TargetCacheTTL, takes them from a cache that young.
func (e *Engine) target(ctx context.Context, inst *v1alpha1.ServiceInstance) (target, error) {
	if e.cfg.TargetCacheTTL <= 0 {
		return e.readTarget(ctx, inst)
	}
	key := e.brokerNamespace(inst) + "/" + inst.Spec.BrokerName + "/" + inst.Spec.ClassID
	if t, ok := e.targets.get(key, e.cfg.TargetCacheTTL); ok {
		return t, nil
	}
	t, err := e.readTarget(ctx, inst)
	if err == nil {
		e.targets.put(key, t)
	}
	return t, err
}

func (e *Engine) readTarget(ctx context.Context, inst *v1alpha1.ServiceInstance) (target, error) {
	ns := e.brokerNamespace(inst)
	var b *v1alpha1.Broker
	var err error
	if read, ok := takeBrokerRead(ctx, ns, inst.Spec.BrokerName); ok {
		b, err = read.Wait()
	} else {
		b, err = e.cfg.Store.Brokers().Get(ctx, ns, inst.Spec.BrokerName)
	}
	if err != nil {
		return target{}, fmt.Errorf("broker %q of instance %q: %w", inst.Spec.BrokerName, inst.Name, err)
	}
	if err := e.auth.CheckBroker(ctx, b); err != nil {
		return target{}, err
	}
	c, err := e.cfg.Brokers.ClientFor(ctx, b)
	if err != nil {
		if b.Namespace == e.cfg.CatalogNamespace && apierrors.IsForbidden(err) {
			if isReconcile(ctx) {
				return target{}, reconcileMayNotRead(b, err)
			}
			// Users need not read a cluster broker's credentials: reconcile, which may,
			// makes the call.
			return target{}, &LeftToReconcileError{Broker: b.Name, Err: err}
		}
		return target{}, fmt.Errorf("cannot talk to broker %q: %w", b.Name, err)
	}
	name := v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID)
	if class, ok := e.prepared.class(ns, name); ok {
		return target{broker: b, client: c, class: class}, nil
	}
	var class *v1alpha1.ServiceClass
	if read, ok := takeClassRead(ctx, ns, name); ok {
		class, err = read.Wait()
	} else {
		class, err = e.cfg.Store.Classes().Get(ctx, ns, name)
	}
	if err != nil && !store.IsNotFound(err) {
		return target{}, err
	}
	if err != nil {
		class = nil
	}
	return target{broker: b, client: c, class: class}, nil
}

// parameters resolves the instance's parameters, keyed with its salt (created in inst's
// status when it has none yet).
func (e *Engine) parameters(ctx context.Context, inst *v1alpha1.ServiceInstance) (Parameters, error) {
	p, err := ResolveParameters(ctx, inst.Namespace, inst.Spec.Parameters, inst.Spec.ParametersFrom, e.auth.SecretsFor(inst))
	return p.salted(&inst.Status.OperationStatus), err
}

// osbContext is the Kubernetes context object and the deprecated GUIDs of a new call. A
// re-send checks the call it repeats against them (sentContext): the namespace's uid,
// say, may read as its name to a user who may not get namespaces.
func (e *Engine) osbContext(ctx context.Context, inst *v1alpha1.ServiceInstance) (*osb.KubernetesContext, string, string, error) {
	cluster, err := e.cfg.Platform.ClusterID(ctx)
	if err != nil {
		return nil, "", "", err
	}
	space, err := e.cfg.Platform.NamespaceUID(ctx, inst.Namespace)
	if err != nil {
		return nil, "", "", err
	}
	return kubernetesContext(inst, cluster), cluster, space, nil
}

func kubernetesContext(inst *v1alpha1.ServiceInstance, cluster string) *osb.KubernetesContext {
	return &osb.KubernetesContext{
		Platform: osb.PlatformKubernetes, Namespace: inst.Namespace, ClusterID: cluster, InstanceName: inst.Name,
	}
}

// requestOptions carry the request id of the operation (the same on every re-send) and
// the identity of the user the call about rec is made for (originatingIdentity), which
// orphan mitigation does not send: it is the platform's own clean-up, not the user's
// request.
func (e *Engine) requestOptions(ctx context.Context, rec v1alpha1.Record, requestID string, mitigation bool) (osb.RequestOptions, error) {
	o := osb.RequestOptions{RequestIdentity: requestID}
	if mitigation {
		o.OmitOriginatingIdentity = true
		return o, nil
	}
	id, err := e.auth.OriginatingIdentity(ctx, rec)
	if err != nil {
		return o, err
	}
	if id == nil {
		o.OmitOriginatingIdentity = true
	}
	o.OriginatingIdentity = id
	return o, nil
}

func (e *Engine) provision(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation) (Result, error) {
	if prev == nil {
		if terminallyFailed(inst) {
			return resultOf(e, inst), nil
		}
		if d := e.retryWait(inst, actionProvision); d > 0 {
			return resultOf(e, inst), nil
		}
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonBrokerUnavailable, err)
	}
	if prev == nil && t.broker.DeletionTimestamp != nil {
		// The broker waits for its instances to go; a new one would keep it forever.
		return preCallFailure(e, ctx, inst, ReasonBrokerUnavailable, fmt.Errorf(
			"broker %q is being deleted (it is kept until its instances are deprovisioned): no new instance is provisioned through it", t.broker.Name))
	}
	// A re-send is the request first sent, kept at its write-ahead; an interrupted call
	// of an earlier release, which kept nothing, is built from the spec again.
	resend := prev != nil && prev.Sent != nil
	var params Parameters
	var kctx *osb.KubernetesContext
	var org, space string
	if resend {
		sent, err := e.sentParameters(ctx, inst, prev.Sent)
		if isSentLost(err) {
			return e.provisionLost(ctx, inst, prev, err)
		}
		if err != nil {
			return preCallFailure(e, ctx, inst, ReasonParametersUnavailable, err)
		}
		if sent != nil {
			params = *sent
		}
		if kctx, org, space, err = e.sentContext(ctx, inst, prev.Sent); err != nil {
			return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
		}
	} else {
		if params, err = e.parameters(ctx, inst); err != nil {
			return preCallFailure(e, ctx, inst, ReasonParametersUnavailable, err)
		}
		if kctx, org, space, err = e.osbContext(ctx, inst); err != nil {
			return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
		}
	}
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationProvision, InstanceID: inst.CurrentExternalID(),
		ServiceID: inst.Spec.ClassID, PlanID: inst.Spec.PlanID,
		MaintenanceInfoVersion: inst.Spec.MaintenanceInfoVersion,
		RequestID:              e.newRequestID(), StartedAt: metav1.NewTime(e.now()),
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
	// A refusal of the first request that names the id leaves nothing at the broker; one
	// of a re-send does not tell whether the first send created the instance.
	first := prev == nil && !slices.Contains(inst.Status.ExternalIDs, op.InstanceID)
	opts, err := e.requestOptions(ctx, inst, op.RequestID, false)
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
	if err := e.auth.VetInstanceCall(ctx, inst, t, op.InstanceID, op.PlanID); err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
	if !resend {
		if err := e.auth.CheckParametersTo(ctx, t.broker, inst.Namespace, inst.Spec.ParametersFrom, &params); err != nil {
			return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
		}
	}
	if !resend {
		if err := e.keepRequest(ctx, inst, op, v1alpha1.SentRequest{ClusterID: org, NamespaceUID: space}, nonEmpty(params)); err != nil {
			return preCallFailure(e, ctx, inst, ReasonParametersUnavailable, err)
		}
	}
	stored, ok, err := writeAhead(e, ctx, inst, op, v1alpha1.PhaseProvisioning, ReasonProvisionRequestInFlight,
		fmt.Sprintf("sending the provision request to broker %q", t.broker.Name))
	if !ok || err != nil {
		if !ok && err == nil && !resend {
			dropSent(e, ctx, op, inst) // not sent: someone else drives the record
		}
		return reread(e, ctx, inst, err)
	}
	req := &osb.ProvisionRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, AcceptsIncomplete: true,
		ServiceID: op.ServiceID, PlanID: op.PlanID, Context: kctx,
		OrganizationGUID: org, SpaceGUID: space, Parameters: params.JSON(),
	}
	if op.MaintenanceInfoVersion != "" {
		req.MaintenanceInfo = &osb.MaintenanceInfo{Version: op.MaintenanceInfoVersion}
	}
	e.hook(ctx, HookBeforeBrokerCall, op)
	var resp *osb.ProvisionResponse
	var callErr error
	stored, err = callUnderClaim(e, ctx, stored, func(ctx context.Context) { resp, callErr = t.client.Provision(ctx, req) })
	callErr = bounded(callErr, resp, resp.Status(), "PUT", "/v2/service_instances/"+op.InstanceID)
	if err != nil {
		return interrupted(stored, err)
	}
	e.hook(ctx, HookAfterBrokerCall, op)
	act := osb.Decide(osb.OpProvision, osb.OutcomeOf(resp.Status(), callErr))
	if act.RefetchCatalog {
		e.refreshCatalog(ctx, t.broker)
	}
	return finish(e, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		switch {
		case act.Result == osb.ResultSucceeded:
			e.succeeded(x, resp.DashboardURL, now)
		case act.Poll:
			e.accepted(x, t, resp.Operation, resp.DashboardURL, ReasonProvisionInProgress, "the broker is provisioning", now)
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
	})
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
func (e *Engine) provisionLost(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation, cause error) (Result, error) {
	return finish(e, ctx, inst, prev.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
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

func (e *Engine) update(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation) (Result, error) {
	if prev == nil {
		if d := e.retryWait(inst, actionUpdate); d > 0 {
			return resultOf(e, inst), nil
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
		if sent, err = e.sentParameters(ctx, inst, prev.Sent); isSentLost(err) {
			return e.updateLost(ctx, inst, prev, err)
		} else if err != nil {
			return preCallFailure(e, ctx, inst, ReasonParametersUnavailable, err)
		}
	} else {
		var err error
		if params, err = e.parameters(ctx, inst); err != nil {
			return preCallFailure(e, ctx, inst, ReasonParametersUnavailable, err)
		}
	}
	planChange := planID != prov.PlanID
	miChange := targetMI != prov.MaintenanceInfoVersion
	paramsChange := sent != nil || (!resend && !params.SameChecksum(prov.ParametersChecksum))
	if !resend && !planChange && !miChange && !paramsChange {
		return e.settle(ctx, inst)
	}
	if prev == nil && terminallyFailed(inst) {
		return resultOf(e, inst), nil
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonBrokerUnavailable, err)
	}
	if planChange && t.class != nil && !resend {
		if cur := t.plan(prov.PlanID); cur != nil && !t.class.EffectivePlanUpdateable(cur) {
			x := inst.DeepCopy()
			e.updateRefused(x, ReasonUpdateRejected, fmt.Sprintf(
				"plan %q of class %q cannot be changed (the broker says plan_updateable: false); to move to another plan, deprovision and provision again",
				cur.ExternalName, t.class.Spec.ExternalName), e.now())
			store.ClearClaim(x, e.cfg.Holder)
			return storeStatus(e, ctx, inst, x)
		}
	}
	var kctx *osb.KubernetesContext
	var cluster, space string
	if resend {
		kctx, cluster, space, err = e.sentContext(ctx, inst, prev.Sent)
	} else {
		kctx, cluster, space, err = e.osbContext(ctx, inst)
	}
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationUpdate, InstanceID: inst.CurrentExternalID(), ServiceID: inst.Spec.ClassID,
		PlanID: planID, MaintenanceInfoVersion: targetMI,
		ParametersChecksum: params.Checksum(), ParameterHashes: params.InlineHashes(),
		RequestID: e.newRequestID(), StartedAt: metav1.NewTime(e.now()),
	}
	if prev != nil {
		op.InstanceID, op.RequestID, op.StartedAt = prev.InstanceID, prev.RequestID, prev.StartedAt
	}
	if resend {
		op.ServiceID, op.ParametersChecksum, op.ParameterHashes, op.Sent = prev.ServiceID, prev.ParametersChecksum, prev.ParameterHashes, prev.Sent
	}
	opts, err := e.requestOptions(ctx, inst, op.RequestID, false)
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
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
	if paramsChange {
		if !resend {
			changed := params.changed(prov.ParameterHashes)
			sent = &changed
		}
		req.Parameters = sent.body()
		changes = append(changes, "parameters")
	}
	if miChange {
		req.MaintenanceInfo = &osb.MaintenanceInfo{Version: targetMI}
		changes = append(changes, "maintenance version "+targetMI)
	}
	if err := e.auth.VetInstanceCall(ctx, inst, t, op.InstanceID, req.PlanID); err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
	if !resend {
		if err := e.auth.CheckParametersTo(ctx, t.broker, inst.Namespace, inst.Spec.ParametersFrom, sent); err != nil {
			return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
		}
	}
	if !resend {
		if err := e.keepRequest(ctx, inst, op, v1alpha1.SentRequest{ClusterID: cluster, NamespaceUID: space}, sent); err != nil {
			return preCallFailure(e, ctx, inst, ReasonParametersUnavailable, err)
		}
	}
	stored, ok, err := writeAhead(e, ctx, inst, op, v1alpha1.PhaseUpdating, ReasonUpdateRequestInFlight,
		fmt.Sprintf("sending the update (%s) to broker %q", strings.Join(changes, ", "), t.broker.Name))
	if !ok || err != nil {
		if !ok && err == nil && !resend {
			dropSent(e, ctx, op, inst) // not sent: someone else drives the record
		}
		return reread(e, ctx, inst, err)
	}
	e.hook(ctx, HookBeforeBrokerCall, op)
	var resp *osb.UpdateResponse
	var callErr error
	stored, err = callUnderClaim(e, ctx, stored, func(ctx context.Context) { resp, callErr = t.client.Update(ctx, req) })
	callErr = bounded(callErr, resp, resp.Status(), "PATCH", "/v2/service_instances/"+op.InstanceID)
	if err != nil {
		return interrupted(stored, err)
	}
	e.hook(ctx, HookAfterBrokerCall, op)
	act := osb.Decide(osb.OpUpdate, osb.OutcomeOf(resp.Status(), callErr))
	if act.RefetchCatalog {
		e.refreshCatalog(ctx, t.broker)
	}
	var outcome osb.Outcome = osb.OutcomeOf(resp.Status(), callErr)
	return finish(e, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		switch {
		case act.Result == osb.ResultSucceeded:
			e.succeeded(x, resp.DashboardURL, now)
		case act.Poll:
			e.accepted(x, t, resp.Operation, "", ReasonUpdateInProgress, "the broker is updating", now)
		default:
			e.updateFailed(x, act, outcome, describe(callErr, resp.Status()), false, now)
		}
	})
}

// updateLost handles an interrupted update whose kept request cannot be read back: the
// broker may or may not have applied it, so the next update sends every parameter again
// (as "touch" does) rather than only those that differ from what was provisioned.
func (e *Engine) updateLost(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation, cause error) (Result, error) {
	return finish(e, ctx, inst, prev.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
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
func (e *Engine) updateFailed(x *v1alpha1.ServiceInstance, act osb.Action, o osb.Outcome, msg string, async bool, now time.Time) {
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
func (e *Engine) updateRefused(x *v1alpha1.ServiceInstance, reason, msg string, now time.Time) {
	msg += fmt.Sprintf(`: the instance still runs with its previous plan and parameters; go back to them with %s, or change the spec to try another update`, hint.Quoted(x.Namespace, "update", x.Name, "--revert"))
	setCondition(x, v1alpha1.ConditionUpdateFailed, metav1.ConditionTrue, reason, msg, now)
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

func (e *Engine) deprovision(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation) (Result, error) {
	deleting := inst.DeletionTimestamp != nil
	mitigating := !deleting
	if deleting {
		if res, blocked, err := e.waitForBindings(ctx, inst); blocked || err != nil {
			return res, err
		}
		// Every id a provision was written ahead for stays listed until the broker
		// confirmed it gone or refused the first request naming it: with none, there
		// is nothing to delete.
		if len(instanceIDsAtBroker(inst)) == 0 {
			return release(e, ctx, inst, "deprovisioned", false)
		}
	}
	action := actionDeprovision
	if mitigating {
		action = actionOrphanMitigation
	}
	if prev == nil {
		if d := e.retryWait(inst, action); d > 0 {
			return resultOf(e, inst), nil
		}
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonBrokerUnavailable, err)
	}
	// Orphan mitigation deletes the id of the failed provision, the one in use; a
	// deletion deletes every id the broker may hold, the one in use first.
	held := instanceIDsAtBroker(inst)
	id := inst.CurrentExternalID()
	if deleting && len(held) > 0 && !slices.Contains(held, id) {
		id = held[0]
	}
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationDeprovision, InstanceID: id, ServiceID: inst.Spec.ClassID,
		PlanID: brokerPlanID(inst), RequestID: e.newRequestID(), StartedAt: metav1.NewTime(e.now()),
	}
	if prev != nil && prev.Type == v1alpha1.OperationDeprovision {
		op.InstanceID, op.ServiceID, op.PlanID = prev.InstanceID, prev.ServiceID, prev.PlanID
		op.RequestID, op.StartedAt = prev.RequestID, prev.StartedAt
	}
	opts, err := e.requestOptions(ctx, inst, op.RequestID, mitigating)
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
	phase, reason, msg := v1alpha1.PhaseDeprovisioning, ReasonDeprovisionRequestInFlight, fmt.Sprintf("sending the deprovision request to broker %q", t.broker.Name)
	if len(held) > 1 {
		msg += fmt.Sprintf(" for instance id %s (the broker may hold %d ids of this instance: %s)", op.InstanceID, len(held), strings.Join(held, ", "))
	}
	if mitigating {
		phase, reason = v1alpha1.PhaseOrphanMitigation, ReasonOrphanMitigationInProgress
		msg = fmt.Sprintf("deleting at broker %q what the failed provision may have created (orphan mitigation)", t.broker.Name)
	}
	if err := e.auth.VetInstanceCall(ctx, inst, t, op.InstanceID, ""); err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
	stored, ok, err := writeAhead(e, ctx, inst, op, phase, reason, msg)
	if !ok || err != nil {
		return reread(e, ctx, inst, err)
	}
	req := &osb.DeprovisionRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, ServiceID: op.ServiceID, PlanID: op.PlanID, AcceptsIncomplete: true,
	}
	e.hook(ctx, HookBeforeBrokerCall, op)
	var resp *osb.DeprovisionResponse
	var callErr error
	stored, err = callUnderClaim(e, ctx, stored, func(ctx context.Context) { resp, callErr = t.client.Deprovision(ctx, req) })
	callErr = bounded(callErr, resp, resp.Status(), "DELETE", "/v2/service_instances/"+op.InstanceID)
	if err != nil {
		return interrupted(stored, err)
	}
	e.hook(ctx, HookAfterBrokerCall, op)
	outcome := osb.OutcomeOf(resp.Status(), callErr)
	act := osb.Decide(osb.OpDeprovision, outcome)
	if act.Result == osb.ResultSucceeded {
		return e.gone(ctx, stored, op)
	}
	return finish(e, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		if act.Poll {
			r := ReasonDeprovisionInProgress
			if mitigating {
				r = ReasonOrphanMitigationInProgress
			}
			e.accepted(x, t, resp.Operation, "", r, "the broker is deprovisioning", now)
			return
		}
		e.deleteFailed(x, act, outcome, describe(callErr, resp.Status()), false, now)
	})
}

// deleteFailed records a failed deprovision (or orphan mitigation): the broker may still
// hold the instance, so it is retried with backoff, visibly, until it succeeds or the
// user abandons the instance.
func (e *Engine) deleteFailed(x *v1alpha1.ServiceInstance, act osb.Action, o osb.Outcome, msg string, async bool, now time.Time) {
	if act.InstanceUnusable {
		f := false
		x.Status.Usable = &f
	}
	reason := ReasonDeprovisionCallFailed
	switch {
	case x.DeletionTimestamp == nil && async:
		reason = ReasonOrphanMitigationFailed
	case x.DeletionTimestamp == nil:
		reason = ReasonOrphanMitigationCallFailed
	case act.WaitForOtherOperation:
		reason = ReasonDeprovisionBlockedByConcurrentOperation
	case async:
		reason = ReasonDeprovisionFailed
	}
	if x.DeletionTimestamp != nil {
		msg += fmt.Sprintf(`; it is retried until the broker confirms (to drop the record without the broker: %s)`, hint.Quoted(x.Namespace, "deprovision", x.Name, "--abandon"))
	}
	e.retryLater(x, reason, msg, false, now)
	if x.Status.OrphanMitigation != nil {
		setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionTrue, reason, msg, now)
	}
}

// brokerPlanID is the plan the broker has the instance on: the one provisioned, else the
// one a provision was (or is being) attempted with.
func brokerPlanID(inst *v1alpha1.ServiceInstance) string {
	switch {
	case inst.Status.Provisioned != nil:
		return inst.Status.Provisioned.PlanID
	case inst.Status.InFlight != nil && inst.Status.InFlight.PlanID != "":
		return inst.Status.InFlight.PlanID
	}
	return inst.Spec.PlanID
}

// waitForBindings marks the instance's bindings for deletion and reports whether any is
// left: an instance is never deprovisioned under a binding.
func (e *Engine) waitForBindings(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, bool, error) {
	// Bindings of namespaces the instance is shared with go first too, as far as this
	// user may see them (reconcile's ServiceAccount sees every namespace), and so do those
	// of the namespaces it was shared with before and of those that hold a place among its
	// consumers: a driver that may not list one of them leaves the deletion to reconcile.
	// Both lists go out together (inst, read after its deletion mark, names them); they
	// are looked at in turn.
	type listed struct {
		bs     []*v1alpha1.ServiceBinding
		unseen []string
		bad    []*store.Error
	}
	// A deletion's verb started both lists (after the mark) for its drive's first step.
	own, all, started := takeStepBindingLists(ctx, inst)
	consumers := ahead.Start(ctx, func() (listed, error) {
		var l listed
		var err error
		if started {
			// Every namespace's list needs only the instance's name; when the user may
			// not make it, the namespaces the record names are listed.
			a, err := all.Wait()
			if !store.IsForbidden(err) {
				l.bs, l.bad = a.bs, a.bad
				return l, err
			}
		}
		l.bs, l.unseen, l.bad, err = listConsumers(ctx, e.cfg.Store, inst, consumerNamespaces(inst)...)
		return l, err
	})
	var bad []*store.Error
	var bs []*v1alpha1.ServiceBinding
	var err error
	if started {
		var l listedBindings
		l, err = own.Wait()
		bs, bad = l.bs, l.bad
	} else {
		bs, err = readableBindings(ctx, e.cfg.Store, inst.Namespace, store.Filter{Instance: inst.Name}, &bad)
	}
	e.reportUnreadable(ctx, inst, bad)
	if err != nil {
		return Result{}, false, err
	}
	l, err := consumers.Wait()
	e.reportUnreadable(ctx, inst, l.bad)
	others, unseen := l.bs, l.unseen
	if err != nil {
		return Result{}, false, err
	}
	bs = append(bs, others...)
	if len(bs) == 0 && len(unseen) > 0 {
		// No DELETE while bindings this process cannot list may depend on the instance.
		return e.blockedByUnseenBindings(ctx, inst, unseen)
	}
	if len(bs) == 0 {
		return Result{}, false, nil
	}
	names := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.Namespace == inst.Namespace {
			names = append(names, b.Name)
		} else {
			names = append(names, b.Namespace+"/"+b.Name)
		}
		if b.DeletionTimestamp == nil {
			if err := e.cfg.Store.Bindings().Delete(ctx, b.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
				return Result{}, false, err
			}
		}
	}
	msg := fmt.Sprintf("waiting for its bindings (%s) to be unbound first; they are marked for deletion", strings.Join(names, ", "))
	return e.blockedByBindings(ctx, inst, msg)
}

// consumerNamespaces are the namespaces other than inst's where bindings of inst may be
// although its grant no longer names them: those it was shared with before
// (status.sharedBefore) and those holding a place among its consumers
// (status.consumers). A name that cannot be a namespace is left out (the status is
// untrusted input).
func consumerNamespaces(inst *v1alpha1.ServiceInstance) []string {
	var out []string
	add := func(ns string) {
		if ns != inst.Namespace && !slices.Contains(out, ns) && len(validation.IsDNS1123Label(ns)) == 0 {
			out = append(out, ns)
		}
	}
	for _, ns := range inst.Status.SharedBefore {
		add(ns)
	}
	for _, c := range inst.Status.Consumers {
		add(c.Namespace)
	}
	return out
}

// rememberGrants adds the namespaces of x's grant to those it was ever shared with
// (status.sharedBefore), which an unshare does not remove: a deletion then looks for
// bindings there too.
func rememberGrants(x *v1alpha1.ServiceInstance) {
	for _, ns := range x.Spec.SharedWith {
		if !slices.Contains(x.Status.SharedBefore, ns) {
			x.Status.SharedBefore = append(x.Status.SharedBefore, ns)
		}
	}
	slices.Sort(x.Status.SharedBefore)
}

// blockedByUnseenBindings leaves the deletion of inst waiting because bindings in the
// namespaces unseen, which this process may not list, may still depend on it: a reconcile
// that sees every namespace finishes it.
func (e *Engine) blockedByUnseenBindings(ctx context.Context, inst *v1alpha1.ServiceInstance, unseen []string) (Result, bool, error) {
	msg := fmt.Sprintf(`bindings in namespace(s) %s may still use it, and this command may not list them: "kubectl catalog reconcile" (which sees every namespace) unbinds them, then deprovisions it`, strings.Join(unseen, ", "))
	return e.blockedByBindings(ctx, inst, msg)
}

// blockedByBindings records that the deletion of inst waits for bindings, as msg says.
func (e *Engine) blockedByBindings(ctx context.Context, inst *v1alpha1.ServiceInstance, msg string) (Result, bool, error) {
	x := inst.DeepCopy()
	now := e.now()
	x.Status.Phase = v1alpha1.PhaseDeprovisioning
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonDeprovisionBlockedByExistingBindings, msg, now)
	store.ClearClaim(x, e.cfg.Holder)
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		res, err := reread(e, ctx, inst, nil)
		return res, true, err
	}
	if err != nil {
		return Result{}, true, err
	}
	return Result{Instance: stored, State: StateWaiting, RequeueAfter: e.cfg.PollInterval, Message: msg}, true, nil
}

func (e *Engine) poll(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	op := inst.Status.InFlight
	now := e.now()
	if op.NextPollAt != nil && now.Before(op.NextPollAt.Time) {
		return resultOf(e, inst), nil
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonBrokerUnavailable, err)
	}
	if err := e.auth.VetInstanceCall(ctx, inst, t, op.InstanceID, ""); err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
	mitigating := op.Type == v1alpha1.OperationDeprovision && inst.DeletionTimestamp == nil
	opts, err := e.requestOptions(ctx, inst, "", mitigating)
	if err != nil {
		return preCallFailure(e, ctx, inst, ReasonPlatformUnavailable, err)
	}
	// Polling is a broker call too: hold the claim while doing it, renewing it only
	// when it runs low so a long --wait costs one write per poll at most.
	if l, ok := store.LeaseOf(inst); !ok || l.Holder != e.cfg.Holder || l.ExpiresAt.Sub(now) < e.cfg.ClaimTTL/2 {
		claimed, err := e.cfg.Store.Instances().Claim(ctx, inst, e.cfg.Holder, e.cfg.ClaimTTL)
		if store.IsClaimed(err) || store.IsConflict(err) {
			return reread(e, ctx, inst, nil)
		}
		if err != nil {
			return Result{}, err
		}
		inst = claimed
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
	resp, callErr := t.client.LastOperation(ctx, &osb.LastOperationRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, ServiceID: op.ServiceID, PlanID: planID, OperationKey: op.OperationKey,
	})
	if ctx.Err() != nil {
		return interrupted(inst, ctx.Err())
	}
	outcome := osb.PollOutcomeOf(resp, callErr)
	if !e.now().Before(e.pollDeadline(op)) {
		outcome.PollingExpired = true
	}
	act := osb.Decide(pollOp, outcome)
	desc := ""
	if resp != nil {
		desc = resp.Description
	}
	msg := desc
	switch {
	case act.Reason == osb.ReasonPollingExpired:
		msg = fmt.Sprintf("the broker did not finish the operation within its maximum polling duration (until %s)", e.pollDeadline(op).Format(time.RFC3339))
	case callErr != nil:
		msg = describe(callErr, 0)
	case msg == "":
		msg = "the broker reported " + string(outcome.State)
	}
	if act.Result == osb.ResultSucceeded && op.Type == v1alpha1.OperationDeprovision {
		return e.gone(ctx, inst, op)
	}
	return finish(e, ctx, inst, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		switch {
		case act.Result == osb.ResultInProgress:
			f := x.Status.InFlight
			if desc != "" {
				f.LastDescription = storedText(desc)
			} else if callErr != nil {
				f.LastDescription = storedText("last poll failed: " + msg)
			}
			var retryAfter time.Duration
			if resp != nil {
				retryAfter = resp.RetryAfter
			}
			f.NextPollAt = mtime(now.Add(e.pollDelay(f, retryAfter, now)))
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

// pollDelay honours Retry-After; without it, polls slow down as the operation ages (a
// tenth of its age), between PollInterval and MaxPollInterval.
func (e *Engine) pollDelay(op *v1alpha1.Operation, retryAfter time.Duration, now time.Time) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := now.Sub(op.StartedAt.Time) / 10
	return min(max(d, e.cfg.PollInterval), e.cfg.MaxPollInterval)
}

func (e *Engine) refreshCatalog(ctx context.Context, b *v1alpha1.Broker) {
	if e.cfg.RefreshCatalog != nil {
		// A failed refresh shows up as the conflict again on the retry.
		_ = e.cfg.RefreshCatalog(ctx, b)
	}
}

// NoBrokerCallMessage is the Ready condition of an instance whose spec changed in what
// needs no broker call (its limits, its grants, a revert to what the broker holds).
const NoBrokerCallMessage = "the change needs no broker call: nothing was sent to the broker, which holds the instance as specified"

// settle marks an instance with nothing left to do as Ready.
func (e *Engine) settle(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
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
		return resultOf(e, inst), nil
	}
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e, ctx, inst, nil)
	}
	if err != nil {
		return Result{}, err
	}
	return resultOf(e, stored), nil
}

// succeeded copies the operation in flight into what the broker holds.
func (e *Engine) succeeded(x *v1alpha1.ServiceInstance, dashboardURL string, now time.Time) {
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
func (e *Engine) accepted(x *v1alpha1.ServiceInstance, t target, key, dashboardURL, reason, msg string, now time.Time) {
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
func (e *Engine) startMitigation(x *v1alpha1.ServiceInstance, act osb.Action, msg string, now time.Time) {
	x.Status.OrphanMitigation = &v1alpha1.OrphanMitigationState{
		Reason: act.Reason, Message: storedText(msg), StartedAt: metav1.NewTime(now), RetryAfter: act.Retry,
	}
	reason := ReasonProvisionCallFailed
	if x.Status.InFlight != nil && x.Status.InFlight.Async {
		reason = ReasonProvisionFailed
	}
	e.retryLater(x, reason, msg, true, now)
	x.Status.Phase = v1alpha1.PhaseOrphanMitigation
	setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionTrue, ReasonOrphanMitigationInProgress,
		"the outcome of the provision is uncertain ("+msg+"); deleting what the broker may hold before trying again", now)
}

// gone finishes a deprovision the broker confirmed (200, or 410 Gone) for op's instance
// id: a deletion releases the record once no other id may be held at the broker;
// orphan mitigation forgets what the broker held and schedules the provision again,
// under a new id (OSB ids are not reused: a broker may refuse a deleted id with 409).
func (e *Engine) gone(ctx context.Context, inst *v1alpha1.ServiceInstance, op *v1alpha1.Operation) (Result, error) {
	id := op.InstanceID
	if inst.DeletionTimestamp != nil {
		rest := slices.DeleteFunc(instanceIDsAtBroker(inst), func(x string) bool { return x == id })
		if len(rest) == 0 {
			return release(e, ctx, inst, "deprovisioned", true)
		}
		return finish(e, ctx, inst, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
			forgetExternalID(&x.Status.OperationStatus, id)
			x.Status.InFlight = nil
			if id == x.CurrentExternalID() {
				x.Status.Provisioned, x.Status.OrphanMitigation = nil, nil
			}
			if r := x.Status.Retry; r != nil && actionOf(r.Reason) == actionDeprovision {
				x.Status.Retry = nil
			}
			x.Status.Phase = v1alpha1.PhaseDeprovisioning
			setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonDeprovisionInProgress,
				fmt.Sprintf("the broker deleted instance id %s; deleting the other ids it may hold (%s)", id, strings.Join(rest, ", ")), now)
		})
	}
	om := inst.Status.OrphanMitigation
	return finish(e, ctx, inst, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		forgetExternalID(&x.Status.OperationStatus, id)
		x.Status.Provisioned, x.Status.OrphanMitigation, x.Status.InFlight = nil, nil, nil
		if id == x.CurrentExternalID() {
			x.Status.ExternalID = e.recordBoundID(x.UID)
		}
		setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionFalse, ReasonOrphanMitigationSucceeded,
			"the broker confirmed it holds nothing of the failed provision", now)
		msg := "provision failed"
		if om != nil {
			msg = om.Message
		}
		if om == nil || om.RetryAfter {
			// Keep counting provision attempts: the backoff grows across mitigations.
			if x.Status.Retry != nil && actionOf(x.Status.Retry.Reason) == actionProvision {
				x.Status.Retry.Attempts--
			}
			e.retryLater(x, ReasonProvisionCallFailed, msg+"; orphan mitigation done, provisioning again under a new instance id", false, now)
			return
		}
		e.terminalFailure(x, ReasonProvisionFailed, msg, now)
	})
}
