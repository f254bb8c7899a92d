package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// rolesDocumentedBindings are the command lines of docs/security.md ("Roles") that give a
// user their roles: the user role in namespace NS, and the viewer role in the catalog
// namespace, as written there.
func rolesDocumentedBindings(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../docs/security.md")
	assert.NilError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "kubectl create rolebinding kubectl-catalog-user") ||
			strings.HasPrefix(l, "kubectl create rolebinding kubectl-catalog-viewer") && strings.HasSuffix(l, "-n catalog-system") {
			lines = append(lines, l)
		}
	}
	assert.Equal(t, len(lines), 2, "the user's two lines of docs/security.md: %q", lines)
	return lines
}

// rolesDoctor runs "kubectl catalog doctor -n NS -o json" as user, and returns its
// checks by name.
func rolesDoctor(t *testing.T, e *trustEnv, user, ns string) (map[string]doctor.Check, result) {
	t.Helper()
	r := kubectl(t, user, "catalog", "doctor", "-n", ns, "-o", "json", "--broker-timeout", "5s",
		"--catalog-namespace", e.catalogNS, "--reconcile-namespace", e.catalogNS)
	var rep doctor.Report
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stderr)
	checks := map[string]doctor.Check{}
	for _, c := range rep.Checks {
		checks[c.Name] = c
	}
	return checks, r
}

