package printers

import (
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// BindingTable prints bindings as "get bindings" does; withNamespace adds a NAMESPACE column and
// wide the OSB binding id and the credentials' expiry.
func BindingTable(w io.Writer, items []v1alpha1.ServiceBinding, withNamespace, wide bool, now time.Time) error {
	r := BindingRows(w, withNamespace, wide, now)
	r.Add(items...)
	return r.Render()
}

// BindingRows is BindingTable filled a page of bindings at a time.
func BindingRows(w io.Writer, withNamespace, wide bool, now time.Time) *Rows[v1alpha1.ServiceBinding] {
	return newRows(w, withNamespace, wide,
		[]string{"NAME", "INSTANCE", "SECRET", "STATUS", "AGE"}, []string{"BINDING-ID", "EXPIRES"},
		func(b *v1alpha1.ServiceBinding) (string, []string) {
			return b.Namespace, []string{b.Name, BindingInstance(b), BindingSecretName(b), BindingStatus(b, now), duration.HumanDuration(now.Sub(b.CreationTimestamp.Time))}
		},
		func(b *v1alpha1.ServiceBinding) []string {
			expires := "<none>"
			if bs := b.Status.Bound; bs != nil && bs.ExpiresAt != nil {
				expires = bs.ExpiresAt.UTC().Format(time.RFC3339)
			}
			return []string{b.CurrentExternalID(), expires}
		})
}

// BindingStatus is the STATUS column of a binding: its phase (Unbinding once it is marked for
// deletion), the Ready condition's reason when it is not ready, and "rotation due" once
// the broker's renew_before has passed; "Refused (…)" while the engine refuses to act on
// it (RefusedStatus).
func BindingStatus(b *v1alpha1.ServiceBinding, now time.Time) string {
	if s, ok := RefusedStatus(b.Status.Conditions, b.DeletionTimestamp != nil); ok {
		return s
	}
	phase := string(b.Status.Phase)
	if phase == "" {
		phase = string(v1alpha1.PhasePending)
	}
	if b.DeletionTimestamp != nil && b.Status.Phase != v1alpha1.PhaseUnbinding {
		phase = string(v1alpha1.PhaseUnbinding)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != "True" && c.Reason != "" {
		phase += " (" + c.Reason + ")"
	}
	if records.RotationDue(b, now) && b.DeletionTimestamp == nil {
		phase += ", rotation due"
	}
	return phase
}

// BindingInstance names a binding's instance as the binding's namespace sees it: its
// name, prefixed by its namespace when that is another ("team-a/db").
func BindingInstance(b *v1alpha1.ServiceBinding) string {
	if b.CrossNamespace() {
		return b.Spec.InstanceNamespace + "/" + b.Spec.InstanceName
	}
	return b.Spec.InstanceName
}

// BindingSecretName is the Secret a binding's credentials are (or are to be) in.
func BindingSecretName(b *v1alpha1.ServiceBinding) string {
	if b.Status.Secret != nil && b.Status.Secret.Name != "" {
		return b.Status.Secret.Name
	}
	return b.Spec.SecretName
}

// WorkloadName is a projection as kubectl names the workload: "deployment/web".
func WorkloadName(p v1alpha1.WorkloadProjection) string {
	return strings.ToLower(p.Kind) + "/" + p.Name
}

// ProjectionSummary says where a projection puts the credentials:
// "deployment/web (files under $SERVICE_BINDING_ROOT/db)".
func ProjectionSummary(p v1alpha1.WorkloadProjection, binding string) string {
	return WorkloadName(p) + " (" + ProjectedAs(p, binding) + ")"
}

// ProjectedAs says how a projection exposes the credentials.
func ProjectedAs(p v1alpha1.WorkloadProjection, binding string) string {
	switch {
	case p.Env && p.EnvPrefix != "":
		return "environment variables prefixed " + p.EnvPrefix
	case p.Env:
		return "environment variables"
	}
	return "files under $SERVICE_BINDING_ROOT/" + binding
}
