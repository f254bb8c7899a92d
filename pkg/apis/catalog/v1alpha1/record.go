package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
)

// HasPendingWork reports whether the broker's catalog is to be fetched: its spec changed
// since the last fetch (a new registration, "sync broker") or a failed fetch is to be
// retried. A periodic relist that is merely due is not pending work: reconcile looks at
// brokers' NextRelistAt itself, brokers being few.
func (in *Broker) HasPendingWork() bool {
	return in.DeletionTimestamp != nil || in.Generation != in.Status.ObservedGeneration ||
		in.Status.Retry != nil
}

// HasPendingWork is always false: classes are written by catalog sync, which is the
// broker's work.
func (in *ServiceClass) HasPendingWork() bool { return false }

// HasPendingWork is always false: schemas are written by catalog sync, which is the
// broker's work.
func (in *ServicePlanSchemas) HasPendingWork() bool { return false }

// HasPendingWork reports whether the instance is not settled: deletion requested, a spec
// the engine has not acted on yet, a broker call in flight, a retry scheduled, or orphan
// mitigation to do, bindings of a withdrawn grant to revoke (RevokePending), bindings
// to rotate after an update (status.rebind), or a release's mark to finish
// (AnnotationReleasedTo). A terminal failure (retry cleared, generation observed) is
// settled until the spec changes.
func (in *ServiceInstance) HasPendingWork() bool {
	return in.DeletionTimestamp != nil || in.Generation != in.Status.ObservedGeneration ||
		in.Status.InFlight != nil || in.Status.Retry != nil || in.Status.OrphanMitigation != nil ||
		in.RevokePending() || in.Status.Rebind != nil || Released(in)
}

// AnnotationReleasedTo, on an instance or binding, is the id of the cluster "kubectl
// catalog release" released it to: the record is to be dropped without a broker call,
// which is pending work until it is gone (a release interrupted after its mark is
// finished by reconcile).
const AnnotationReleasedTo = GroupName + "/released-to"

// Released reports a record marked released to another cluster (AnnotationReleasedTo).
func Released(x interface{ GetAnnotations() map[string]string }) bool {
	return x.GetAnnotations()[AnnotationReleasedTo] != ""
}

// RevokePending reports whether the instance's spec no longer lets a namespace it was
// shared with bind (an unshare, a narrower allowedNamespaces) and no driver that could
// look at every such namespace has revoked that spec generation's withdrawn grants yet.
func (in *ServiceInstance) RevokePending() bool {
	if in.Status.RevokedGeneration == in.Generation {
		return false
	}
	for _, ns := range in.Status.SharedBefore {
		if !slices.Contains(in.Spec.SharedWith, ns) || len(in.Spec.AllowedNamespaces) > 0 && !slices.Contains(in.Spec.AllowedNamespaces, ns) {
			return true
		}
	}
	return false
}

// HasPendingWork reports whether the binding is not settled, on the same rules as
// ServiceInstance.HasPendingWork; a projection into a workload not made (or not
// recorded) yet is pending work too.
func (in *ServiceBinding) HasPendingWork() bool {
	return in.DeletionTimestamp != nil || in.Generation != in.Status.ObservedGeneration ||
		in.Status.InFlight != nil || in.Status.Retry != nil || in.Status.OrphanMitigation != nil ||
		len(in.Status.Retired) > 0 || !SameProjections(in.Spec.Projections, in.Status.Projected) ||
		(in.Status.Bound != nil && in.Status.Bound.BindingID != in.CurrentExternalID()) ||
		len(in.Status.Projecting) > 0 || Released(in)
}

// IsUserProvided reports whether the instance is a user-provided service instance, which
// no broker holds.
func (in *ServiceInstance) IsUserProvided() bool { return in.Spec.UserProvided != nil }

// CurrentExternalID is the OSB instance id the instance's current attempt uses at the
// broker: status.externalID, else spec.externalID.
func (in *ServiceInstance) CurrentExternalID() string {
	if in.Status.ExternalID != "" {
		return in.Status.ExternalID
	}
	return in.Spec.ExternalID
}

