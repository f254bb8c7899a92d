package e2e

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
)

// installCleanup deletes, when t ends, what "reconcile install" of the installation
// ns/catalog-reconcile leaves behind once its namespace is gone: the ClusterRoleBinding
// and the ClusterRole, which are cluster-wide. It returns their name.
func installCleanup(t *testing.T, admin kubernetes.Interface, ns string) string {
	cluster := install.ClusterName(ns, install.DefaultName)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, cluster, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, cluster, metav1.DeleteOptions{})
	})
	return cluster
}
