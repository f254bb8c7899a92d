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
	headers := []string{"NAME", "CLASS", "PLAN", "STATUS", "AGE"}
	if withNS {
		headers = append([]string{"NAMESPACE"}, headers...)
	}
	if wide {
		headers = append(headers, "BROKER", "EXTERNAL-ID")
	}
	t := NewTable(w, headers...)
	for _, i := range items {
		class := i.Spec.ClassExternalName
		if i.IsUserProvided() {
			class = "(user-provided)"
		}
		row := []string{i.Name, class, i.Spec.PlanExternalName, InstanceStatus(&i), duration.HumanDuration(now.Sub(i.CreationTimestamp.Time))}
		if withNS {
			row = append([]string{i.Namespace}, row...)
		}
		if wide {
			row = append(row, i.Spec.BrokerName, i.CurrentExternalID())
		}
		t.Append(row...)
	}
	return t.Render()
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
