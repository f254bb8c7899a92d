package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

func TestVersion_ThroughKubectlPluginDiscovery_ReportsTheRealServer(t *testing.T) {
	t.Parallel()
	list := viaKubectl(t, controlplane.AdminUser, "plugin", "list")
	assert.Equal(t, list.ExitCode, 0)
	assert.Assert(t, is.Contains(list.Stdout, binDir+"/kubectl-catalog"))

	res := viaKubectl(t, controlplane.AdminUser, "catalog", "version", "-o", "json")
	assert.Equal(t, res.ExitCode, 0, res.Stderr)
	var out struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
		ServerVersion struct{ GitVersion string } `json:"serverVersion"`
	}
	assert.NilError(t, json.Unmarshal([]byte(res.Stdout), &out))
	assert.Assert(t, out.ClientVersion.GitVersion != "")
	assert.Equal(t, out.ServerVersion.GitVersion, controlplane.KubernetesVersion)

	plain := viaKubectl(t, controlplane.AdminUser, "catalog", "version")
	assert.Equal(t, plain.ExitCode, 0)
	assert.Assert(t, is.Contains(plain.Stdout, "Server Version: "+controlplane.KubernetesVersion))
}

func TestVersion_ClientOnly_NeedsNoCluster(t *testing.T) {
	t.Parallel()
	res := runCommand(t, binDir+"/kubectl-catalog", controlplane.AdminUser,
		"version", "--client", "--server", "https://127.0.0.1:1")
	assert.Equal(t, res.ExitCode, 0, res.Stderr)
	assert.Assert(t, is.Contains(res.Stdout, "Client Version: "))
	assert.Assert(t, !strings.Contains(res.Stdout, "Server Version"))
}

func TestVersion_UnreachableServer_PrintsClientVersionAndFails(t *testing.T) {
	t.Parallel()
	res := runCommand(t, binDir+"/kubectl-catalog", controlplane.AdminUser,
		"version", "--server", "https://127.0.0.1:1", "--request-timeout", "5s")
	assert.Equal(t, res.ExitCode, 1)
	assert.Assert(t, is.Contains(res.Stdout, "Client Version: "))
	// The error names the server and the context, and points at doctor.
	assert.Assert(t, is.Contains(res.Stderr, `cannot reach the cluster at https://127.0.0.1:1 (context "`))
	assert.Assert(t, is.Contains(res.Stderr, "connection refused"))
	assert.Assert(t, is.Contains(res.Stderr, `run "kubectl catalog doctor"`))
}

func TestUsageErrors_ExitWithCode2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"version", "--no-such-flag"},
		{"version", "-o", "xml"},
		{"completion"},
		{"completion", "tcsh"},
	} {
		res := viaKubectl(t, controlplane.AdminUser, append([]string{"catalog"}, args...)...)
		assert.Equal(t, res.ExitCode, 2, "kubectl catalog %v", args)
		assert.Assert(t, is.Contains(res.Stderr, "error:"))
	}
}

func TestRBAC_UserWithoutRoleIsRefused(t *testing.T) {
	t.Parallel()
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	dev, err := cp.Client(controlplane.DeveloperUser)
	assert.NilError(t, err)
	_, err = dev.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	assert.Assert(t, apierrors.IsForbidden(err), "expected Forbidden, got %v", err)

	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "developer-reads"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-configmaps"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controlplane.DeveloperUser}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	// The authorizer sees new bindings through an informer: wait for it.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, slow(30*time.Second), true, func(ctx context.Context) (bool, error) {
		_, err := dev.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	assert.NilError(t, err, "the role grants list")
	_, err = dev.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	assert.Assert(t, apierrors.IsForbidden(err), "the role does not grant secrets, got %v", err)
}

func TestGarbageCollection_DeletesSecretOwnedByDeletedConfigMap(t *testing.T) {
	t.Parallel()
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	owner, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "owner"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}}},
		StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	assert.NilError(t, admin.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, slow(60*time.Second), true, func(ctx context.Context) (bool, error) {
		_, err := admin.CoreV1().Secrets(ns).Get(ctx, "owned", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	assert.NilError(t, err, "the garbage collector should delete the owned Secret")
}

func TestNamespaceDeletion_Finishes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	ns := cp.NewNamespace(t)
	_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	assert.NilError(t, admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, slow(90*time.Second), true, func(ctx context.Context) (bool, error) {
		_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	assert.NilError(t, err, "the namespace controller should finish deleting the namespace")
}
