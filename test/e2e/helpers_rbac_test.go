package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// configMapRules are the rules of a Role that lets its subjects use verbs on the
// ConfigMaps of its namespace.
func configMapRules(verbs ...string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}
}

// grantRole creates Role name with rules in ns, binds it to users (a RoleBinding of
// the same name), and returns once ready reports that the authorizer applies it: the
// authorizer learns of new bindings through an informer, a moment later.
func grantRole(t *testing.T, admin kubernetes.Interface, ns, name string, rules []rbacv1.PolicyRule, ready func() bool, users ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      rules,
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	subjects := make([]rbacv1.Subject, 0, len(users))
	for _, u := range users {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	instWaitFor(t, "role "+ns+"/"+name+" to take effect", 30*time.Second, ready)
}

// listsConfigMaps reports whether c may list the ConfigMaps of ns.
func listsConfigMaps(c kubernetes.Interface, ns string) func() bool {
	return func() bool {
		_, err := c.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{Limit: 1})
		return err == nil
	}
}
