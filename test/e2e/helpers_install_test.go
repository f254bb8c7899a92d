package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
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

// installReconcileWithoutTrustPolicy installs reconcile in catNS (its catalog namespace
// too) with no trust policy, and returns a kubeconfig holding a token of its
// ServiceAccount once the ServiceAccount may do what canI asks (kubectl auth can-i's
// arguments).
func installReconcileWithoutTrustPolicy(t *testing.T, admin kubernetes.Interface, catNS string, canI ...string) string {
	t.Helper()
	installCleanup(t, admin, catNS)
	r := kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "install", "--image", "example.invalid/kubectl-catalog:test",
		"--namespace", catNS, "--catalog-namespace", catNS, "--no-trust-policy")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	tok, err := admin.CoreV1().ServiceAccounts(catNS).CreateToken(context.Background(), install.DefaultName, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	kubeconfig := writeTokenKubeconfig(t, tok.Status.Token)
	instWaitFor(t, "the ClusterRoleBinding to take effect", 30*time.Second, func() bool {
		return saKubectl(t, kubeconfig, append([]string{"auth", "can-i"}, canI...)...) == "yes"
	})
	return kubeconfig
}

// waitForGarbageCollector waits until the controller-manager's garbage collector
// collects the dependent of a ConfigMap deleted in namespace ns: one started with the
// control plane acts only once its monitors synced.
func waitForGarbageCollector(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	cms := admin.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-probe-owner-"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	dep, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-probe-",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	assert.NilError(t, cms.Delete(ctx, owner.Name, metav1.DeleteOptions{}))
	start := time.Now()
	instWaitFor(t, "the garbage collector to collect a dependent", 180*time.Second, func() bool {
		_, err := cms.Get(ctx, dep.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	t.Logf("the garbage collector collected a dependent after %s", time.Since(start).Round(time.Millisecond))
}
