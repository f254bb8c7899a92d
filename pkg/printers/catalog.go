package printers

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// BrokerStatus is a one-word summary of a broker's state.
func BrokerStatus(b *v1alpha1.Broker) string {
	switch {
	case b.DeletionTimestamp != nil:
		return "Deleting"
	case meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionFailed):
		return "Failed"
	case b.HasPendingWork():
		return "Pending"
	case meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionReady):
		return "Ready"
	}
	return "Unknown"
}

// BrokerTable prints brokers as a table.
func BrokerTable(w io.Writer, items []v1alpha1.Broker, withNamespace, wide bool, now time.Time) error {
	return recordTable(w, items, withNamespace, wide,
		[]string{"NAME", "SCOPE", "URL", "STATUS", "CLASSES", "PLANS", "AGE"}, []string{"LAST-FETCH", "AUTH"},
		func(b *v1alpha1.Broker) (string, []string) {
			return b.Namespace, []string{b.Name, strings.ToLower(string(b.Spec.Scope)), b.Spec.URL, BrokerStatus(b),
				fmt.Sprint(b.Status.ClassCount), fmt.Sprint(b.Status.PlanCount), Age(b.CreationTimestamp.Time, now)}
		},
		func(b *v1alpha1.Broker) []string {
			last := "<never>"
			if b.Status.LastCatalogFetch != nil {
				last = Age(b.Status.LastCatalogFetch.Time, now) + " ago"
			}
			auth := "<none>"
			if b.Spec.Auth != nil {
				auth = string(b.Spec.Auth.Type) + " (secret " + b.Spec.Auth.SecretRef.Name + ")"
			}
			return []string{last, auth}
		})
}

// ClassStatus is "Active" or "Removed".
func ClassStatus(c *v1alpha1.ServiceClass) string {
	if c.Status.RemovedFromBroker {
		return "Removed"
	}
	return "Active"
}

// ClassTable prints classes as a table.
func ClassTable(w io.Writer, items []v1alpha1.ServiceClass, withNamespace, wide bool, now time.Time) error {
	return recordTable(w, items, withNamespace, wide,
		[]string{"NAME", "BROKER", "SCOPE", "PLANS", "STATUS", "AGE", "DESCRIPTION"}, []string{"ID", "RECORD"},
		func(c *v1alpha1.ServiceClass) (string, []string) {
			return c.Namespace, []string{c.Spec.ExternalName, c.Spec.BrokerName, strings.ToLower(string(c.Spec.Scope)),
				fmt.Sprint(len(c.Spec.Plans)), ClassStatus(c), Age(c.CreationTimestamp.Time, now), Truncate(c.Spec.Description, 60)}
		},
		func(c *v1alpha1.ServiceClass) []string { return []string{c.Spec.ID, c.Name} })
}

// Truncate shortens s to n runes, on one line.
func Truncate(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// PlanRow is one plan of a class, for tables.
type PlanRow struct {
	Class *v1alpha1.ServiceClass
	Plan  *v1alpha1.ServicePlan
}

// Record is the row's class record holding only the row's plan, as get plans -o json
// prints it.
func (r PlanRow) Record() *v1alpha1.ServiceClass {
	c := r.Class.DeepCopy()
	c.Spec.Plans = []v1alpha1.ServicePlan{*r.Plan.DeepCopy()}
	return c
}

// FreeOrPaid says "free" or "paid".
func FreeOrPaid(p *v1alpha1.ServicePlan) string {
	if p.Free {
		return "free"
	}
	return "paid"
}

// YesNo formats a boolean for tables.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// PlanTable prints plans as a table.
func PlanTable(w io.Writer, rows []PlanRow, withNamespace, wide bool) error {
	return recordTable(w, rows, withNamespace, wide,
		[]string{"NAME", "CLASS", "BROKER", "FREE", "BINDABLE", "STATUS", "DESCRIPTION"}, []string{"ID", "MAINTENANCE"},
		func(r *PlanRow) (string, []string) {
			status := "Active"
			if r.Class.PlanRemoved(r.Plan.ID) {
				status = "Removed"
			}
			return r.Class.Namespace, []string{r.Plan.ExternalName, r.Class.Spec.ExternalName, r.Class.Spec.BrokerName, FreeOrPaid(r.Plan),
				YesNo(r.Class.EffectiveBindable(r.Plan)), status, Truncate(r.Plan.Description, 60)}
		},
		func(r *PlanRow) []string {
			mi := "<none>"
			if r.Plan.MaintenanceInfo != nil {
				mi = r.Plan.MaintenanceInfo.Version
			}
			return []string{r.Plan.ID, mi}
		})
}

// Age formats the time since t as kubectl does ("5m", "3d").
func Age(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
