package install

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Actions reported for an object, as kubectl words them.
const (
	Created    = "created"
	Configured = "configured"
	Unchanged  = "unchanged"
	Deleted    = "deleted"
	// Pruned is a workload of the installation that it no longer has (fewer
	// shards, a CronJob replaced by a Deployment, one replica where there
	// were several), deleted by the install.
	Pruned   = "pruned"
	NotFound = "not found, skipped"
	// Renewed is the token ConfigMap deleted and created with a new token.
	Renewed = "created anew (new token)"
)

// Result is what happened to one object.
type Result struct {
	// Resource is the object's resource as kubectl names it in its output,
	// such as "serviceaccount" or "cronjob.batch".
	Resource string
	Name     string
	// Action is Created, Configured, Unchanged, Deleted or NotFound.
	Action string
	// Object is the object as the API server returned it (nil after a
	// delete).
	Object runtime.Object
	// Replaced is, for the token ConfigMap created anew (Renewed), the token it
	// replaced: the records stamped with it lose their verified author.
	Replaced string
}

// String is the kubectl-style line: "serviceaccount/catalog-reconcile created".
func (r Result) String() string { return r.Resource + "/" + r.Name + " " + r.Action }

// Ref is the object's "resource/name" as kubectl prints it, such as
// "cronjob.batch/catalog-reconcile".
func Ref(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return resourceOf(obj)
	}
	return resourceOf(obj) + "/" + m.GetName()
}

// resourceOf is the resource name kubectl prints for an object.
func resourceOf(obj runtime.Object) string {
	switch obj.(type) {
	case *corev1.Namespace:
		return "namespace"
	case *corev1.ServiceAccount:
		return "serviceaccount"
	case *rbacv1.ClusterRole:
		return "clusterrole.rbac.authorization.k8s.io"
	case *rbacv1.ClusterRoleBinding:
		return "clusterrolebinding.rbac.authorization.k8s.io"
	case *rbacv1.Role:
		return "role.rbac.authorization.k8s.io"
	case *rbacv1.RoleBinding:
		return "rolebinding.rbac.authorization.k8s.io"
	case *batchv1.CronJob:
		return "cronjob.batch"
	case *appsv1.Deployment:
		return "deployment.apps"
	case *policyv1.PodDisruptionBudget:
		return "poddisruptionbudget.policy"
	case *networkingv1.NetworkPolicy:
		return "networkpolicy.networking.k8s.io"
	case *admissionv1.ValidatingAdmissionPolicy:
		return "validatingadmissionpolicy.admissionregistration.k8s.io"
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		return "validatingadmissionpolicybinding.admissionregistration.k8s.io"
	case *corev1.ConfigMap:
		return "configmap"
	}
	return strings.ToLower(fmt.Sprintf("%T", obj))
}
