package printers

import (
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// InstanceTable prints instances as "get instances" does, with a NAMESPACE column when withNS.
func InstanceTable(w io.Writer, items []v1alpha1.ServiceInstance, withNS, wide bool, now time.Time) error {
	r := InstanceRows(w, withNS, wide, now)
	r.Add(items...)
	return r.Render()
}

// InstanceRows is InstanceTable filled a page of instances at a time.
func InstanceRows(w io.Writer, withNS, wide bool, now time.Time) *Rows[v1alpha1.ServiceInstance] {
	return newRows(w, withNS, wide,
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

// InstanceStatus is the STATUS column: the phase, or Deleting, with the reason when not
// Ready; "Refused (…)" while the engine refuses to act on the instance.
func InstanceStatus(i *v1alpha1.ServiceInstance) string {
	if s, ok := RefusedStatus(i.Status.Conditions, i.DeletionTimestamp != nil); ok {
		return s
	}
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

// RefusedStatus is the STATUS of a record the engine refuses to act on (its Refused
// condition is True): "Refused (NotAuthorized)", with the condition's reason less its
// "Refused" prefix, and "Deleting, refused (…)" for one being deleted. The phase is
// not shown: it says Failed, while the operation the refusal holds back may still be
// under way at the broker. ok is false for a record not refused.
func RefusedStatus(conditions []metav1.Condition, deleting bool) (status string, ok bool) {
	c := meta.FindStatusCondition(conditions, v1alpha1.ConditionRefused)
	if c == nil || c.Status != metav1.ConditionTrue {
		return "", false
	}
	why := strings.TrimPrefix(c.Reason, v1alpha1.ConditionRefused)
	if why == "" {
		why = c.Reason
	}
	if deleting {
		return "Deleting, refused (" + why + ")", true
	}
	return "Refused (" + why + ")", true
}
