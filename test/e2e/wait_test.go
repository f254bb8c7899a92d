package e2e

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// waitEnv is a namespace where alice, with the documented roles (kubectl-catalog-user
// there, kubectl-catalog-viewer in the catalog namespace, one of the test's own that
// her environment names), registered a test broker of her own, namespace-scoped.
type waitEnv struct {
	ns, catalogNS string
	b             *broker.Broker
	st            *store.Store
}

// waitRolesMu serializes "kubectl catalog rbac --apply" between the tests that need
// the documented roles: the ClusterRoles are the same for all.
var waitRolesMu sync.Mutex

// waitSetup gives alice the documented user role in a fresh namespace and has her
// register a test broker there (its asynchronous operations take asyncDelay).
func waitSetup(t *testing.T, asyncDelay time.Duration) *waitEnv {
	t.Helper()
	ctx := context.Background()
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", AsyncDelay: asyncDelay, RetryAfter: -1})
	ns, catalogNS := cp.NewNamespace(t), cp.NewNamespace(t)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	waitRolesMu.Lock()
	r := kubectl(t, controlplane.AdminUser, "catalog", "rbac", "--apply")
	waitRolesMu.Unlock()
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, args := range [][]string{
		{"create", "rolebinding", "kubectl-catalog-user-alice", "--clusterrole", "kubectl-catalog-user", "--user", controlplane.AliceUser, "-n", ns},
		{"create", "rolebinding", "kubectl-catalog-viewer-alice", "--clusterrole", "kubectl-catalog-viewer", "--user", controlplane.AliceUser, "-n", catalogNS},
	} {
		r := kubectl(t, controlplane.AdminUser, args...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	// The cluster id, stored by whoever used the catalog first (an administrator).
	_, err = admin.CoreV1().ConfigMaps(catalogNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap},
		Data: map[string]string{kube.ClusterIDKey: "e2e-wait-" + ns}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	alice, err := cp.Client(controlplane.AliceUser)
	assert.NilError(t, err)
	instWaitFor(t, "alice's role bindings to take effect", 30*time.Second, func() bool {
		_, errA := alice.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		_, errB := alice.CoreV1().ConfigMaps(catalogNS).List(ctx, metav1.ListOptions{Limit: 1})
		return errA == nil && errB == nil
	})
	_, err = alice.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "broker-auth"}, StringData: map[string]string{"username": "u", "password": "p"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	e := &waitEnv{ns: ns, catalogNS: catalogNS, b: b, st: store.New(admin, nil)}
	r = e.alice(t, "register", "acme", "--url", b.URL(), "--basic-auth-secret", "broker-auth", "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	return e
}

// alice runs "kubectl catalog -n NS ARGS..." as alice.
func (e *waitEnv) alice(t *testing.T, args ...string) result {
	t.Helper()
	return e.aliceRun(t, append([]string{"-n", e.ns}, args...)...)
}

// aliceRun runs "kubectl catalog ARGS..." as alice, in her environment (which names the
// catalog namespace).
func (e *waitEnv) aliceRun(t *testing.T, args ...string) result {
	t.Helper()
	env := append(environ(t, controlplane.AliceUser), cmdutil.CatalogNamespaceEnv+"="+e.catalogNS)
	return runWith(t, env, filepath.Join(binDir, "kubectl-catalog"), args...)
}

// waitHint is the wait command a command's output names ("kubectl catalog wait ..."),
// as printed; the test fails when it names none.
func waitHint(t *testing.T, r result) []string {
	t.Helper()
	m := regexp.MustCompile(`"(kubectl catalog wait [^"]+)"`).FindStringSubmatch(r.Stdout + r.Stderr)
	assert.Assert(t, m != nil, "no wait command named in:\n%s%s", r.Stdout, r.Stderr)
	return strings.Fields(m[1])
}

// runHint runs a command line a hint printed, as alice, exactly as printed (its "-n"
// included: alice's kubeconfig has no namespace of hers).
func (e *waitEnv) runHint(t *testing.T, words []string) result {
	t.Helper()
	assert.DeepEqual(t, words[:2], []string{"kubectl", "catalog"})
	return e.aliceRun(t, words[2:]...)
}

func (e *waitEnv) instance(t *testing.T, name string) *v1alpha1.ServiceInstance {
	t.Helper()
	inst, err := e.st.Instances().Get(context.Background(), e.ns, name)
	assert.NilError(t, err)
	return inst
}

// TestWait_AnUpdateStartedWithoutWait_IsDrivenToReadyByTheHints: alice's asynchronous
// update without --wait names a wait command; a second update while it runs is refused
// naming one too; each, run as printed, drives the update until the instance is Ready.
// "update db --wait" alone waits for the update under way as well.
func TestWait_AnUpdateStartedWithoutWait_IsDrivenToReadyByTheHints(t *testing.T) {
	t.Parallel()
	e := waitSetup(t, 300*time.Millisecond)
	r := e.alice(t, "provision", "db", "--class", "postgresql", "--plan", "standard", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	r = e.alice(t, "update", "db", "-p", "storage_gb=30")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	hint := waitHint(t, r)
	assert.DeepEqual(t, hint, strings.Fields("kubectl catalog wait instance/db --for=condition=Ready -n "+e.ns))
	inst := e.instance(t, "db")
	assert.Assert(t, inst.Status.InFlight != nil && inst.Status.InFlight.Type == v1alpha1.OperationUpdate, "the update is under way: %+v", inst.Status.InFlight)

	// A second change is refused while the update runs, naming what waits for it.
	r = e.alice(t, "update", "db", "-p", "storage_gb=40")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, strings.Contains(r.Stderr, "still updating"), r.Stderr)
	assert.DeepEqual(t, waitHint(t, r), hint)

	r = e.runHint(t, hint)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "instance/db condition met\n")
	inst = e.instance(t, "db")
	assert.Assert(t, inst.Status.InFlight == nil, "%+v", inst.Status.InFlight)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Equal(t, inst.Status.Provisioned.PlanID, inst.Spec.PlanID)

	// The second change now goes; "update db --wait" alone waits for it.
	r = e.alice(t, "update", "db", "-p", "storage_gb=40")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, e.instance(t, "db").Status.InFlight != nil)
	r = e.alice(t, "update", "db", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, strings.Contains(r.Stderr, `Instance "db" is ready.`), r.Stderr)
	inst = e.instance(t, "db")
	assert.Assert(t, inst.Status.InFlight == nil, "%+v", inst.Status.InFlight)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	var held []string
	for _, i := range e.b.Instances() {
		held = append(held, string(i.State))
	}
	assert.DeepEqual(t, held, []string{string(broker.InstanceReady)})
}

// TestWait_BindOnAProvisioningInstance_TheHintWaitsForIt: alice's bind on an instance
// still provisioning is refused naming a wait command; run as printed, it drives the
// provision to Ready, and the bind then goes through.
func TestWait_BindOnAProvisioningInstance_TheHintWaitsForIt(t *testing.T) {
	t.Parallel()
	e := waitSetup(t, 300*time.Millisecond)
	r := e.alice(t, "provision", "db", "--class", "postgresql", "--plan", "standard")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	hint := waitHint(t, r)

	r = e.alice(t, "bind", "db", "--name", "creds")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, strings.Contains(r.Stderr, "cannot be bound yet"), r.Stderr)
	assert.DeepEqual(t, waitHint(t, r), hint)

	// provision --wait again, once a hint, says the name is taken and names the wait.
	r = e.alice(t, "provision", "db", "--class", "postgresql", "--plan", "standard", "--wait")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.DeepEqual(t, waitHint(t, r), hint)

	r = e.runHint(t, hint)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, e.instance(t, "db").Status.Phase, v1alpha1.PhaseReady)

	r = e.alice(t, "bind", "db", "--name", "creds")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = admin.CoreV1().Secrets(e.ns).Get(context.Background(), "creds", metav1.GetOptions{})
	assert.NilError(t, err)
}

