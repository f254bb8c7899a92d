package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
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
	return step(e, instanceSteps{e}, stepBindingLists(ctx, in), in)
}

// instanceSteps are the steps of service instances: the instance's kind of the step
// protocol (step.go), and its operations (step_provision.go, step_update.go,
// step_deprovision.go, step_instance_poll.go).
type instanceSteps struct{ *Engine }

// admit refuses a change of spec.userProvided, and steps a user-provided instance,
// which no broker holds.
func (e instanceSteps) admit(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, bool, error) {
	deleting := inst.DeletionTimestamp != nil
	var r Result
	var err error
	switch brokered := heldAtBroker(inst); {
	case inst.IsUserProvided() && !brokered:
		r, err = e.stepUserProvided(ctx, inst)
	case inst.IsUserProvided() && !deleting:
		// What the broker holds is deleted whatever the spec says now; until then the
		// instance is not user-provided.
		r, err = preCallFailure(e.Engine, ctx, inst, ReasonRefusedUserProvidedChange, refused(ReasonRefusedUserProvidedChange,
			"spec.userProvided cannot be added to instance %q, which a broker holds (instance id %s): remove spec.userProvided again, or deprovision the instance and create a user-provided one",
			inst.Name, inst.CurrentExternalID()))
	case !inst.IsUserProvided() && !deleting && wasUserProvided(inst):
		r, err = preCallFailure(e.Engine, ctx, inst, ReasonRefusedUserProvidedChange, refused(ReasonRefusedUserProvidedChange,
			"spec.userProvided cannot be removed from instance %q: put it back, or delete the instance and provision one from a broker", inst.Name))
	default:
		return Result{}, false, nil
	}
	return r, true, err
}

func (instanceSteps) checkStatus(inst *v1alpha1.ServiceInstance) error {
	return checkInstanceStatus(inst)
}

// finishing: a deletion needs no provision or update: whatever an interrupted one did
// is removed by the deprovision, which also answers 410 if the broker never saw it.
func (instanceSteps) finishing() v1alpha1.OperationType { return v1alpha1.OperationDeprovision }

func (e instanceSteps) calls() map[v1alpha1.OperationType]func(context.Context, *v1alpha1.ServiceInstance, *v1alpha1.Operation) (Result, error) {
	return map[v1alpha1.OperationType]func(context.Context, *v1alpha1.ServiceInstance, *v1alpha1.Operation) (Result, error){
		v1alpha1.OperationProvision:   e.provision,
		v1alpha1.OperationUpdate:      e.update,
		v1alpha1.OperationDeprovision: e.deprovision,
	}
}

func (instanceSteps) kind() string { return "instance" }

// fresh deprovisions (for a deletion or orphan mitigation), provisions, or updates, in
// that order; an update first revokes the grants the spec withdrew.
func (e instanceSteps) fresh(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	if op := uncertainPlanChange(inst); op != nil {
		// The DELETE names the plan the broker holds, which this update's answer would
		// have said: it is sent again first.
		if d := e.retryWait(inst, actionUpdate); d > 0 {
			return resultOf(e.Engine, inst), nil
		}
		return e.update(ctx, inst, op)
	}
	if inst.DeletionTimestamp != nil {
		if until := createMayRun(e.Engine, inst); !until.IsZero() {
			return waitForCreate(e.Engine, ctx, inst, ReasonDeprovisionWaitingForBroker, until)
		}
	}
	if inst.DeletionTimestamp != nil || inst.Status.OrphanMitigation != nil {
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

// uncertainPlanChange is the update in flight of inst, being deleted, when that update
// changes the plan and its outcome is unknown (its answer was lost, or it was never
// answered): the broker may hold either plan, and a deprovision must name the one it
// holds. Nil otherwise, and for an operation the engine could not have written.
func uncertainPlanChange(inst *v1alpha1.ServiceInstance) *v1alpha1.Operation {
	op, prov := inst.Status.InFlight, inst.Status.Provisioned
	if inst.DeletionTimestamp == nil || op == nil || op.Async || op.Type != v1alpha1.OperationUpdate || prov == nil || op.PlanID == prov.PlanID {
		return nil
	}
	if checkInstanceStatus(inst) != nil {
		return nil
	}
	return op
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
func (e instanceSteps) revokeWithdrawn(ctx context.Context, inst *v1alpha1.ServiceInstance) (*v1alpha1.ServiceInstance, error) {
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
	return e.targets.getOrRead(ctx, key, e.cfg.TargetCacheTTL, func() (target, error) { return e.readTarget(ctx, inst) })
}

func (e *Engine) readTarget(ctx context.Context, inst *v1alpha1.ServiceInstance) (target, error) {
	ns := e.brokerNamespace(inst)
	// The class goes out with the broker, not after its client is built.
	name := v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID)
	prepared, classKept := e.prepared.class(ns, name)
	classRead, classAhead := takeClassRead(ctx, ns, name)
	if !classKept && !classAhead {
		classRead = ahead.Start(ctx, func() (*v1alpha1.ServiceClass, error) { return e.cfg.Store.Classes().Get(ctx, ns, name) })
	}
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
	client, err := e.cfg.Brokers.ClientFor(ctx, b)
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
	c := slotted{client} // each request holds a broker slot of its context (brokerslots.go)
	if classKept {
		return target{broker: b, client: c, class: prepared}, nil
	}
	class, err := classRead.Wait()
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

// send makes c, a call about inst, by sendCall: the call is vetted against the
// instance's authority first, and an answer that asks for it refetches the broker's
// catalog before outcome stores it.
func (e instanceSteps) send(ctx context.Context, inst *v1alpha1.ServiceInstance, t target, c brokerCall, outcome func(stored *v1alpha1.ServiceInstance, act osb.Action, callErr error) (Result, error)) (Result, error) {
	c.broker, c.paramsFrom = t.broker, inst.Spec.ParametersFrom
	c.vet = func(ctx context.Context) error {
		return e.auth.VetInstanceCall(ctx, inst, t, c.op.InstanceID, c.planID)
	}
	return sendCall(e.Engine, ctx, inst, c, func(stored *v1alpha1.ServiceInstance, act osb.Action, callErr error) (Result, error) {
		if act.RefetchCatalog {
			e.refreshCatalog(ctx, t.broker)
		}
		return outcome(stored, act, callErr)
	})
}
