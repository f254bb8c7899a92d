package engine

import (
	"context"
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// StepBinding moves a binding one step toward its spec, on the same protocol as
// StepInstance: it polls the operation in flight, re-sends an interrupted call, unbinds
// (for a deletion, orphan mitigation, or the ids a rotation retired), binds, or projects
// the Secret into workloads and settles, in that order, making at most one broker call.
//
// A bind's credentials are written to the binding's Secret before the binding is marked
// bound; if the Secret cannot be written, the bind is an uncertain outcome and is
// unbound at the broker (orphan mitigation). An unbind first removes the projections
// and the Secret, then calls the broker; the finalizer comes off when the broker
// confirmed (200 or 410).
func (e *Engine) StepBinding(ctx context.Context, in *v1alpha1.ServiceBinding) (Result, error) {
	ctx = stepUnbindReads(ctx, in)
	r, err := e.stepBinding(ctx, in)
	if err == nil && r.State == StateDeleted && !r.noPlace {
		e.auth.ReleaseConsumer(ctx, in)
	}
	return r, err
}

func (e *Engine) stepBinding(ctx context.Context, in *v1alpha1.ServiceBinding) (Result, error) {
	return step(e, bindingSteps{e}, ctx, in)
}

// bindingSteps are the steps of service bindings: the binding's kind of the step
// protocol (step.go), and its operations (step_bind.go, step_unbind.go,
// step_binding_poll.go).
type bindingSteps struct{ *Engine }

func (bindingSteps) admit(context.Context, *v1alpha1.ServiceBinding) (Result, bool, error) {
	return Result{}, false, nil
}

// checkStatus: as for an instance, an operation in flight the engine could not have
// written is refused, never acted on.
func (bindingSteps) checkStatus(b *v1alpha1.ServiceBinding) error { return checkBindingStatus(b) }

func (bindingSteps) finishing() v1alpha1.OperationType { return v1alpha1.OperationUnbind }

func (e bindingSteps) calls() map[v1alpha1.OperationType]func(context.Context, *v1alpha1.ServiceBinding, *v1alpha1.Operation) (Result, error) {
	return map[v1alpha1.OperationType]func(context.Context, *v1alpha1.ServiceBinding, *v1alpha1.Operation) (Result, error){
		v1alpha1.OperationBind:   e.bind,
		v1alpha1.OperationUnbind: e.unbind,
	}
}

func (bindingSteps) kind() string { return "binding" }

// fresh unbinds (for a deletion, orphan mitigation, or the ids a rotation retired),
// binds, or projects the Secret into workloads and settles, in that order; a binding
// of a user-provided instance copies its credentials instead.
func (e bindingSteps) fresh(ctx context.Context, b *v1alpha1.ServiceBinding) (Result, error) {
	if until := createMayRun(e.Engine, b); b.DeletionTimestamp != nil && !until.IsZero() {
		return waitForCreate(e.Engine, ctx, b, ReasonUnbindWaitingForBroker, until)
	}
	if b.DeletionTimestamp != nil || b.Status.OrphanMitigation != nil || len(b.Status.Retired) > 0 {
		return e.unbind(ctx, b, nil)
	}
	inst, userProvided, err := e.userProvidedBinding(ctx, b)
	if err != nil {
		return preCallFailure(e.Engine, ctx, b, ReasonRefusedNotShared, err)
	}
	if userProvided {
		return e.stepUserProvidedBinding(ctx, b, inst)
	}
	if b.Status.Bound == nil || b.Status.Bound.BindingID != b.CurrentExternalID() {
		return e.bindKnowing(ctx, b, nil, inst)
	}
	return e.settleBinding(ctx, b)
}

// bindTarget is what a binding's broker call needs from other records.
type bindTarget struct {
	target
	inst   *v1alpha1.ServiceInstance
	planID string
}

func (e *Engine) bindTarget(ctx context.Context, b *v1alpha1.ServiceBinding) (bindTarget, error) {
	return bindingSteps{e}.bindTargetKnowing(ctx, b, nil)
}

// bindTargetKnowing is bindTarget on the instance read in this step already, when known
// is not nil.
func (e bindingSteps) bindTargetKnowing(ctx context.Context, b *v1alpha1.ServiceBinding, known *v1alpha1.ServiceInstance) (bindTarget, error) {
	if known != nil {
		if err := reaches(b, known, nil); err != nil {
			return bindTarget{}, err
		}
		t, err := e.target(ctx, known)
		if err != nil {
			return bindTarget{}, err
		}
		return bindTarget{target: t, inst: known, planID: brokerPlanID(known)}, nil
	}
	ns, name := b.InstanceRef()
	inst, err := e.cfg.Store.Instances().Get(ctx, ns, name)
	return e.bindTargetOf(ctx, b, inst, err)
}

// bindTargetOf is bindTarget on inst, the binding's instance as read (err: the read's
// error).
func (e bindingSteps) bindTargetOf(ctx context.Context, b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance, err error) (bindTarget, error) {
	if err := reaches(b, inst, err); err != nil {
		return bindTarget{}, err
	}
	if store.IsNotFound(err) {
		return bindTarget{}, fmt.Errorf("instance %q of binding %q is gone, so the broker cannot be asked about the binding: drop the binding with %s",
			b.Spec.InstanceName, b.Name, hint.Quoted(b.Namespace, "unbind", b.Name, "--abandon"))
	}
	if err != nil {
		return bindTarget{}, err
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return bindTarget{}, err
	}
	return bindTarget{target: t, inst: inst, planID: brokerPlanID(inst)}, nil
}

// instanceRead is a binding's instance as read ahead, with the context that carries the
// reads of its broker and class, started once the instance was read.
type instanceRead struct {
	inst *v1alpha1.ServiceInstance
	ctx  context.Context
}

// readBoundInstance starts reading the instance b names, then its broker and class and
// the lists of the checks of the OSB ids (the instance's, and bindingID), for
// bindTargetOf: a step calls it only after the write its reads must see (b as read
// after its deletion mark), to overlap them with its own writes that they need not see.
func (e bindingSteps) readBoundInstance(ctx context.Context, b *v1alpha1.ServiceBinding, bindingID string) *ahead.Read[instanceRead] {
	return ahead.Start(ctx, func() (instanceRead, error) {
		ns, name := b.InstanceRef()
		if e.cfg.TargetCacheTTL == 0 {
			ctx = withIDListsAhead(e.Engine, ctx, idKey{v1alpha1.KindServiceBinding, bindingID})
		}
		read := takeInstanceRead(ctx, b)
		if read == nil {
			read = ahead.Done(e.cfg.Store.Instances().Get(ctx, ns, name))
		}
		inst, err := read.Wait()
		if err != nil || inst.IsUserProvided() || e.cfg.TargetCacheTTL > 0 {
			return instanceRead{inst: inst, ctx: ctx}, err
		}
		return instanceRead{inst: inst, ctx: withTargetReadAhead(e.Engine, ctx, inst)}, nil
	})
}

func (t bindTarget) retrievable() bool { return t.class != nil && t.class.Spec.BindingsRetrievable }

// bindingParameters resolves the binding's parameters, keyed with its salt (created in
// b's status when it has none yet).
func (e *Engine) bindingParameters(ctx context.Context, b *v1alpha1.ServiceBinding) (Parameters, error) {
	p, err := ResolveParameters(ctx, b.Namespace, b.Spec.Parameters, b.Spec.ParametersFrom, e.auth.SecretsFor(b))
	return p.salted(&b.Status.OperationStatus), err
}

// reaches refuses b, a binding of another namespace than its instance inst (as read,
// with err), when inst is gone or does not count b among its consumers (the
// cross-namespace rule, authority.Counts), before anything else of inst is read or
// acted on: the refusal (authority.NotReached) is the same whether inst exists, and
// whatever it grants, so that a binding written to probe another namespace learns
// nothing there. A binding of inst's own namespace, and any read error but "not found",
// pass.
func reaches(b *v1alpha1.ServiceBinding, inst *v1alpha1.ServiceInstance, err error) error {
	if !b.CrossNamespace() {
		return nil
	}
	if store.IsNotFound(err) || (err == nil && inst != nil && !authority.Counts(inst, b)) {
		return authority.NotReached(b)
	}
	return nil
}
