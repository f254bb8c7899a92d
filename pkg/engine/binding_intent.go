package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// BindingIntent is what a user asks for when binding an instance.
type BindingIntent struct {
	// Namespace and Name of the binding record; Instance is the instance's record name.
	Namespace, Name, Instance string
	// SecretName is the Secret the credentials go to.
	SecretName string
	// Parameters are the inline parameters, a JSON object (nil for none).
	Parameters     []byte
	ParametersFrom []v1alpha1.ParametersFromSource
	Transforms     []v1alpha1.SecretTransform
	// SecretTemplate renders Secret keys after the transforms; nil for none.
	SecretTemplate *v1alpha1.SecretTemplate
	Projections    []v1alpha1.WorkloadProjection
	// ExternalID is the OSB binding id; a fresh one when empty.
	ExternalID string
	// InstanceNamespace is the namespace of an instance shared with Namespace; empty
	// for an instance of Namespace.
	InstanceNamespace string
}

// NewBinding builds the record of a new binding.
func NewBinding(in BindingIntent) *v1alpha1.ServiceBinding {
	id := in.ExternalID
	if id == "" {
		id = v1alpha1.NewNamespaceBoundID(in.Namespace)
	}
	b := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name},
		Spec: v1alpha1.ServiceBindingSpec{
			InstanceName: in.Instance, ExternalID: id, ParametersFrom: in.ParametersFrom,
			SecretName: in.SecretName, SecretTransforms: in.Transforms, SecretTemplate: in.SecretTemplate.DeepCopy(), Projections: in.Projections,
		},
		Status: v1alpha1.ServiceBindingStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhasePending}},
	}
	if len(in.Parameters) > 0 {
		b.Spec.Parameters = &runtime.RawExtension{Raw: in.Parameters}
	}
	if in.InstanceNamespace != in.Namespace {
		b.Spec.InstanceNamespace = in.InstanceNamespace
	}
	return b
}

// CheckBindable says why inst cannot get a new binding now, or returns nil. class is
// the instance's class record, nil when it is gone.
func CheckBindable(inst *v1alpha1.ServiceInstance, class *v1alpha1.ServiceClass) error {
	describe := fmt.Sprintf(`run "kubectl catalog describe instance %s"`, inst.Name)
	switch {
	case inst.DeletionTimestamp != nil:
		return fmt.Errorf("instance %q is being deprovisioned and cannot be bound: %s", inst.Name, describe)
	case inst.IsUserProvided():
		if inst.Status.Phase != v1alpha1.PhaseReady {
			return fmt.Errorf("user-provided instance %q is not ready (%s) and cannot be bound yet: %s", inst.Name, phaseOf(inst), describe)
		}
		return nil
	case inst.Status.Provisioned == nil:
		return fmt.Errorf("instance %q is not ready (%s) and cannot be bound yet: wait for it with \"%s\", then bind again; or %s",
			inst.Name, phaseOf(inst), WaitCommand(v1alpha1.KindServiceInstance, inst.Namespace, inst.Name, WaitForReady), describe)
	case inst.Status.Usable != nil && !*inst.Status.Usable:
		return fmt.Errorf("instance %q was marked unusable by its broker after a failed operation and cannot be bound: update it (\"kubectl catalog update %s\") or %s",
			inst.Name, inst.Name, describe)
	case class == nil:
		return fmt.Errorf("the class %q of instance %q is no longer in the catalog: run \"kubectl catalog sync broker %s\"",
			inst.Spec.ClassExternalName, inst.Name, inst.Spec.BrokerName)
	}
	plan := class.PlanByID(inst.Status.Provisioned.PlanID)
	if plan == nil {
		return fmt.Errorf("the plan of instance %q is no longer in class %q: run \"kubectl catalog sync broker %s\"",
			inst.Name, class.Spec.ExternalName, inst.Spec.BrokerName)
	}
	if !class.EffectiveBindable(plan) {
		return fmt.Errorf("plan %q of class %q is not bindable (the broker says bindable: false): instance %q cannot be bound",
			plan.ExternalName, class.Spec.ExternalName, inst.Name)
	}
	return nil
}

func phaseOf(inst *v1alpha1.ServiceInstance) string {
	if inst.Status.Phase == "" {
		return "Pending"
	}
	return string(inst.Status.Phase)
}

// CheckBindingChangeable refuses to change a binding that has a broker call in flight
// or is being deleted.
func CheckBindingChangeable(b *v1alpha1.ServiceBinding) error {
	if b.DeletionTimestamp != nil {
		return fmt.Errorf("binding %q is being unbound and cannot be changed: run \"kubectl catalog describe binding %s\"", b.Name, b.Name)
	}
	if op := b.Status.InFlight; op != nil {
		return fmt.Errorf("binding %q has a %s in flight (since %s) and cannot be changed now: wait for it with \"%s\", then try again; or run \"kubectl catalog describe binding %s -n %s\"",
			b.Name, op.Type, op.StartedAt.UTC().Format(time.RFC3339), WaitCommand(v1alpha1.KindServiceBinding, b.Namespace, b.Name, WaitForReady), b.Name, b.Namespace)
	}
	return nil
}

