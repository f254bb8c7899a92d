package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// An LDAP group's name holds commas. carol gets her rights in team-a only through such a
// group (the documented user role, bound to the group), provisions with parameters from
// a Secret there, and reconcile, as its ServiceAccount, reads that Secret on her
// authority: the SubjectAccessReview must name her group as it is, not the three groups
// its name would split into (none of which has any right). The trust policy admits the
// record only with her groups as the API server sees them.
func TestAuthorGroups_AGroupHoldingCommas_IsTheAuthorsGroupForReconcile(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	const group = "cn=db-admins,ou=groups,dc=example"
	const carol = "carol"
	const value = "carol-param-6e1f07"
	for ns, role := range map[string]string{e.teamA: "kubectl-catalog-user", e.catalogNS: "kubectl-catalog-viewer"} {
		_, err := e.admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "db-admins-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
		}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	_, err := e.admin.CoreV1().Secrets(e.teamA).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "carol-params"},
		StringData: map[string]string{"params": `{"label":"` + value + `"}`}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	asCarol := func(args ...string) result {
		t.Helper()
		return kubectl(t, controlplane.AdminUser, append([]string{"catalog", "--as", carol, "--as-group", group,
			"-n", e.teamA, "--catalog-namespace", e.catalogNS}, args...)...)
	}
	instWaitFor(t, "carol's group role to take effect", 30*time.Second, func() bool {
		r := kubectl(t, controlplane.AdminUser, "auth", "can-i", "get", "secret/carol-params", "-n", e.teamA, "--as", carol, "--as-group", group)
		return r.ExitCode == 0
	})

	r := asCarol("provision", "files", "--class", "object-storage", "--plan", "bucket", "--params-from-secret", "carol-params/params")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	inst, err := e.st.Instances().Get(ctx, e.teamA, "files")
	assert.NilError(t, err)
	au := store.AuthorOf(inst)
	assert.Equal(t, au.Username, carol)
	assert.Equal(t, au.Token, e.token)
	assert.DeepEqual(t, au.Groups, []string{group, "system:authenticated"})

	sum := trustReconcile(t, e, e.teamA)
	it, ok := recItem(sum, e.teamA, "files")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
	inst, err = e.st.Instances().Get(ctx, e.teamA, "files")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.DeepEqual(t, provisionParameters(t, e.b, inst.Spec.ExternalID), map[string]any{"label": value})

	// The policy admits her groups only as they are: the groups her group's name splits
	// into are refused.
	cm, err := e.admin.CoreV1().ConfigMaps(e.teamA).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, "files"), metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Annotations[store.AnnotationAuthorGroups] = group + ",system:authenticated"
	cfg := cp.RESTConfig(controlplane.AdminUser)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: carol, Groups: []string{group}}
	carolClient, err := kubernetes.NewForConfig(cfg)
	assert.NilError(t, err)
	_, err = carolClient.CoreV1().ConfigMaps(e.teamA).Update(ctx, cm, metav1.UpdateOptions{})
	assert.ErrorContains(t, err, store.TrustPolicyName)
}