// CurrentExternalID is the OSB binding id the binding's current attempt uses at the
// broker: status.externalID, else spec.externalID.
func (in *ServiceBinding) CurrentExternalID() string {
	if in.Status.ExternalID != "" {
		return in.Status.ExternalID
	}
	return in.Spec.ExternalID
}

// RotatedFrom is the binding id the last rotation replaced, or nil.
func (in *ServiceBinding) RotatedFrom() *BindingReference {
	if in.Status.Predecessor != nil {
		return in.Status.Predecessor
	}
	return in.Spec.Predecessor
}

// SameProjections reports whether a and b name the same projections, in any order.
func SameProjections(a, b []WorkloadProjection) bool {
	if len(a) != len(b) {
		return false
	}
	for _, p := range a {
		found := false
		for _, q := range b {
			if p == q {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// OpStatus is the engine's part of the instance's status.
func (in *ServiceInstance) OpStatus() *OperationStatus { return &in.Status.OperationStatus }

// OpStatus is the engine's part of the binding's status.
func (in *ServiceBinding) OpStatus() *OperationStatus { return &in.Status.OperationStatus }

// ClassRecordName is the name of the ServiceClass (and ServicePlanSchemas) record of the
// OSB service classID offered by brokerName: "<broker>.<id>" when the id is a DNS label
// (lowercase GUIDs are), else "<broker>.sha256-<first 24 hex digits of its SHA-256>". The
// same id always gives the same name, and different ids give different names.
func ClassRecordName(brokerName, classID string) string {
	if len(validation.IsDNS1123Label(classID)) == 0 {
		return brokerName + "." + classID
	}
	sum := sha256.Sum256([]byte(classID))
	return brokerName + ".sha256-" + hex.EncodeToString(sum[:12])
}

// PlanByID returns the plan with OSB id id, or nil.
func (in *ServiceClass) PlanByID(id string) *ServicePlan {
	for i := range in.Spec.Plans {
		if in.Spec.Plans[i].ID == id {
			return &in.Spec.Plans[i]
		}
	}
	return nil
}

// PlanByName returns the plan with OSB name externalName, or nil.
func (in *ServiceClass) PlanByName(externalName string) *ServicePlan {
	for i := range in.Spec.Plans {
		if in.Spec.Plans[i].ExternalName == externalName {
			return &in.Spec.Plans[i]
		}
	}
	return nil
}

// PlanRemoved reports whether the broker no longer offers the plan with OSB id id (or the
// whole class).
func (in *ServiceClass) PlanRemoved(id string) bool {
	if in.Status.RemovedFromBroker {
		return true
	}
	for _, p := range in.Status.Plans {
		if p.ID == id {
			return p.RemovedFromBroker
		}
	}
	return false
}

// EffectiveBindable is the plan's bindable, else the service's.
func (in *ServiceClass) EffectiveBindable(p *ServicePlan) bool {
	if p.Bindable != nil {
		return *p.Bindable
	}
	return in.Spec.Bindable
}

// EffectivePlanUpdateable is the plan's plan_updateable, else the service's.
func (in *ServiceClass) EffectivePlanUpdateable(p *ServicePlan) bool {
	if p.PlanUpdateable != nil {
		return *p.PlanUpdateable
	}
	return in.Spec.PlanUpdateable
}

// ForPlan returns the schemas of the plan with OSB id planID, or nil.
func (in *ServicePlanSchemas) ForPlan(planID string) *PlanSchemas {
	for i := range in.Spec.Plans {
		if in.Spec.Plans[i].PlanID == planID {
			return &in.Spec.Plans[i]
		}
	}
	return nil
}

// InstanceRef is the namespace and name of the binding's instance.
func (in *ServiceBinding) InstanceRef() (namespace, name string) {
	if in.Spec.InstanceNamespace != "" {
		return in.Spec.InstanceNamespace, in.Spec.InstanceName
	}
	return in.Namespace, in.Spec.InstanceName
}

// CrossNamespace reports whether the binding's instance is in another namespace.
func (in *ServiceBinding) CrossNamespace() bool {
	return in.Spec.InstanceNamespace != "" && in.Spec.InstanceNamespace != in.Namespace
}
