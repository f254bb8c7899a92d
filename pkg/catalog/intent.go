package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// NewInstance builds the record of a new instance of plan of class, with a fresh OSB id
// unless externalID is given. Parameters are a JSON object (nil for none).
func NewInstance(namespace, name string, class *v1alpha1.ServiceClass, plan *v1alpha1.ServicePlan, params []byte, from []v1alpha1.ParametersFromSource, externalID string) *v1alpha1.ServiceInstance {
	if externalID == "" {
		externalID = uuid.NewString()
	}
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope: class.Spec.Scope, BrokerName: class.Spec.BrokerName,
			ClassExternalName: class.Spec.ExternalName, ClassID: class.Spec.ID,
			PlanExternalName: plan.ExternalName, PlanID: plan.ID,
			ParametersFrom: from, ExternalID: externalID,
		},
		Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhasePending}},
	}
	if len(params) > 0 {
		inst.Spec.Parameters = &runtime.RawExtension{Raw: params}
	}
	return inst
}

// BusyError says an instance has an operation in flight, so its spec may not change
// now.
type BusyError struct {
	Instance *v1alpha1.ServiceInstance
	Now      time.Time
}

func (e *BusyError) Error() string {
	op := e.Instance.Status.InFlight
	what := "being changed"
	switch op.Type {
	case v1alpha1.OperationProvision:
		what = "still provisioning"
	case v1alpha1.OperationUpdate:
		what = "still updating"
	case v1alpha1.OperationDeprovision:
		what = "being deprovisioned"
	}
	id := op.OperationKey
	if id == "" {
		id = op.RequestID
	}
	return fmt.Sprintf(`instance %q is %s (operation %s, %s): run "kubectl catalog describe instance %s" or wait with --wait`,
		e.Instance.Name, what, id, e.Now.Sub(op.StartedAt.Time).Round(time.Second), e.Instance.Name)
}

// CheckChangeable refuses to change an instance that has an operation in flight or is
// being deleted: an interrupted call is re-sent identically only while the spec it was
// made from stays as it was.
func CheckChangeable(inst *v1alpha1.ServiceInstance, now time.Time) error {
	if inst.DeletionTimestamp != nil {
		return fmt.Errorf("instance %q is being deprovisioned and cannot be changed: run \"kubectl catalog describe instance %s\"", inst.Name, inst.Name)
	}
	if inst.Status.InFlight != nil {
		return &BusyError{Instance: inst, Now: now}
	}
	return nil
}

// Touch asks for the instance's parameters to be sent to the broker again (an update
// with every parameter), e.g. after a Secret they come from changed in a way the broker
// must see. It only marks the record; the next step sends the update.
func (e *Engine) Touch(ctx context.Context, namespace, name string) (*v1alpha1.ServiceInstance, error) {
	return e.cfg.Store.Instances().UpdateWithRetry(store.WithIntent(ctx), namespace, name, func(inst *v1alpha1.ServiceInstance) error {
		if err := CheckChangeable(inst, e.now()); err != nil {
			return err
		}
		if inst.Status.Provisioned == nil {
			return fmt.Errorf("instance %q is not provisioned yet; nothing to re-send: run \"kubectl catalog describe instance %s\"", name, name)
		}
		inst.Status.Provisioned.ParametersChecksum = "touched"
		inst.Status.Provisioned.ParameterHashes = nil
		now := metav1.NewTime(e.now())
		inst.Status.Retry = &v1alpha1.RetryState{Reason: ReasonUpdateRequested, LastError: "parameters to be re-sent (touch)", NextRetryAt: &now}
		return nil
	})
}

// AbandonInstance drops the instance's records (and its bindings' records) without
// calling the broker: whatever the broker holds stays there, unknown to the catalog.
// It is the way out when a broker is gone for good.
func (e *Engine) AbandonInstance(ctx context.Context, inst *v1alpha1.ServiceInstance) error {
	bs, err := e.cfg.Store.Bindings().List(ctx, inst.Namespace, store.Filter{Instance: inst.Name})
	if err != nil {
		return err
	}
	for _, b := range bs {
		if err := e.AbandonBinding(ctx, b); err != nil {
			return err
		}
	}
	if err := e.cfg.Store.Instances().Delete(ctx, inst.Namespace, inst.Name); err != nil && !store.IsNotFound(err) {
		return err
	}
	if _, err := e.cfg.Store.Instances().RemoveFinalizer(ctx, inst); err != nil && !store.IsNotFound(err) {
		return err
	}
	return nil
}