// RotationDue reports whether the broker's renew_before for the binding's credentials
// has passed (see records.RotationDue).
var RotationDue = records.RotationDue

// RotateScheduled asks for new credentials for a ready binding whose rotation is due,
// on no one's command but the schedule's (reconcile --rotate-due): see startRotation.
// The write keeps the record's author, so the binding goes on being driven on its
// author's authority, not on the authority of whoever runs the schedule. checks are run
// on the binding as it is when written (each write retried after a conflict): one that
// fails leaves it as it is and is the error returned.
func (e *Engine) RotateScheduled(ctx context.Context, namespace, name string, checks ...func(*v1alpha1.ServiceBinding) error) (*v1alpha1.ServiceBinding, error) {
	return e.startRotationWith(ctx, namespace, name, nil, checks...)
}

// startRotation asks for new credentials for a ready binding: the record's status gets
// a new OSB binding id and names the old one its predecessor (the spec is left as the
// user wrote it, so a scheduled rotation needs no right to change it). The next steps
// bind the new id (sending predecessor_binding_id when the plan is binding_rotatable),
// replace the Secret's contents in one write, and then unbind the old id. The record,
// its Secret and its projections keep their names, so workloads see new files in place.
// ctx says whose intent the write is (store.WithIntent for the user's own command).
func (e *Engine) startRotation(ctx context.Context, namespace, name string) (*v1alpha1.ServiceBinding, error) {
	return e.startRotationWith(ctx, namespace, name, nil)
}

// startRotationWith is startRotation that also sets the binding's spec.secretTemplate to
// tpl, in the same write, when tpl is not nil: the new credentials are rendered with it.
func (e *Engine) startRotationWith(ctx context.Context, namespace, name string, tpl *v1alpha1.SecretTemplate, checks ...func(*v1alpha1.ServiceBinding) error) (*v1alpha1.ServiceBinding, error) {
	b, err := e.rotate(ctx, namespace, name, tpl, checks...)
	if err == nil {
		ev := NewEvent(namespace, store.ConfigMapName(v1alpha1.KindServiceBinding, name), EventNormal, "RotationRequested", "Rotation",
			"new credentials are to be bound under a new binding id; the replaced ones are unbound once the Secret holds the new ones")
		ev.UID = b.GetUID()
		e.event(ctx, ev)
	}
	return b, err
}

func (e *Engine) rotate(ctx context.Context, namespace, name string, tpl *v1alpha1.SecretTemplate, checks ...func(*v1alpha1.ServiceBinding) error) (*v1alpha1.ServiceBinding, error) {
	return e.cfg.Store.Bindings().UpdateWithRetry(ctx, namespace, name, func(b *v1alpha1.ServiceBinding) error {
		// checks: the binding is still the one its user saw.
		for _, check := range checks {
			if err := check(b); err != nil {
				return err
			}
		}
		if err := CheckBindingChangeable(b); err != nil {
			return err
		}
		if b.Status.Bound == nil || b.Status.Bound.BindingID != b.CurrentExternalID() {
			return fmt.Errorf("binding %q is not bound yet, so there is nothing to rotate: run \"kubectl catalog describe binding %s\"", name, name)
		}
		if tpl != nil {
			b.Spec.SecretTemplate = tpl.DeepCopy()
		}
		b.Status.Predecessor = &v1alpha1.BindingReference{Name: b.Name, ExternalID: b.CurrentExternalID(), PlanID: b.Status.Bound.PlanID}
		b.Status.ExternalID = e.recordBoundID(b.UID)
		return nil
	})
}

// AbandonBinding drops a binding's record without calling the broker: whatever the
// broker holds stays there. Its Secret and its projections into workloads are removed
// (best effort: the Secret is owned by the record and goes with it anyway).
func (e *Engine) AbandonBinding(ctx context.Context, b *v1alpha1.ServiceBinding) error {
	if e.cfg.Projector != nil {
		for _, p := range unionProjections(unionProjections(b.Status.Projected, b.Status.Projecting), b.Spec.Projections) {
			_ = e.cfg.Projector.Unproject(ctx, b.Namespace, b.Name, p)
		}
	}
	if err := e.cfg.Store.DeleteBindingSecret(ctx, b); err != nil {
		return err
	}
	if err := e.cfg.Store.Bindings().Delete(ctx, b.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
		return err
	}
	if _, err := e.cfg.Store.Bindings().RemoveFinalizer(ctx, b); err != nil && !store.IsNotFound(err) {
		return err
	}
	return nil
}

func unionProjections(a, b []v1alpha1.WorkloadProjection) []v1alpha1.WorkloadProjection {
	out := append([]v1alpha1.WorkloadProjection(nil), a...)
	for _, p := range b {
		if !containsProjection(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func containsProjection(ps []v1alpha1.WorkloadProjection, p v1alpha1.WorkloadProjection) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// rawJSON is v as a raw JSON extension; nil when it cannot be encoded.
func rawJSON(v any) *runtime.RawExtension {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return &runtime.RawExtension{Raw: raw}
}
