package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// "reconcile install" on the real API server: the ServiceAccount it creates can run
// "reconcile -A" and finish pending work with the ClusterRole it gets, and nothing
// outside it; "reconcile uninstall" removes everything but the namespace.
func TestReconcileInstall_ServiceAccountReconcilesWithLeastPrivilege(t *testing.T) {
	serial(t, reconcileEveryNamespace)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	ns := cp.NewNamespace(t)
	const image = "example.invalid/kubectl-catalog:test"
	cluster := installCleanup(t, admin, ns)

	// A server dry run validates everything and stores nothing.
	r := kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "install", "--image", image, "--namespace", ns, "--dry-run=server", "--no-trust-policy")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "cronjob.batch/catalog-reconcile created (server dry run)"))
	_, err = admin.BatchV1().CronJobs(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "a dry run stores nothing: %v", err)
	// Its objects, printed, are complete: kubectl can apply them as they are.
	r = kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "install", "--image", image, "--namespace", ns, "--dry-run=server", "--no-trust-policy", "-o", "yaml")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	manifests := filepath.Join(t.TempDir(), "install.yaml")
	assert.NilError(t, os.WriteFile(manifests, []byte(r.Stdout), 0o600))
	r = kubectl(t, controlplane.AdminUser, "apply", "--dry-run=server", "-f", manifests)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "cronjob.batch/catalog-reconcile created (server dry run)"))

	// The trust policy has a test of its own (trust_policy_test.go); here records are
	// written by the admin without author annotations, which it would refuse.
	r = kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "install", "--image", image, "--namespace", ns, "--no-trust-policy")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "WARNING: --no-trust-policy"))
	for _, line := range []string{
		"namespace/" + ns + " unchanged",
		"serviceaccount/catalog-reconcile created",
		"clusterrole.rbac.authorization.k8s.io/" + cluster + " created",
		"clusterrolebinding.rbac.authorization.k8s.io/" + cluster + " created",
		"cronjob.batch/catalog-reconcile created",
	} {
		assert.Assert(t, is.Contains(r.Stdout, line+"\n"))
	}
	cj, err := admin.BatchV1().CronJobs(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image, image)

	// Applied again: nothing changes.
	r = kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "install", "--image", image, "--namespace", ns, "--no-trust-policy")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, strings.Count(r.Stdout, " unchanged\n"), 5, r.Stdout)

	// The ServiceAccount's credentials, as the CronJob's pod would have them.
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, install.DefaultName, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	kubeconfig := writeTokenKubeconfig(t, tok.Status.Token)
	canI := func(args ...string) string {
		t.Helper()
		return saKubectl(t, kubeconfig, append([]string{"auth", "can-i"}, args...)...)
	}
	// The authorizer sees the new binding through an informer: wait for it.
	instWaitFor(t, "the ClusterRoleBinding to take effect", 30*time.Second, func() bool {
		return canI("list", "configmaps", "--all-namespaces") == "yes"
	})

	// Pending work: an instance deleted with a plain "kubectl delete configmap".
	e := instSetupCatalog(t, nil)
	recProvision(t, e.ns, "db")
	recDeleteConfigMaps(t, e.ns, "db")

	sum, r := recRun(t, e.ns, []string{"KUBECONFIG=" + kubeconfig}, "-A", "--max-duration", "20s")
	it, ok := recItem(sum, e.ns, "db")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
	recAssertGone(t, e.st, e.ns, "db")
	instAssertBrokerHolds(t, e.b)
	// Other tests' records may show up in -A; none may have failed for want of a permission.
	for _, it := range sum.Items {
		assert.Assert(t, !strings.Contains(strings.ToLower(it.Detail), "forbidden"), "%+v", it)
	}
	if sum.Counts[reconcile.Failed] == 0 {
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}

	// Granted what reconcile uses...
	for _, args := range [][]string{
		{"get", "secrets", "-n", "kube-system"},
		{"create", "secrets", "-n", e.ns},
		{"get", "namespaces"},
		{"create", "selfsubjectreviews.authentication.k8s.io"},
		{"update", "deployments.apps", "-n", e.ns},
		{"update", "cronjobs.batch", "-n", e.ns},
		{"create", "subjectaccessreviews.authorization.k8s.io"},
		{"get", "validatingadmissionpolicies.admissionregistration.k8s.io/kubectl-catalog-record-author"},
	} {
		assert.Equal(t, canI(args...), "yes", "%v", args)
	}
	// ...and refused everything else.
	for _, args := range [][]string{
		{"list", "pods", "-n", e.ns},
		{"list", "secrets", "-n", e.ns},
		{"delete", "namespaces"},
		{"get", "nodes"},
		{"delete", "deployments.apps", "-n", e.ns},
		{"create", "deployments.apps", "-n", e.ns},
		{"create", "clusterroles.rbac.authorization.k8s.io"},
		{"create", "rolebindings.rbac.authorization.k8s.io", "-n", e.ns},
		{"create", "serviceaccounts/token", "-n", ns},
		{"impersonate", "users"},
		{"get", "validatingadmissionpolicies.admissionregistration.k8s.io/other"},
		{"update", "validatingadmissionpolicies.admissionregistration.k8s.io/kubectl-catalog-record-author"},
	} {
		assert.Equal(t, canI(args...), "no", "%v", args)
	}

	// Without --yes outside a terminal, uninstall refuses and changes nothing.
	r = kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "uninstall", "--namespace", ns)
	assert.Equal(t, r.ExitCode, 2, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "--yes"))

	r = kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "uninstall", "--namespace", ns, "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, strings.Count(r.Stdout, " deleted\n"), 4, r.Stdout)
	_, err = admin.BatchV1().CronJobs(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "cronjob: %v", err)
	_, err = admin.CoreV1().ServiceAccounts(ns).Get(ctx, install.DefaultName, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "serviceaccount: %v", err)
	_, err = admin.RbacV1().ClusterRoles().Get(ctx, cluster, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "clusterrole: %v", err)
	_, err = admin.RbacV1().ClusterRoleBindings().Get(ctx, cluster, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "clusterrolebinding: %v", err)
	_, err = admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	assert.NilError(t, err, "the namespace holds records: it stays")

	// The trust policy is the catalog's set-up: uninstall leaves it alone.
	r = kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "uninstall", "--namespace", ns, "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, strings.Count(r.Stdout, " not found, skipped\n"), 5, r.Stdout)
	assert.Assert(t, !strings.Contains(r.Stdout, "validatingadmissionpolic"), r.Stdout)
}
