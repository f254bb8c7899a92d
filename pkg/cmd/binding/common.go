// Package binding holds what the binding commands (bind, unbind, get bindings, describe
// binding) share: driving a binding with progress, its status as a table shows it, and
// completion of binding names.
package binding

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/instance"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// Drive runs the engine on one binding, as instance.Drive does on an instance: until it
// settles (or is gone) with --wait, else for as long as there is work to do at once. It
// shows progress, releases its claim when it stops, and turns a timeout or an
// interruption into an error saying how to resume.
func Drive(ctx context.Context, streams cmdutil.IOStreams, eng *catalog.Engine, namespace, name, verb string, w instance.WaitFlags) (catalog.Result, error) {
	return instance.DriveRecord(ctx, streams, instance.Driven{
		Kind:  "binding",
		Drive: eng.DriveBinding,
		Release: func(ctx context.Context, r catalog.Result) {
			if r.Binding != nil {
				_ = eng.ReleaseBinding(ctx, r.Binding)
			}
		},
		Again: again(verb, name),
	}, namespace, name, verb, w)
}

// again is how to wait for the binding again: an unbind can be repeated, a bind cannot
// (the name is taken), so it is left to reconcile.
func again(verb, name string) string {
	if verb == "unbind" {
		return fmt.Sprintf(`, or wait again with "kubectl catalog unbind %s --wait"`, name)
	}
	return ""
}

// Status is the STATUS column of a binding: its phase (Unbinding once it is marked for
// deletion), the Ready condition's reason when it is not ready, and "rotation due" once
// the broker's renew_before has passed.
func Status(b *v1alpha1.ServiceBinding, now time.Time) string {
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
	if catalog.RotationDue(b, now) && b.DeletionTimestamp == nil {
		phase += ", rotation due"
	}
	return phase
}

// SecretName is the Secret a binding's credentials are (or are to be) in.
func SecretName(b *v1alpha1.ServiceBinding) string {
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
