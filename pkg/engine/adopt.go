package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// This file takes over instances and bindings that a broker already holds, made by
// another platform (the retired Kubernetes Service Catalog): their records are written
// as if this engine had made the calls, under the same OSB ids, so that every later
// step (polls, updates, deletions) goes on from there. Adoption sends nothing to the
// broker.

// AdoptedOperation is an asynchronous operation the broker is running for an adopted
// instance: the engine polls it with its operation key.
type AdoptedOperation struct {
	// Type is Provision, Update or Deprovision.
	Type v1alpha1.OperationType
	// OperationKey is the broker's operation key ("" when the broker sent none).
	OperationKey string
	// PlanID is the plan the operation is about: the plan an update moves to, the plan
	// provisioned or deprovisioned. Empty: the spec's plan.
	PlanID string
	// StartedAt is when the operation began; zero: now.
	StartedAt time.Time
}

// InstanceAdoption is an instance the broker holds (or is provisioning) under
// Record.Spec.ExternalID.
type InstanceAdoption struct {
	// Record is the record to create: namespace, name, annotations and spec.
	Record *v1alpha1.ServiceInstance
	// Class is the instance's class record, for the plan's maximum_polling_duration.
	Class *v1alpha1.ServiceClass
	// HeldPlanID is the plan the broker holds the instance on; empty when the broker
	// holds no finished instance yet (a provision in flight).
	HeldPlanID string
	// ParametersHeld says the broker holds the spec's parameters, so that no update is
	// due; otherwise the next step sends every parameter in an update.
	ParametersHeld bool
	// DashboardURL is the instance's dashboard, if the broker gave one.
	DashboardURL string
	// InFlight is the asynchronous operation the broker is running, if any.
	InFlight *AdoptedOperation
	// ContextUpdate says the broker holds another platform's context and allows an
	// update carrying only the context: the record asks for one (op_moved.go).
	ContextUpdate bool
	// Message is the Ready condition's message; empty: the one of a svcat migration.
	Message string
}

// AdoptInstance creates, on the user's command, the record of an instance that the
// broker already holds, marked as the engine marks an instance it provisioned: what
// the broker holds in status.provisioned (with the parameters' checksum, so that no
// update is sent unless the spec differs), an asynchronous operation in status.inFlight
// to be polled with its key, the id in status.externalIDs. It refuses (RefusedError) an
// OSB id another record uses, and fails when the parameters cannot be read (a missing
// Secret). Parameters from Secrets are read with the rights of the user running it, as
// a verb does. Nothing is sent to the broker.
func (e *Engine) AdoptInstance(ctx context.Context, a InstanceAdoption) (*v1alpha1.ServiceInstance, error) {
	inst := a.Record.DeepCopy()
	id := inst.Spec.ExternalID
	if id == "" {
		return nil, fmt.Errorf("instance %q has no OSB instance id to adopt", inst.Name)
	}
	if a.HeldPlanID == "" && (a.InFlight == nil || a.InFlight.Type != v1alpha1.OperationProvision) {
		return nil, fmt.Errorf("instance %q: the broker holds no plan and provisions nothing, so there is nothing to adopt", inst.Name)
	}
	if err := e.auth.IDFree(ctx, v1alpha1.KindServiceInstance, inst.Namespace, inst.Name, id); err != nil {
		return nil, err
	}
	now := e.now()
	inst.Status = v1alpha1.ServiceInstanceStatus{}
	st := &inst.Status
	params, err := e.parameters(WithRunnersRights(ctx), inst)
	if err != nil {
		return nil, fmt.Errorf("instance %q: %w", inst.Name, err)
	}
	st.ObservedGeneration = 1
	inst.Generation = 1
	st.ExternalIDs = []string{id}
	if a.HeldPlanID != "" {
		p := &v1alpha1.ProvisionedState{PlanID: a.HeldPlanID, DashboardURL: a.DashboardURL, ParametersChecksum: unknownChecksum}
		if a.ParametersHeld {
			p.ParametersChecksum, p.ParameterHashes = params.Checksum(), params.InlineHashes()
			p.Parameters = appliedParameters(&inst.Spec)
		}
		st.Provisioned = p
		st.Phase = v1alpha1.PhaseReady
		msg := "the broker holds the instance; its record was taken over from another platform"
		if a.Message != "" {
			msg = a.Message
		}
		setCondition(inst, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonAdopted, msg, now)
		if a.ContextUpdate && a.InFlight == nil {
			p.ContextOutdated = true
			next := metav1.NewTime(now)
			st.Retry = &v1alpha1.RetryState{Reason: ReasonUpdateRequested, LastError: "the new context is to be sent to the broker (moved from another cluster)", NextRetryAt: &next}
		}
	}
	if op := a.InFlight; op != nil {
		planID := op.PlanID
		if planID == "" {
			planID = inst.Spec.PlanID
		}
		started := op.StartedAt
		if started.IsZero() {
			started = now
		}
		f := &v1alpha1.Operation{
			Type: op.Type, InstanceID: id, ServiceID: inst.Spec.ClassID, PlanID: planID,
			RequestID: e.newRequestID(), StartedAt: metav1.NewTime(started),
			Async: true, OperationKey: op.OperationKey, NextPollAt: mtime(now),
		}
		if op.Type != v1alpha1.OperationDeprovision {
			f.ParametersChecksum, f.ParameterHashes = params.Checksum(), params.InlineHashes()
		}
		limit := e.cfg.MaxPollingDuration
		if a.Class != nil {
			if p := a.Class.PlanByID(planID); p != nil && p.MaximumPollingDuration != nil && p.MaximumPollingDuration.Duration > 0 {
				limit = p.MaximumPollingDuration.Duration
			}
		}
		f.PollDeadline = mtime(now.Add(limit))
		st.InFlight = f
		phase, reason, msg := v1alpha1.PhaseProvisioning, ReasonProvisionInProgress, "the broker is provisioning (operation taken over from another platform)"
		switch op.Type {
		case v1alpha1.OperationUpdate:
			phase, reason, msg = v1alpha1.PhaseUpdating, ReasonUpdateInProgress, "the broker is updating (operation taken over from another platform)"
		case v1alpha1.OperationDeprovision:
			phase, reason, msg = v1alpha1.PhaseDeprovisioning, ReasonDeprovisionInProgress, "the broker is deprovisioning (operation taken over from another platform)"
		}
		st.Phase = phase
		setCondition(inst, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg, now)
	}
	inst.ResourceVersion, inst.UID = "", ""
	created, err := e.cfg.Store.Instances().Create(store.WithIntent(ctx), inst)
	if err != nil {
		return nil, err
	}
	if err := e.ClaimSpecIDs(ctx, created); err != nil {
		return created, fmt.Errorf("instance %q is recorded, but %w; its bindings cannot be bound or unbound until it is made: run this again", created.Name, err)
	}
	return created, nil
}

