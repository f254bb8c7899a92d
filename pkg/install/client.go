package install

import (
	"context"
	"fmt"

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

// typed adapts a typed client's methods to client.
func typed[T interface {
	runtime.Object
	metav1.Object
}](
	get func(context.Context, string, metav1.GetOptions) (T, error),
	patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error),
	del func(context.Context, string, metav1.DeleteOptions) error,
) client {
	return client{
		get: func(ctx context.Context, name string) (metav1.Object, error) {
			obj, err := get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return obj, nil
		},
		apply: func(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error) {
			return patch(ctx, name, types.ApplyPatchType, data, opts)
		},
		delete: del,
	}
}

func resourceClient(core kubernetes.Interface, obj runtime.Object) client {
	m, _ := meta.Accessor(obj)
	ns := m.GetNamespace()
	switch obj.(type) {
	case *corev1.ServiceAccount:
		c := core.CoreV1().ServiceAccounts(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *rbacv1.ClusterRole:
		c := core.RbacV1().ClusterRoles()
		return typed(c.Get, c.Patch, c.Delete)
	case *rbacv1.ClusterRoleBinding:
		c := core.RbacV1().ClusterRoleBindings()
		return typed(c.Get, c.Patch, c.Delete)
	case *rbacv1.Role:
		c := core.RbacV1().Roles(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *rbacv1.RoleBinding:
		c := core.RbacV1().RoleBindings(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *batchv1.CronJob:
		c := core.BatchV1().CronJobs(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *appsv1.Deployment:
		c := core.AppsV1().Deployments(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *networkingv1.NetworkPolicy:
		c := core.NetworkingV1().NetworkPolicies(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *policyv1.PodDisruptionBudget:
		c := core.PolicyV1().PodDisruptionBudgets(ns)
		return typed(c.Get, c.Patch, c.Delete)
	case *admissionv1.ValidatingAdmissionPolicy:
		c := core.AdmissionregistrationV1().ValidatingAdmissionPolicies()
		return typed(c.Get, c.Patch, c.Delete)
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		c := core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
		return typed(c.Get, c.Patch, c.Delete)
	case *corev1.ConfigMap:
		c := core.CoreV1().ConfigMaps(ns)
		return typed(c.Get, c.Patch, c.Delete)
	}
	panic(fmt.Sprintf("install: no client for %T", obj))
}
