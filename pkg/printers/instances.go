package printers

import (
	"io"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
)

// InstanceTable prints instances as "get instances" does, with a NAMESPACE column when withNS.
func InstanceTable(w io.Writer, items []v1alpha1.ServiceInstance, withNS, wide bool, now time.Time) error {
	return recordTable(w, items, withNS, wide,
		[]string{"NAME", "CLASS", "PLAN", "STATUS", "AGE"}, []string{"BROKER", "EXTERNAL-ID"},
		func(i *v1alpha1.ServiceInstance) (string, []string) {
			class := i.Spec.ClassExternalName
			if i.IsUserProvided() {
				class = "(user-provided)"
			}
			return i.Namespace, []string{i.Name, class, i.Spec.PlanExternalName, InstanceStatus(i), duration.HumanDuration(now.Sub(i.CreationTimestamp.Time))}
		},
		func(i *v1alpha1.ServiceInstance) []string { return []string{i.Spec.BrokerName, i.CurrentExternalID()} })
}

// InstanceStatus is the STATUS column: the phase, or Deleting, with the reason when not Ready.
func InstanceStatus(i *v1alpha1.ServiceInstance) string {
	phase := string(i.Status.Phase)
	if phase == "" {
		phase = string(v1alpha1.PhasePending)
	}
	if i.DeletionTimestamp != nil && i.Status.Phase != v1alpha1.PhaseDeprovisioning {
		phase = "Deleting"
	}
	if c := meta.FindStatusCondition(i.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != "True" {
		return phase + " (" + c.Reason + ")"
	}
	if c := meta.FindStatusCondition(i.Status.Conditions, v1alpha1.ConditionUpdateFailed); c != nil && c.Status == "True" {
		// Ready at its previous plan and parameters: the last update was refused.
		return phase + " (" + c.Reason + ")"
	}
	return phase
}