// TestWait_ARotationStartedWithoutWait_TheHintFinishesIt: a rotation of an asynchronous
// binding without --wait names a wait command, and so does a second rotation while it
// runs; run as printed, it finishes the rotation: new credentials in the Secret.
func TestWait_ARotationStartedWithoutWait_TheHintFinishesIt(t *testing.T) {
	t.Parallel()
	e := waitSetup(t, 300*time.Millisecond)
	r := e.alice(t, "provision", "db", "--class", "postgresql", "--plan", "ha", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = e.alice(t, "bind", "db", "--name", "creds", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	ctx := context.Background()
	before, err := e.st.Bindings().Get(ctx, e.ns, "creds")
	assert.NilError(t, err)

	r = e.alice(t, "bind", "--rotate", "creds")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	hint := waitHint(t, r)
	assert.DeepEqual(t, hint, strings.Fields("kubectl catalog wait binding/creds --for=condition=Ready -n "+e.ns))

	r = e.alice(t, "bind", "--rotate", "creds")
	assert.Assert(t, r.ExitCode != 0, r.Stderr)
	assert.DeepEqual(t, waitHint(t, r), hint)

	r = e.runHint(t, hint)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "binding/creds condition met\n")
	after, err := e.st.Bindings().Get(ctx, e.ns, "creds")
	assert.NilError(t, err)
	assert.Equal(t, after.Status.Phase, v1alpha1.PhaseReady)
	assert.Assert(t, after.Status.InFlight == nil, "%+v", after.Status.InFlight)
	assert.Assert(t, after.Status.Bound != nil && before.Status.Bound != nil)
	assert.Assert(t, after.Status.Bound.BindingID != before.Status.Bound.BindingID, "the binding id changed: %s", after.Status.Bound.BindingID)
}

// TestWait_ForDelete_AfterADeprovisionWithoutWait: waiting for an instance that is not
// being deprovisioned to go is refused (exit 1, naming deprovision); a deprovision
// without --wait names the wait for its deletion, which, run as printed, drives it
// until the record is gone; waiting for it again then returns at once.
func TestWait_ForDelete_AfterADeprovisionWithoutWait(t *testing.T) {
	t.Parallel()
	e := waitSetup(t, 300*time.Millisecond)
	r := e.alice(t, "provision", "db", "--class", "postgresql", "--plan", "standard", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	r = e.alice(t, "wait", "instance/db", "--for=delete")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, strings.Contains(r.Stderr, `"kubectl catalog deprovision db -n `+e.ns+`"`), r.Stderr)

	r = e.alice(t, "deprovision", "db", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	hint := waitHint(t, r)
	assert.DeepEqual(t, hint, strings.Fields("kubectl catalog wait instance/db --for=delete -n "+e.ns))
	_, err := e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.NilError(t, err, "the deprovision is under way")

	r = e.runHint(t, hint)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "instance/db deleted\n")
	_, err = e.st.Instances().Get(context.Background(), e.ns, "db")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	assert.Equal(t, len(e.b.Instances()), 0)

	r = e.runHint(t, hint)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = e.alice(t, "wait", "instance/db")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, strings.Contains(r.Stderr, `instance "db" not found`), r.Stderr)
}