// BindingAdoption is a binding the broker holds under Record.Spec.ExternalID, whose
// credentials are already in the Secret Record.Spec.SecretName.
type BindingAdoption struct {
	// Record is the record to create: namespace, name, annotations and spec.
	Record *v1alpha1.ServiceBinding
	// PreviousOwners are the uids of the objects that own the Secret now; their owner
	// references are replaced by the binding record's.
	PreviousOwners []types.UID
}

// HookAdoptionMarked: AdoptBinding marked the binding's instance with the pending
// adoption; the binding's record is not created yet.
const HookAdoptionMarked HookPoint = "adoption-marked"

// AdoptBinding creates, on the user's command, the record of a binding the broker holds
// and whose credentials are in an existing Secret, marked as bound (status.bound,
// status.secret with the Secret's key names), then makes the binding's ConfigMap the
// Secret's owner in place of a.PreviousOwners, without touching the Secret's data.
// A record that exists already (an adoption interrupted before the Secret was adopted)
// gets its Secret adopted. It refuses (RefusedError) an OSB id another record uses and
// fails when the Secret is missing, and refuses a binding whose instance is missing or
// whose deprovision was written ahead (adopt_mark.go): under an instance marked for
// deletion with nothing sent yet it is adopted, and the deletion unbinds it first.
// Nothing is sent to the broker.
func (e *Engine) AdoptBinding(ctx context.Context, a BindingAdoption) (*v1alpha1.ServiceBinding, error) {
	b := a.Record.DeepCopy()
	id := b.Spec.ExternalID
	if id == "" {
		return nil, fmt.Errorf("binding %q has no OSB binding id to adopt", b.Name)
	}
	secret, err := e.cfg.Store.GetSecret(ctx, b.Namespace, b.Spec.SecretName)
	if err != nil {
		return nil, fmt.Errorf("binding %q: its credentials Secret: %w", b.Name, err)
	}
	if err := e.auth.IDFree(ctx, v1alpha1.KindServiceBinding, b.Namespace, b.Name, id); err != nil {
		return nil, err
	}
	now := e.now()
	b.Status = v1alpha1.ServiceBindingStatus{}
	st := &b.Status
	checksum := ""
	if params, err := e.bindingParameters(WithRunnersRights(ctx), b); err == nil {
		// Only shown; a binding's parameters never cause a call once it is bound.
		checksum = params.Checksum()
	}
	keys := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.Generation = 1
	st.ObservedGeneration = 1
	st.ExternalIDs = []string{id}
	st.Bound = &v1alpha1.BoundState{BindingID: id, ParametersChecksum: checksum}
	st.Secret = &v1alpha1.CredentialsSecret{Name: secret.Name, Keys: keys, WrittenAt: secret.CreationTimestamp}
	st.Phase = v1alpha1.PhaseReady
	setCondition(b, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonAdopted,
		fmt.Sprintf("the broker holds the binding; the credentials are in Secret %q, taken over from another platform", secret.Name), now)
	b.ResourceVersion, b.UID = "", ""
	// The instance is marked first, so that its deletion cannot list its bindings before
	// the record lands and delete it at the broker after (adopt_mark.go).
	mark, err := e.markAdoption(ctx, b)
	if err != nil {
		return nil, err
	}
	e.hook(ctx, HookAdoptionMarked, nil)
	if !mark.fresh(e) {
		e.unmarkAdoption(ctx, mark)
		return nil, fmt.Errorf("binding %q is not adopted: marking its instance %q took longer than the mark holds; nothing else was written: run this again", b.Name, b.Spec.InstanceName)
	}
	created, err := e.cfg.Store.Bindings().Create(store.WithIntent(ctx), b)
	e.unmarkAdoption(ctx, mark)
	if store.IsAlreadyExists(err) {
		created, err = e.cfg.Store.Bindings().Get(ctx, b.Namespace, b.Name)
		if err == nil && created.Spec.ExternalID != id {
			return nil, fmt.Errorf("binding %q exists already with another OSB id (%s, not %s): rename or remove it first", b.Name, created.Spec.ExternalID, id)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := e.ClaimSpecIDs(ctx, created); err != nil {
		return created, fmt.Errorf("binding %q is recorded, but %w; it cannot be unbound until it is made: run this again", created.Name, err)
	}
	if _, err := e.cfg.Store.AdoptBindingSecret(ctx, created, a.PreviousOwners...); err != nil {
		return created, fmt.Errorf("binding %q is recorded, but its Secret %q could not be adopted: %w", b.Name, secret.Name, err)
	}
	return created, nil
}
