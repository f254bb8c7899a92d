package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// trustEnv is the cluster of TestTrust_: an administrator, a cluster broker, reconcile
// installed with the trust policy, and the namespaces of alice, bob and a victim.
type trustEnv struct {
	admin                           kubernetes.Interface
	alice                           kubernetes.Interface
	catalogNS, teamA, teamB, victim string
	b                               *broker.Broker
	brokerTap, attacker             *trustTap
	brokerURL, attackerURL          string
	saKubeconfig                    string
	token                           string
	st                              *store.Store
	class                           *v1alpha1.ServiceClass
}

// trustTap records every request a server received, unredacted (method, URL, headers and
// body), before handing it to next; without next it answers an empty catalog, as a server
// an attacker runs would.
type trustTap struct {
	next http.Handler
	mu   sync.Mutex
	seen []string
}

func (tp *trustTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", r.Method, r.URL.String())
	for k, vs := range r.Header {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(vs, ", "))
	}
	b.Write(body)
	tp.mu.Lock()
	tp.seen = append(tp.seen, b.String())
	tp.mu.Unlock()
	if tp.next != nil {
		tp.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"services":[]}`))
}

func (tp *trustTap) requests() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.seen)
}

// trustSetup builds the cluster of the trust test, and takes the cluster-wide trust
// policy away again when the test ends.
func trustSetup(t *testing.T) *trustEnv {
	t.Helper()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	alice, err := cp.Client(controlplane.AliceUser)
	assert.NilError(t, err)
	bob, err := cp.Client(controlplane.BobUser)
	assert.NilError(t, err)
	e := &trustEnv{admin: admin, alice: alice, st: recStore(t)}
	e.catalogNS = cp.NewNamespace(t)
	e.teamA, e.teamB, e.victim = cp.NewNamespace(t), cp.NewNamespace(t), cp.NewNamespace(t)

	trustServers(t, e)
	trustCleanups(t, admin, e)

	r := kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "install", "--image", "example.invalid/kubectl-catalog:test",
		"--namespace", e.catalogNS, "--catalog-namespace", e.catalogNS)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	tokenCM, err := admin.CoreV1().ConfigMaps(e.catalogNS).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	e.token = tokenCM.Data[store.TrustTokenKey]
	assert.Assert(t, e.token != "")

	trustSecrets(t, admin, e)

	r = instCatalog(t, e.catalogNS, "register", "acme", "--url", e.brokerURL, "--basic-auth-secret", "broker-auth",
		"--scope", "cluster", "--catalog-namespace", e.catalogNS)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	e.class, err = e.st.Classes().Get(ctx, e.catalogNS, v1alpha1.ClassRecordName("acme", "80422806-2600-4046-aa50-c8749da7ea8b"))
	assert.NilError(t, err)

	trustRoles(t, admin, e)

	// reconcile's ServiceAccount, with a token as the CronJob's pod would get it.
	e.saKubeconfig = saTokenKubeconfig(t, admin, e.catalogNS)

	// The authorizer sees new bindings through informers: wait for all of them.
	instWaitFor(t, "the role bindings to take effect", 30*time.Second, func() bool {
		_, errA := alice.CoreV1().ConfigMaps(e.teamA).List(ctx, metav1.ListOptions{Limit: 1})
		_, errB := bob.CoreV1().Secrets(e.teamB).Get(ctx, "bob-params", metav1.GetOptions{})
		_, errC := bob.CoreV1().ConfigMaps(e.catalogNS).List(ctx, metav1.ListOptions{Limit: 1})
		return errA == nil && errB == nil && errC == nil &&
			saKubectl(t, e.saKubeconfig, "auth", "can-i", "create", "subjectaccessreviews.authorization.k8s.io") == "yes"
	})
	_, err = alice.CoreV1().Secrets(e.teamA).Get(ctx, "hidden", metav1.GetOptions{})
	assert.Assert(t, apierrors.IsForbidden(err), "alice may not read the hidden Secret: %v", err)
	return e
}

// trustServers starts the test broker behind a tap that keeps what it received
// unredacted, and the attacker's server.
func trustServers(t *testing.T, e *trustEnv) {
	t.Helper()
	b, err := broker.New(broker.Options{Username: "u", Password: "p", RetryAfter: -1})
	assert.NilError(t, err)
	e.b = b
	e.brokerTap = &trustTap{next: b.Handler()}
	brokerSrv := httptest.NewServer(e.brokerTap)
	t.Cleanup(brokerSrv.Close)
	e.brokerURL = brokerSrv.URL
	e.attacker = &trustTap{}
	attackerSrv := httptest.NewServer(e.attacker)
	t.Cleanup(attackerSrv.Close)
	e.attackerURL = attackerSrv.URL
}

// trustCleanups takes the cluster-wide trust policy and the roles away when the test
// ends, and lets the namespaces go.
func trustCleanups(t *testing.T, admin kubernetes.Interface, e *trustEnv) {
	ctx := context.Background()
	t.Cleanup(func() {
		trustTakeDown(t, admin, e.catalogNS)
		for _, role := range []string{"kubectl-catalog-viewer", "kubectl-catalog-user", "kubectl-catalog-admin"} {
			_ = admin.RbacV1().ClusterRoles().Delete(ctx, role, metav1.DeleteOptions{})
		}
	})
	t.Cleanup(func() {
		// Forged records hold finalizers nothing will remove: let the namespaces go.
		for _, ns := range []string{e.teamA, e.teamB} {
			list, err := admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for i := range list.Items {
				cm := &list.Items[i]
				if len(cm.Finalizers) > 0 {
					cm.Finalizers = nil
					_, _ = admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
				}
			}
		}
	})
}

// trustSecrets creates the Secrets the test reads or tries to steal.
func trustSecrets(t *testing.T, admin kubernetes.Interface, e *trustEnv) {
	t.Helper()
	ctx := context.Background()
	secret := func(ns, name string, data map[string]string) {
		_, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	secret(e.catalogNS, "broker-auth", map[string]string{"username": "u", "password": "p"})
	secret(e.victim, "root", map[string]string{"token": trustVictimRoot})
	secret(e.teamA, "hidden", map[string]string{"token": trustTeamAHidden, "params": `{"leak":"` + trustTeamAHidden + `"}`})
	secret(e.teamA, "admin-params", map[string]string{"params": `{"owner":"` + trustAdminParam + `"}`})
	secret(e.teamB, "bob-params", map[string]string{"params": `{"label":"` + trustBobParam + `"}`})
}

// trustRoles gives alice every verb on ConfigMaps in team-a and bob the documented
// roles.
func trustRoles(t *testing.T, admin kubernetes.Interface, e *trustEnv) {
	t.Helper()
	ctx := context.Background()
	// alice: every verb on ConfigMaps in team-a, nothing else.
	_, err := admin.RbacV1().Roles(e.teamA).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = admin.RbacV1().RoleBindings(e.teamA).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controlplane.AliceUser}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	// bob: the documented roles, bound as docs/security.md says.
	r := kubectl(t, controlplane.AdminUser, "catalog", "rbac", "--apply")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, args := range [][]string{
		{"create", "rolebinding", "kubectl-catalog-user-" + controlplane.BobUser, "--clusterrole", "kubectl-catalog-user", "--user", controlplane.BobUser, "-n", e.teamB},
		{"create", "rolebinding", "kubectl-catalog-viewer-" + controlplane.BobUser, "--clusterrole", "kubectl-catalog-viewer", "--user", controlplane.BobUser, "-n", e.catalogNS},
	} {
		r := kubectl(t, controlplane.AdminUser, args...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
}

// trustTakeDown removes what "reconcile install" (or "init") put in place with catalogNS
// as the catalog namespace, the cluster-wide trust policy included, and waits until the
// API server no longer enforces it: until it lets a record without author through, later
// tests would meet the policy.
func trustTakeDown(t *testing.T, admin kubernetes.Interface, catalogNS string) {
	t.Helper()
	r := kubectl(t, controlplane.AdminUser, "catalog", "reconcile", "uninstall", "--namespace", catalogNS, "--catalog-namespace", catalogNS,
		"--remove-trust-policy", "--yes")
	assert.Check(t, r.ExitCode == 0, r.Stderr)
	instWaitFor(t, "the trust policy to be no longer enforced", 60*time.Second, func() bool {
		_, err := admin.CoreV1().ConfigMaps(catalogNS).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "catalog-instance.probe", Labels: map[string]string{store.LabelManagedBy: store.ManagedBy}},
			Data:       map[string]string{store.DataKey: "{}"},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil
	})
}

// trustBob runs "kubectl catalog -n team-b ARGS" as bob.
func trustBob(t *testing.T, e *trustEnv, args ...string) result {
	t.Helper()
	return kubectl(t, controlplane.BobUser, append([]string{"catalog", "-n", e.teamB, "--catalog-namespace", e.catalogNS}, args...)...)
}

// trustReconcile runs "kubectl catalog reconcile -n NS -o json" with the ServiceAccount's
// token, short enough that a refused record is looked at once or twice.
func trustReconcile(t *testing.T, e *trustEnv, ns string) reconcile.Summary {
	t.Helper()
	sum, r := recRunStrict(t, ns, []string{"KUBECONFIG=" + e.saKubeconfig}, "--catalog-namespace", e.catalogNS, "--max-duration", "3s", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, "refusals are not failures: %s", r.Stderr)
	return sum
}

// The groups the API server gives a static-token user without groups.
const authenticatedGroups = "system:authenticated"

// Values of Secrets that must never reach a broker they were not meant for.
const (
	trustVictimRoot  = "victim-root-7c1d0b"
	trustTeamAHidden = "team-a-hidden-3f9a2e"
	trustAdminParam  = "admin-param-51be44"
	trustBobParam    = "bob-param-a41c93"
)

// trustAliceInTeamA gives alice the documented user role in team A and the viewer role
// in team B and the catalog namespace, waits for them to take effect, and returns how
// alice runs kubectl catalog in team A.
func trustAliceInTeamA(t *testing.T, e *trustEnv) func(args ...string) result {
	t.Helper()
	for _, args := range [][]string{
		{"create", "rolebinding", "kubectl-catalog-user-" + controlplane.AliceUser, "--clusterrole", "kubectl-catalog-user", "--user", controlplane.AliceUser, "-n", e.teamA},
		{"create", "rolebinding", "kubectl-catalog-viewer-" + controlplane.AliceUser, "--clusterrole", "kubectl-catalog-viewer", "--user", controlplane.AliceUser, "-n", e.teamB},
		{"create", "rolebinding", "kubectl-catalog-viewer-" + controlplane.AliceUser, "--clusterrole", "kubectl-catalog-viewer", "--user", controlplane.AliceUser, "-n", e.catalogNS},
	} {
		r := kubectl(t, controlplane.AdminUser, args...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	instWaitFor(t, "alice's role bindings to take effect", 30*time.Second, func() bool {
		_, err := e.alice.CoreV1().ConfigMaps(e.teamB).List(context.Background(), metav1.ListOptions{Limit: 1})
		return err == nil
	})
	return func(args ...string) result {
		t.Helper()
		return kubectl(t, controlplane.AliceUser, append([]string{"catalog", "-n", e.teamA, "--catalog-namespace", e.catalogNS}, args...)...)
	}
}

// provisionParameters are the parameters of the last provision b received for instance
// id (nil: none).
func provisionParameters(t *testing.T, b *broker.Broker, id string) map[string]any {
	t.Helper()
	var params map[string]any
	for _, req := range b.RequestsFor(broker.OpProvision) {
		if req.InstanceID == id {
			var body struct {
				Parameters map[string]any `json:"parameters"`
			}
			assert.NilError(t, req.DecodeBody(&body))
			params = body.Parameters
		}
	}
	return params
}

// saTokenKubeconfig is a kubeconfig with a token of reconcile's ServiceAccount in
// namespace ns, as the CronJob's pod gets it: a ServiceAccount deleted and made again
// (uninstall, install) takes new tokens, its earlier ones being refused once the API
// server's cache of authenticated tokens forgets them.
func saTokenKubeconfig(t *testing.T, admin kubernetes.Interface, ns string) string {
	t.Helper()
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), install.DefaultName, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	return writeTokenKubeconfig(t, tok.Status.Token)
}
