package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestTrustPolicy_APIServerRefusesRecordsNotWrittenByTheirAuthor installs the trust
// policy with "reconcile install" on the real API server and writes record ConfigMaps as
// two ordinary users: only a write stamped with the writer's own name and groups may
// create a record or change its spec or author; status, labels, other annotations and
// deletions stay free. doctor reports the policy; "reconcile uninstall
// --remove-trust-policy" removes it.
func TestTrustPolicy_APIServerRefusesRecordsNotWrittenByTheirAuthor(t *testing.T) {
	serial(t, clusterTrustPolicy)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	ns := cp.NewNamespace(t)
	installCleanup(t, admin, ns)
	t.Cleanup(func() {
		// The policy is cluster-wide: never leave it to the next test (this runs before
		// installCleanup's).
		_, _ = install.UninstallTrust(ctx, admin, ns)
	})
	withNS := func(args ...string) []string { return append(args, "--namespace", ns, "--catalog-namespace", ns) }

	st, err := trust.CheckPolicy(ctx, admin, ns)
	assert.NilError(t, err)
	assert.Assert(t, !st.InForce() && strings.Contains(st.Reason, "not installed"), "%+v", st)

	r := kubectl(t, controlplane.AdminUser, withNS("catalog", "reconcile", "install", "--image", "example.invalid/kubectl-catalog:test")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, line := range []string{
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + store.TrustPolicyName + " created",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/" + store.TrustPolicyName + " created",
		"configmap/" + store.TrustConfigMap + " created",
	} {
		assert.Assert(t, is.Contains(r.Stdout, line+"\n"))
	}
	tokenCM, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, len(tokenCM.Data[store.TrustTokenKey]), 36, "a uuid: %v", tokenCM.Data)
	assert.Equal(t, tokenCM.Labels[trust.LabelPartOf], trust.PartOf)
	assert.Equal(t, tokenCM.Labels[store.LabelManagedBy], "", "the policy must not apply to the token")
	st, err = trust.CheckPolicy(ctx, admin, ns)
	assert.NilError(t, err)
	assert.Equal(t, st.Token, tokenCM.Data[store.TrustTokenKey], "%+v", st)

	// The API server type-checks the policy's CEL against ConfigMaps: no warnings.
	instWaitFor(t, "the policy's type checking", 30*time.Second, func() bool {
		p, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, store.TrustPolicyName, metav1.GetOptions{})
		assert.NilError(t, err)
		if p.Status.TypeChecking == nil {
			return false
		}
		assert.Equal(t, len(p.Status.TypeChecking.ExpressionWarnings), 0, "%+v", p.Status.TypeChecking)
		return true
	})

	// Installed again: nothing changes, the token stays.
	r = kubectl(t, controlplane.AdminUser, withNS("catalog", "reconcile", "install", "--image", "example.invalid/kubectl-catalog:test")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "configmap/"+store.TrustConfigMap+" unchanged\n"))

	// alice and bob may write ConfigMaps in the namespace, nothing more.
	alice, err := cp.Client(controlplane.AliceUser)
	assert.NilError(t, err)
	bob, err := cp.Client(controlplane.BobUser)
	assert.NilError(t, err)
	grantRole(t, admin, ns, "configmap-writer", configMapRules("get", "list", "create", "update", "patch", "delete"),
		func() bool { return listsConfigMaps(alice, ns)() && listsConfigMaps(bob, ns)() },
		controlplane.AliceUser, controlplane.BobUser)
	clients := map[string]kubernetes.Interface{controlplane.AliceUser: alice, controlplane.BobUser: bob}

	token := st.Token
	stamp := func(cm *corev1.ConfigMap, user string) *corev1.ConfigMap {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[store.AnnotationAuthor] = user
		cm.Annotations[store.AnnotationAuthorGroups] = authenticatedGroups
		cm.Annotations[store.AnnotationTrustToken] = token
		return cm
	}
	record := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
				Labels: map[string]string{store.LabelManagedBy: store.ManagedBy, store.LabelKind: "ServiceInstance"}},
			Data: map[string]string{store.DataKey: `{"spec":{"plan":"small"}}`, store.StatusDataKey: `{"phase":"Ready"}`},
		}
	}
	// Each update case starts from a record alice wrote under the policy.
	seed := func(t *testing.T, name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := alice.CoreV1().ConfigMaps(ns).Create(ctx, stamp(record(name), controlplane.AliceUser), metav1.CreateOptions{})
		assert.NilError(t, err)
		return cm
	}
	update := func(user string, cm *corev1.ConfigMap) error {
		_, err := clients[user].CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}
	create := func(user string, cm *corev1.ConfigMap) error {
		_, err := clients[user].CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}

	for _, tc := range []struct {
		name    string
		write   func(t *testing.T, name string) error
		refused bool
		labels  bool // refused for the labels, with their message
	}{
		{name: "create without author annotations", refused: true,
			write: func(t *testing.T, name string) error { return create(controlplane.AliceUser, record(name)) }},
		{name: "create with someone else as author", refused: true,
			write: func(t *testing.T, name string) error {
				return create(controlplane.AliceUser, stamp(record(name), controlplane.BobUser))
			}},
		{name: "create with author self but other groups", refused: true,
			write: func(t *testing.T, name string) error {
				cm := stamp(record(name), controlplane.AliceUser)
				cm.Annotations[store.AnnotationAuthorGroups] = "system:masters," + authenticatedGroups
				return create(controlplane.AliceUser, cm)
			}},
		{name: "create with author self and own groups",
			write: func(t *testing.T, name string) error {
				return create(controlplane.AliceUser, stamp(record(name), controlplane.AliceUser))
			}},
		{name: "create of a labelled ConfigMap that holds no record",
			write: func(t *testing.T, name string) error {
				cm := record(name)
				delete(cm.Data, store.DataKey)
				return create(controlplane.BobUser, cm)
			}},
		{name: "status-only update by another user keeps the old author",
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				cm.Data[store.StatusDataKey] = `{"phase":"Failed"}`
				return update(controlplane.BobUser, cm)
			}},
		{name: "labels finalizers and other annotations by another user",
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				cm.Labels[store.LabelPending] = "true"
				cm.Annotations[store.AnnotationClaim] = `{"holder":"bob"}`
				cm.Finalizers = append(cm.Finalizers, store.Finalizer)
				return update(controlplane.BobUser, cm)
			}},
		{name: "spec change by another user without re-stamping", refused: true,
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				cm.Data[store.DataKey] = `{"spec":{"plan":"huge"}}`
				return update(controlplane.BobUser, cm)
			}},
		{name: "spec change by another user stamped as himself",
			write: func(t *testing.T, name string) error {
				cm := stamp(seed(t, name), controlplane.BobUser)
				cm.Data[store.DataKey] = `{"spec":{"plan":"huge"}}`
				return update(controlplane.BobUser, cm)
			}},
		{name: "spec removed by another user", refused: true,
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				delete(cm.Data, store.DataKey)
				return update(controlplane.BobUser, cm)
			}},
		{name: "trust token changed by another user", refused: true,
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				cm.Annotations[store.AnnotationTrustToken] = "forged"
				return update(controlplane.BobUser, cm)
			}},
		{name: "author annotation removed by another user", refused: true,
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				delete(cm.Annotations, store.AnnotationAuthor)
				return update(controlplane.BobUser, cm)
			}},
		{name: "managed-by label removed together with a spec change", refused: true,
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				delete(cm.Labels, store.LabelManagedBy)
				cm.Data[store.DataKey] = `{"spec":{"plan":"huge"}}`
				return update(controlplane.BobUser, cm)
			}},
		{name: "record forged without the managed-by label", refused: true,
			write: func(t *testing.T, name string) error {
				cm := stamp(record(name), controlplane.AliceUser)
				delete(cm.Labels, store.LabelManagedBy)
				return create(controlplane.BobUser, cm)
			}},
		{name: "record created by its author without the managed-by label", refused: true, labels: true,
			write: func(t *testing.T, name string) error {
				cm := stamp(record(name), controlplane.BobUser)
				delete(cm.Labels, store.LabelManagedBy)
				return create(controlplane.BobUser, cm)
			}},
		{name: "managed-by label removed by another user", refused: true, labels: true,
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				delete(cm.Labels, store.LabelManagedBy)
				return update(controlplane.BobUser, cm)
			}},
		{name: "managed-by label removed by the author", refused: true, labels: true,
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				delete(cm.Labels, store.LabelManagedBy)
				return update(controlplane.AliceUser, cm)
			}},
		{name: "kind label changed by another user", refused: true, labels: true,
			write: func(t *testing.T, name string) error {
				cm := seed(t, name)
				cm.Labels[store.LabelKind] = "ServiceBinding"
				return update(controlplane.BobUser, cm)
			}},
		{name: "ConfigMap not named as a record is outside the policy",
			write: func(t *testing.T, name string) error {
				cm := record(name)
				cm.Name = "notes-" + name
				return create(controlplane.BobUser, cm)
			}},
		{name: "deletion by another user",
			write: func(t *testing.T, name string) error {
				seed(t, name)
				return bob.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "catalog-instance." + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
			err := tc.write(t, name)
			if !tc.refused {
				assert.NilError(t, err)
				return
			}
			assert.Assert(t, apierrors.IsForbidden(err), "want refused by the policy, got %v", err)
			assert.ErrorContains(t, err, store.TrustPolicyName)
			if tc.labels {
				assert.ErrorContains(t, err, "may not be removed or changed")
				return
			}
			assert.ErrorContains(t, err, "Write records with kubectl catalog, which stamps you as their author")
		})
	}

	// doctor sees the policy in force.
	checks := trustDoctor(t, ns)
	assert.Equal(t, checks["trust"].Status, doctor.OK, "%+v", checks["trust"])
	assert.Assert(t, is.Contains(checks["trust"].Detail, "in force"))

	// What reconcile may do, as its ServiceAccount sees it (docs/security.md).
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, install.DefaultName, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	kubeconfig := writeTokenKubeconfig(t, tok.Status.Token)
	instWaitFor(t, "the ClusterRoleBinding to take effect", 30*time.Second, func() bool {
		return saKubectl(t, kubeconfig, "auth", "can-i", "create", "subjectaccessreviews.authorization.k8s.io") == "yes"
	})
	list := saKubectl(t, kubeconfig, "auth", "can-i", "--list", "-n", "default")
	t.Logf("kubectl auth can-i --list (as the reconcile ServiceAccount):\n%s", list)
	// A line per rule: the resource, then its non-resource URLs, resource names and verbs.
	for resource, want := range map[string]string{
		"subjectaccessreviews.authorization.k8s.io":                      "[create]",
		"events.events.k8s.io":                                           "[create patch]",
		"validatingadmissionpolicies.admissionregistration.k8s.io":       "[" + store.TrustPolicyName + "]",
		"validatingadmissionpolicybindings.admissionregistration.k8s.io": "[" + store.TrustPolicyName + "]",
	} {
		found := false
		for _, line := range strings.Split(list, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == resource && strings.Contains(line, want) {
				found = true
			}
		}
		assert.Assert(t, found, "no line for %s with %s in\n%s", resource, want, list)
	}
	assert.Assert(t, !strings.Contains(list, "impersonate"), list)
	for _, args := range [][]string{
		{"get", "validatingadmissionpolicies.admissionregistration.k8s.io/" + store.TrustPolicyName},
		{"get", "validatingadmissionpolicybindings.admissionregistration.k8s.io/" + store.TrustPolicyName},
	} {
		assert.Equal(t, saKubectl(t, kubeconfig, append([]string{"auth", "can-i"}, args...)...), "yes", "%v", args)
	}
	for _, args := range [][]string{
		{"get", "validatingadmissionpolicies.admissionregistration.k8s.io/other"},
		{"list", "validatingadmissionpolicies.admissionregistration.k8s.io"},
		{"delete", "validatingadmissionpolicies.admissionregistration.k8s.io/" + store.TrustPolicyName},
		{"impersonate", "users"},
		{"list", "secrets", "-A"},
	} {
		assert.Equal(t, saKubectl(t, kubeconfig, append([]string{"auth", "can-i"}, args...)...), "no", "%v", args)
	}

	// Uninstalled with the policy: the token goes first, then the binding and the policy.
	r = kubectl(t, controlplane.AdminUser, withNS("catalog", "reconcile", "uninstall", "--remove-trust-policy", "--yes")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "unverified author"))
	assert.Assert(t, is.Contains(r.Stdout, "configmap/"+store.TrustConfigMap+" deleted\n"+
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/"+store.TrustPolicyName+" deleted\n"+
		"validatingadmissionpolicy.admissionregistration.k8s.io/"+store.TrustPolicyName+" deleted\n"))
	st, err = trust.CheckPolicy(ctx, admin, ns)
	assert.NilError(t, err)
	assert.Assert(t, !st.InForce(), "%+v", st)
	checks = trustDoctor(t, ns)
	assert.Equal(t, checks["trust"].Status, doctor.Warn, "%+v", checks["trust"])
	assert.Assert(t, is.Contains(checks["trust"].Fix, "reconcile install"))
}

// trustDoctor runs "kubectl catalog doctor" as the admin with ns as current and catalog
// namespace, and returns its checks by name.
func trustDoctor(t *testing.T, ns string) map[string]doctor.Check {
	t.Helper()
	r := kubectl(t, controlplane.AdminUser, "catalog", "doctor", "-o", "json", "--broker-timeout", "3s", "-n", ns, "--catalog-namespace", ns,
		"--reconcile-namespace", ns)
	var rep doctor.Report
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stderr)
	checks := map[string]doctor.Check{}
	for _, c := range rep.Checks {
		checks[c.Name] = c
	}
	return checks
}
