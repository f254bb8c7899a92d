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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestReconcileReinstall_KeepsTheTrustToken_AStrandedNamespaceIsNamedAndEndsAWaitAtOnce:
// uninstalling reconcile leaves the catalog's set-up alone, so installing it again (or
// "init") keeps the trust token and bob's records go on moving, by his verbs and by
// plain reconcile. Removing the trust policy explicitly says whose records it strands;
// then bob's "provision --wait" through his namespace broker, written under the token
// gone, ends at once naming "adopt", doctor names the namespace with that command, and
// after bob adopts it, neither.
func TestReconcileReinstall_KeepsTheTrustToken_AStrandedNamespaceIsNamedAndEndsAWaitAtOnce(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	withNS := []string{"--namespace", e.catalogNS, "--catalog-namespace", e.catalogNS}
	admin := func(args ...string) result {
		t.Helper()
		return kubectl(t, controlplane.AdminUser, append([]string{"catalog"}, args...)...)
	}
	token := func() string {
		t.Helper()
		cm, err := e.admin.CoreV1().ConfigMaps(e.catalogNS).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
		assert.NilError(t, err)
		return cm.Data[store.TrustTokenKey]
	}
	_, err := e.admin.CoreV1().Secrets(e.teamB).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-auth"},
		StringData: map[string]string{"username": "u", "password": "p"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = e.admin.CoreV1().ConfigMaps(e.catalogNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap},
		Data: map[string]string{kube.ClusterIDKey: "e2e-reinstall"}}, metav1.CreateOptions{})
	assert.Check(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)
	r := trustBob(t, e, "register", "team", "--url", e.brokerURL, "--basic-auth-secret", "team-auth", "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = trustBob(t, e, "provision", "db", "--class", "team/object-storage", "--plan", "bucket", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// Uninstalled and installed again, then set up again: the token stays.
	r = admin(append([]string{"reconcile", "uninstall", "--yes"}, withNS...)...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, !strings.Contains(r.Stdout, store.TrustConfigMap), r.Stdout)
	assert.Assert(t, is.Contains(r.Stderr, "are kept"))
	r = admin(append([]string{"reconcile", "install", "--image", "example.invalid/kubectl-catalog:test"}, withNS...)...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "configmap/"+store.TrustConfigMap+" unchanged\n"))
	r = admin("init", "--catalog-namespace", e.catalogNS)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "configmap/"+store.TrustConfigMap+" unchanged"))
	assert.Equal(t, token(), e.token, "reinstalling keeps the token in place")
	// The ServiceAccount was made again: the new installation's pods get tokens of it.
	adminClient, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	e.saKubeconfig = saTokenKubeconfig(t, adminClient, e.catalogNS)

	// bob's records move: his own verb, and plain reconcile (the installed ServiceAccount)
	// finishing an instance deleted with kubectl.
	r = trustBob(t, e, "provision", "db2", "--class", "team/object-storage", "--plan", "bucket", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	recDeleteConfigMaps(t, e.teamB, "db")
	sum := trustReconcile(t, e, e.teamB)
	it, ok := recItem(sum, e.teamB, "db")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, it.Outcome, reconcile.Done, it.Detail)
	recAssertGone(t, e.st, e.teamB, "db")

	// The catalog's set-up removed on purpose: it says whose records that strands.
	r = admin(append([]string{"reconcile", "uninstall", "--remove-trust-policy", "--yes"}, withNS...)...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "It strands the records of these namespaces"))
	assert.Assert(t, is.Contains(r.Stderr, "namespace "+e.teamB+": 2 records: kubectl catalog adopt -n "+e.teamB+"\n"), r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "configmap/"+store.TrustConfigMap+" deleted\n"))
	r = admin("init", "--catalog-namespace", e.catalogNS)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, token() != e.token)

	// bob's wait through his broker, written under the token gone, ends at once.
	start := time.Now()
	r = trustBob(t, e, "provision", "db3", "--class", "team/object-storage", "--plan", "bucket", "--wait", "--timeout", "5m")
	took := time.Since(start)
	t.Logf("provision --wait on a stranded namespace broker ended after %s: %s", took, r.Stderr)
	assert.Assert(t, r.ExitCode != 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `"kubectl catalog adopt -n `+e.teamB+`"`))
	assert.Assert(t, took < 20*time.Second, "the wait ends at once, not after %s", took)

	// doctor names the namespace and the command that adopts it; after it, no more.
	stranded := func() (doctor.Check, bool) {
		t.Helper()
		r := admin("doctor", "-o", "json", "--broker-timeout", "3s", "-n", e.teamB, "--catalog-namespace", e.catalogNS, "--reconcile-namespace", e.catalogNS)
		var rep doctor.Report
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stderr)
		for _, c := range rep.Checks {
			if c.Name == "namespace "+e.teamB && strings.Contains(c.Detail, "trust policy now in force") {
				return c, true
			}
		}
		return doctor.Check{}, false
	}
	c, ok := stranded()
	assert.Assert(t, ok, "doctor names the stranded namespace")
	assert.Assert(t, is.Contains(c.Fix, "kubectl catalog adopt -n "+e.teamB))
	r = trustBob(t, e, "adopt", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stdout+r.Stderr)
	_, ok = stranded()
	assert.Assert(t, !ok, "adopted: doctor no longer names the namespace")
	r = trustBob(t, e, "provision", "db4", "--class", "team/object-storage", "--plan", "bucket", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	inst, err := e.st.Instances().Get(ctx, e.teamB, "db4")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
}
