package install

import (
	"context"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// client is what Apply and Uninstall need of one typed client.
type client struct {
	get    func(ctx context.Context, name string) (metav1.Object, error)
	apply  func(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// object is what a typed client reads and writes.
type object interface {
	runtime.Object
	metav1.Object
}

// typedClient is the part of a typed client of T that client needs.
type typedClient[T object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// of adapts a typed client to client.
func of[T object](c typedClient[T]) client {
	return client{
		get: func(ctx context.Context, name string) (metav1.Object, error) {
			obj, err := c.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return obj, nil
		},
		apply: func(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error) {
			return c.Patch(ctx, name, types.ApplyPatchType, data, opts)
		},
		delete: c.Delete,
	}
}

func resourceClient(core kubernetes.Interface, obj runtime.Object) client {
	m, _ := meta.Accessor(obj)
	ns := m.GetNamespace()
	switch obj.(type) {
	case *corev1.ServiceAccount:
		return of(core.CoreV1().ServiceAccounts(ns))
	case *rbacv1.ClusterRole:
		return of(core.RbacV1().ClusterRoles())
	case *rbacv1.ClusterRoleBinding:
		return of(core.RbacV1().ClusterRoleBindings())
	case *rbacv1.Role:
		return of(core.RbacV1().Roles(ns))
	case *rbacv1.RoleBinding:
		return of(core.RbacV1().RoleBindings(ns))
	case *batchv1.CronJob:
		return of(core.BatchV1().CronJobs(ns))
	case *appsv1.Deployment:
		return of(core.AppsV1().Deployments(ns))
	case *networkingv1.NetworkPolicy:
		return of(core.NetworkingV1().NetworkPolicies(ns))
	case *policyv1.PodDisruptionBudget:
		return of(core.PolicyV1().PodDisruptionBudgets(ns))
	case *admissionv1.ValidatingAdmissionPolicy:
		return of(core.AdmissionregistrationV1().ValidatingAdmissionPolicies())
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		return of(core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings())
	case *corev1.ConfigMap:
		return of(core.CoreV1().ConfigMaps(ns))
	}
	panic(fmt.Sprintf("install: no client for %T", obj))
}

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