// TestTrust_DocumentedRoles_TwoUsersDoctorGraphAndCallsLeftToReconcile sets the roles up
// exactly as docs/security.md says, for an owner (alice) and a second user of the same
// namespace (bob), beside the administrator: both users' RoleBindings are created by the
// documented command lines; doctor as alice exits 0, no FAIL, and names reconcile's
// duties as reconcile's; doctor as a user without the user role in a namespace fails,
// naming the RoleBinding that grants it; alice's bind through a cluster broker says it is
// recorded, that reconcile sends it and when the installed reconcile takes it up, and a
// --wait on one says at once that it waits for reconcile; graph and describe instance
// show alice the Deployment using the binding, without a "forbidden" warning.
func TestTrust_DocumentedRoles_TwoUsersDoctorGraphAndCallsLeftToReconcile(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()

	for _, user := range []string{controlplane.AliceUser, controlplane.BobUser} {
		for _, line := range rolesDocumentedBindings(t) {
			if user == controlplane.BobUser && strings.Contains(line, "kubectl-catalog-viewer") {
				continue // trustSetup gave bob the marketplace already, by the same line
			}
			line = strings.NewReplacer("NAME", user, " -n NS", " -n "+e.teamA, "-n catalog-system", "-n "+e.catalogNS).Replace(line)
			fields := strings.Fields(line)
			assert.Equal(t, fields[0], "kubectl")
			r := viaKubectl(t, controlplane.AdminUser, fields[1:]...)
			assert.Equal(t, r.ExitCode, 0, "%s: %s", line, r.Stderr)
		}
	}
	instWaitFor(t, "the role bindings to take effect", 30*time.Second, func() bool {
		return kubectl(t, controlplane.BobUser, "auth", "can-i", "create", "secrets", "-n", e.teamA).ExitCode == 0 &&
			kubectl(t, controlplane.AliceUser, "auth", "can-i", "list", "deployments", "-n", e.teamA).ExitCode == 0 &&
			kubectl(t, controlplane.AliceUser, "auth", "can-i", "list", "cronjobs", "-n", e.catalogNS).ExitCode == 0
	})
	alice := func(args ...string) result {
		return sharingAlice(t, e, args...)
	}

	t.Run("doctor as alice, set up as documented: exit 0, reconcile's duties are reconcile's", func(t *testing.T) {
		checks, r := rolesDoctor(t, e, controlplane.AliceUser, e.teamA)
		assert.Equal(t, r.ExitCode, 0, r.Stdout)
		for name, c := range checks {
			assert.Assert(t, c.Status != doctor.Fail, "%s: %+v", name, c)
		}
		assert.Equal(t, checks["rbac "+e.teamA].Status, doctor.OK, "%+v", checks["rbac "+e.teamA])
		assert.Equal(t, checks["rbac "+e.catalogNS].Status, doctor.OK, "%+v", checks["rbac "+e.catalogNS])
		info := checks["rbac reconcile"]
		assert.Equal(t, info.Status, doctor.Info, "%+v", checks)
		assert.Assert(t, is.Contains(info.Detail, "reconcile (the installed ServiceAccount"))
		assert.Assert(t, is.Contains(info.Detail, "cluster brokers' credentials"))
		b := checks["broker "+e.catalogNS+"/acme"]
		assert.Equal(t, b.Status, doctor.Info, "%+v", b)
		plain := kubectl(t, controlplane.AliceUser, "catalog", "doctor", "-n", e.teamA, "--broker-timeout", "5s",
			"--catalog-namespace", e.catalogNS, "--reconcile-namespace", e.catalogNS)
		assert.Equal(t, plain.ExitCode, 0)
		assert.Assert(t, !strings.Contains(plain.Stdout, "sync broker"), plain.Stdout)
	})

	t.Run("doctor as a user without the user role in a namespace fails, naming the fix", func(t *testing.T) {
		checks, r := rolesDoctor(t, e, controlplane.BobUser, e.victim)
		assert.Equal(t, r.ExitCode, 1, r.Stdout)
		c := checks["rbac "+e.victim]
		assert.Equal(t, c.Status, doctor.Fail, "%+v", c)
		assert.Assert(t, is.Contains(c.Detail, "kubectl-catalog-user"))
		assert.Assert(t, is.Contains(c.Detail, "create configmaps"))
		assert.Assert(t, is.Contains(c.Fix, "kubectl create rolebinding kubectl-catalog-user-bob --clusterrole kubectl-catalog-user --user bob -n "+e.victim))
	})

	t.Run("a bind through a cluster broker says it is recorded, and when reconcile sends it", func(t *testing.T) {
		r := alice("provision", "shop", "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Check(t, is.Contains(r.Stderr, `Instance "shop" is recorded`))
		assert.Check(t, is.Contains(r.Stderr, "When it is sent: the installed reconcile (CronJob "+e.catalogNS+"/catalog-reconcile) takes it up at its next run, on schedule"))
		trustReconcile(t, e, e.teamA)
		inst, err := e.st.Instances().Get(ctx, e.teamA, "shop")
		assert.NilError(t, err)
		assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)

		graphDeployment(t, e.admin, e.teamA, "web", func(*corev1.PodSpec) {})
		r = alice("bind", "shop", "--name", "shop-web", "--to", "deployment/web")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Check(t, is.Contains(r.Stderr, `Binding "shop-web" is recorded`))
		assert.Check(t, is.Contains(r.Stderr, "reconcile sends the request"))
		assert.Check(t, is.Contains(r.Stderr, "When it is sent: the installed reconcile (CronJob "+e.catalogNS+"/catalog-reconcile) takes it up at its next run, on schedule \"*/5 * * * *\", next at "))

		r = alice("bind", "shop", "--name", "shop-later", "--wait", "--timeout", "3s")
		assert.Equal(t, r.ExitCode, cmdutil.ExitTimeout, r.Stderr)
		assert.Check(t, is.Contains(r.Stderr, "Waiting for reconcile to send the request: the installed reconcile (CronJob "+e.catalogNS+"/catalog-reconcile) takes it up at its next run, on schedule \"*/5 * * * *\", next at "))
		assert.Check(t, is.Contains(r.Stderr, "CronJob "+e.catalogNS+"/catalog-reconcile"))
		assert.Check(t, is.Contains(r.Stderr, "--timeout 3s ends this wait, not the request"))
		first := strings.Index(r.Stderr, "Waiting for reconcile")
		assert.Check(t, first < strings.Index(r.Stderr, "waiting for binding"), "the wait says what it waits for before it times out: %s", r.Stderr)

		// The administrator, who may read the broker's credentials, binds at once:
		// nothing is left to reconcile, and nothing says so.
		r = instCatalog(t, e.teamA, "bind", "shop", "--name", "shop-admin", "--catalog-namespace", e.catalogNS)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Check(t, !strings.Contains(r.Stderr, "When it is sent"), r.Stderr)
		assert.Check(t, is.Contains(r.Stderr, `binding "shop-admin" created`))

		trustReconcile(t, e, e.teamA)
		b, err := e.st.Bindings().Get(ctx, e.teamA, "shop-web")
		assert.NilError(t, err)
		assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady, "%+v", b.Status.Conditions)
	})

	t.Run("graph and describe show alice the Deployment using the binding, without forbidden", func(t *testing.T) {
		instWaitFor(t, "the projection into Deployment web", 30*time.Second, func() bool {
			d, err := e.admin.AppsV1().Deployments(e.teamA).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret != nil && v.Secret.SecretName == "shop-web" {
					return true
				}
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				for _, ef := range c.EnvFrom {
					if ef.SecretRef != nil && ef.SecretRef.Name == "shop-web" {
						return true
					}
				}
			}
			return false
		})
		r := alice("graph")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Check(t, !strings.Contains(r.Stderr+r.Stdout, "forbidden"), r.Stderr)
		assert.Check(t, is.Contains(r.Stdout, "Deployment web"))
		r = alice("describe", "instance", "shop")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Check(t, !strings.Contains(r.Stderr+r.Stdout, "forbidden"), r.Stdout+r.Stderr)
		assert.Check(t, is.Contains(r.Stdout, "Secret shop-web: Deployment web"))
	})
}