// TestWait_TimeoutExits124_InterruptExits130_AndTheOperationGoesOn: a wait whose
// --timeout runs out exits 124 naming how to wait again; Ctrl-C exits 130; the
// provision stays under way, and the named wait finishes it once the broker is done.
func TestWait_TimeoutExits124_InterruptExits130_AndTheOperationGoesOn(t *testing.T) {
	t.Parallel()
	e := waitSetup(t, 300*time.Millisecond)
	e.b.SetAsyncDelay(time.Hour)
	r := e.alice(t, "provision", "db", "--class", "postgresql", "--plan", "standard")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	r = e.alice(t, "wait", "instance/db", "--timeout", "2s")
	assert.Equal(t, r.ExitCode, 124, r.Stderr)
	assert.Assert(t, strings.Contains(r.Stderr, `waiting for instance "db" to be ready`), r.Stderr)
	hint := waitHint(t, r)
	assert.DeepEqual(t, hint, strings.Fields("kubectl catalog wait instance/db --for=condition=Ready -n "+e.ns))
	inst := e.instance(t, "db")
	assert.Assert(t, inst.Status.InFlight != nil && inst.Status.InFlight.Type == v1alpha1.OperationProvision, "%+v", inst.Status.InFlight)

	// Run as printed, by the user who provisioned, in her environment (her catalog
	// namespace: the record's ids are bound to its cluster id).
	s := startCatalogIn(t, append(environ(t, controlplane.AliceUser), cmdutil.CatalogNamespaceEnv+"="+e.catalogNS), e.ns, "wait", "instance/db")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the second wait's output:\n%s", s.stderr.String())
		}
	})
	instWaitFor(t, "the wait to show its progress", 30*time.Second, func() bool {
		return strings.Contains(s.stderr.String(), "Provisioning")
	})
	assert.Equal(t, s.interrupt(t), 130, s.stderr.String())
	assert.Assert(t, strings.Contains(s.stderr.String(), "interrupted"), s.stderr.String())

	// The broker finishes; the wait, run as printed, sees it through.
	e.b.FinishOperations()
	r = e.runHint(t, hint)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, e.instance(t, "db").Status.Phase, v1alpha1.PhaseReady)
}
