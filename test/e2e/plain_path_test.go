package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// plainInit runs "kubectl catalog init" as the admin with catalogNS as the catalog
// namespace, checks what it says, and takes the cluster-wide trust policy away again when
// the test ends.
func plainInit(t *testing.T, admin kubernetes.Interface, catalogNS string) {
	t.Helper()
	t.Cleanup(func() { trustTakeDown(t, admin, catalogNS) })
	r := kubectl(t, controlplane.AdminUser, "catalog", "init", "--catalog-namespace", catalogNS)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, line := range []string{
		"configmap/catalog-cluster-id ",
		"validatingadmissionpolicy.admissionregistration.k8s.io/kubectl-catalog-record-author ",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/kubectl-catalog-record-author ",
		"configmap/catalog-trust created: ",
	} {
		assert.Check(t, is.Contains(r.Stdout, line))
	}
	// Again: everything is found in place, and the cluster id stays.
	id, err := admin.CoreV1().ConfigMaps(catalogNS).Get(context.Background(), kube.ClusterIDConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	r = kubectl(t, controlplane.AdminUser, "catalog", "init", "--catalog-namespace", catalogNS)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		assert.Check(t, is.Contains(line, " unchanged: "))
	}
	again, err := admin.CoreV1().ConfigMaps(catalogNS).Get(context.Background(), kube.ClusterIDConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, again.Data[kube.ClusterIDKey], id.Data[kube.ClusterIDKey])
}

// plainUser gives user the documented roles: kubectl-catalog-user in ns, the viewer of
// the catalog namespace (the marketplace of cluster brokers, the trust token).
func plainUser(t *testing.T, user, ns, catalogNS string) {
	t.Helper()
	r := kubectl(t, controlplane.AdminUser, "catalog", "rbac", "--apply")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, args := range [][]string{
		{"create", "rolebinding", "kubectl-catalog-user-" + user, "--clusterrole", "kubectl-catalog-user", "--user", user, "-n", ns},
		{"create", "rolebinding", "kubectl-catalog-viewer-" + user, "--clusterrole", "kubectl-catalog-viewer", "--user", user, "-n", catalogNS},
	} {
		r := kubectl(t, controlplane.AdminUser, args...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	c, err := cp.Client(user)
	assert.NilError(t, err)
	instWaitFor(t, user+"'s role bindings to take effect", 30*time.Second, func() bool {
		_, errA := c.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{Limit: 1})
		_, errB := c.CoreV1().ConfigMaps(catalogNS).List(context.Background(), metav1.ListOptions{Limit: 1})
		return errA == nil && errB == nil
	})
}

// TestPlainPath_InitThenAnInterruptedProvisionIsFinishedByPlainReconcile: the admin sets
// the catalog up with init and registers a cluster broker; alice, with the documented
// user role, provisions and her --wait is cut short while the broker works; a plain
// "kubectl catalog reconcile" (no flag) by the admin finishes it.
func TestPlainPath_InitThenAnInterruptedProvisionIsFinishedByPlainReconcile(t *testing.T) {
	serial(t, initPlainPath)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	catalogNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	plainInit(t, admin, catalogNS)
	plainUser(t, controlplane.AliceUser, ns, catalogNS)

	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", AsyncDelay: slow(4 * time.Second), RetryAfter: -1})
	_, err = admin.CoreV1().Secrets(catalogNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "acme-auth"},
		StringData: map[string]string{"username": "u", "password": "p"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	r := kubectl(t, controlplane.AdminUser, "catalog", "register", "acme", "--url", b.URL(), "--basic-auth-secret", "acme-auth", "--catalog-namespace", catalogNS)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, !strings.Contains(r.Stderr, "kubectl catalog init"), "the policy is in force: nothing is offered: %s", r.Stderr)

	r = kubectl(t, controlplane.AliceUser, "catalog", "-n", ns, "--catalog-namespace", catalogNS,
		"provision", "db", "--class", "postgresql", "--plan", "standard", "-p", "storage_gb=20", "--wait", "--timeout", "1s", "--interval", "200ms")
	assert.Assert(t, r.ExitCode != 0, "the wait was cut short: %s", r.Stderr)
	st := recStore(t)
	inst, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	// alice may not read the cluster broker's credentials: her provision is left to
	// reconcile, recorded and pending.
	assert.Assert(t, inst.Status.Phase == v1alpha1.PhasePending || inst.Status.Phase == v1alpha1.PhaseProvisioning, "%s", inst.Status.Phase)

	sum, r := recRunStrict(t, ns, nil, "--catalog-namespace", catalogNS, "--max-duration", "60s", "--retry-horizon", "0", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	item, ok := recItem(sum, ns, "db")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, item.Outcome, reconcile.Done, item.Detail)
	inst, err = st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	instAssertBrokerHolds(t, b, inst.Spec.ExternalID)
}

// TestPlainPath_ANamespaceWithItsOwnBrokerIsFinishedByPlainReconcile: with the catalog
// set up, a namespace holding a namespace-scoped broker with credentials, an instance and
// a binding is deleted; a plain "kubectl catalog reconcile" unbinds, deprovisions and lets
// the namespace go.
func TestPlainPath_ANamespaceWithItsOwnBrokerIsFinishedByPlainReconcile(t *testing.T) {
	serial(t, initPlainPath)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	catalogNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	plainInit(t, admin, catalogNS)

	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
	_, err = admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-auth"},
		StringData: map[string]string{"username": "u", "password": "p"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	withCatalog := func(args ...string) []string { return append(args, "--catalog-namespace", catalogNS) }
	r := instCatalog(t, ns, withCatalog("register", "team", "--url", b.URL(), "--basic-auth-secret", "team-auth", "--scope", "namespace")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, ns, withCatalog("provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "60s")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, ns, withCatalog("bind", "db", "--name", "app", "--wait", "--timeout", "60s")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, len(b.Instances()), 1)
	assert.Equal(t, len(b.Bindings()), 1)

	deleteNamespaceUntilFinalizersRemain(t, admin, ns, "the namespace controller to delete what it may")

	sum, r := recRunStrict(t, ns, nil, withCatalog("--max-duration", "60s", "--interval", "200ms")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, it := range []struct{ kind, name string }{
		{v1alpha1.KindServiceBinding, "app"}, {v1alpha1.KindServiceInstance, "db"}, {v1alpha1.KindBroker, "team"},
	} {
		item, ok := recKindItem(sum, it.kind, ns, it.name)
		assert.Assert(t, ok, "%s %s: %+v", it.kind, it.name, sum.Items)
		assert.Equal(t, item.Outcome, reconcile.Done, "%s %s: %s", it.kind, it.name, item.Detail)
	}
	assert.Equal(t, len(b.Bindings()), 0)
	instAssertBrokerHolds(t, b)
	instWaitFor(t, "the namespace to finish deleting", 90*time.Second, func() bool {
		_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// TestPlainPath_RecordsWrittenBeforeThePolicyAreAdoptedByTheirOwner: alice, with the
// documented user role, registers a namespace broker with credentials and provisions
// through it before anyone set the catalog up, and her --wait is cut short. Once the
// admin runs init, plain reconcile refuses her records (their author cannot be verified);
// after "adopt -n NS" by alice (a dry run first, which changes nothing), plain reconcile
// finishes the provision.
func TestPlainPath_RecordsWrittenBeforeThePolicyAreAdoptedByTheirOwner(t *testing.T) {
	serial(t, initPlainPath)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	catalogNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	plainUser(t, controlplane.AliceUser, ns, catalogNS)
	// The cluster id, stored by whoever used the catalog first.
	_, err = admin.CoreV1().ConfigMaps(catalogNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap},
		Data: map[string]string{kube.ClusterIDKey: "e2e-plain-adopt"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-auth"},
		StringData: map[string]string{"username": "u", "password": "p"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	alice := func(args ...string) result {
		return kubectl(t, controlplane.AliceUser, append([]string{"catalog", "-n", ns, "--catalog-namespace", catalogNS}, args...)...)
	}

	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", AsyncDelay: slow(3 * time.Second), RetryAfter: -1})
	r := alice("register", "team", "--url", b.URL(), "--basic-auth-secret", "team-auth", "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stderr, `an administrator runs "kubectl catalog init" once`), "no terminal: one line names init")
	r = alice("provision", "db", "--class", "postgresql", "--plan", "standard", "-p", "storage_gb=20", "--wait", "--timeout", "1s", "--interval", "200ms")
	assert.Assert(t, r.ExitCode != 0, "the wait was cut short: %s", r.Stderr)

	plainInit(t, admin, catalogNS)
	reconcileDB := func(args ...string) reconcile.Item {
		t.Helper()
		sum, r := recRunStrict(t, ns, nil, append([]string{"--catalog-namespace", catalogNS, "--max-duration", "60s", "--interval", "200ms"}, args...)...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		item, ok := recItem(sum, ns, "db")
		assert.Assert(t, ok, "%+v", sum.Items)
		return item
	}
	item := reconcileDB()
	assert.Equal(t, item.Outcome, reconcile.Refused, item.Detail)
	// doctor names the namespace, how many records, and adopt.
	unverified := regexp.MustCompile(`(?m)^namespace ` + regexp.QuoteMeta(ns) + ` +WARN +2 records written before the trust policy`)
	// doctor exits 1 for the refused record.
	r = kubectl(t, controlplane.AdminUser, "catalog", "-n", ns, "--catalog-namespace", catalogNS, "doctor")
	assert.Check(t, unverified.MatchString(r.Stdout), r.Stdout)
	assert.Check(t, is.Contains(r.Stdout, "kubectl catalog adopt -n "+ns+" "))

	st := recStore(t)
	inst, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	r = alice("adopt", "--dry-run")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stdout, "would be adopted"))
	same, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, same.ResourceVersion, inst.ResourceVersion, "a dry run writes nothing")

	r = alice("adopt", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, kind := range []string{"broker", "serviceinstance"} {
		assert.Check(t, is.Regexp("(?m)^"+kind+` +\S+ +alice +adopted`, r.Stdout))
	}
	adopted, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, adopted.Spec, inst.Spec)
	// doctor exits 1 for the refused record.
	r = kubectl(t, controlplane.AdminUser, "catalog", "-n", ns, "--catalog-namespace", catalogNS, "doctor")
	assert.Check(t, !strings.Contains(r.Stdout, "namespace "+ns+" "), "adopted: no longer listed: %s", r.Stdout)

	// Plain reconcile runs until the record is due again and finished.
	instWaitFor(t, "plain reconcile to finish db", 90*time.Second, func() bool {
		item = reconcileDB()
		assert.Assert(t, item.Outcome != reconcile.Refused && item.Outcome != reconcile.Failed, item.Detail)
		return item.Outcome == reconcile.Done
	})
	inst, err = st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
}

// TestPlainPath_ATerminatingNamespaceOfAUserIsFinishedByAnAdministratorsAdopt: alice,
// with the documented user role, registers a namespace broker with credentials,
// provisions and binds; the namespace is deleted, and its RoleBindings go first, so
// reconcile can no longer check her records against her rights: plain reconcile refuses
// them and names adopt. The admin adopts them (each checked against her own rights), and
// plain reconcile unbinds, deprovisions and lets the namespace go.
func TestPlainPath_ATerminatingNamespaceOfAUserIsFinishedByAnAdministratorsAdopt(t *testing.T) {
	serial(t, initPlainPath)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	catalogNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	plainInit(t, admin, catalogNS)
	plainUser(t, controlplane.AliceUser, ns, catalogNS)
	_, err = admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-auth"},
		StringData: map[string]string{"username": "u", "password": "p"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	alice := func(args ...string) result {
		return kubectl(t, controlplane.AliceUser, append([]string{"catalog", "-n", ns, "--catalog-namespace", catalogNS}, args...)...)
	}
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
	r := alice("register", "team", "--url", b.URL(), "--basic-auth-secret", "team-auth", "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = alice("provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "60s")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = alice("bind", "db", "--name", "app", "--wait", "--timeout", "60s")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, len(b.Bindings()), 1)

	deleteNamespaceUntilFinalizersRemain(t, admin, ns, "the namespace controller to delete what it may, alice's RoleBinding too")
	withCatalog := func(args ...string) []string { return append(args, "--catalog-namespace", catalogNS) }

	sum, r := recRunStrict(t, ns, nil, withCatalog("--max-duration", "30s", "--interval", "200ms")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	item, ok := recKindItem(sum, v1alpha1.KindServiceBinding, ns, "app")
	assert.Assert(t, ok, "%+v", sum.Items)
	assert.Equal(t, item.Outcome, reconcile.Refused, item.Detail)
	st := recStore(t)
	bind, err := st.Bindings().Get(ctx, ns, "app")
	assert.NilError(t, err)
	c := meta.FindStatusCondition(bind.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil, "%+v", bind.Status.Conditions)
	assert.Check(t, is.Contains(c.Message, `the record's author "`+controlplane.AliceUser+`" may not`))
	assert.Check(t, is.Contains(c.Message, `"kubectl catalog adopt -n `+ns+`"`))
	assert.Equal(t, len(b.Bindings()), 1, "nothing was unbound")

	r = kubectl(t, controlplane.AdminUser, "catalog", "-n", ns, "--catalog-namespace", catalogNS, "adopt", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, kind := range []string{"broker", "serviceinstance", "servicebinding"} {
		assert.Check(t, is.Regexp("(?m)^"+kind+` +\S+ +`+controlplane.AliceUser+` +adopted`, r.Stdout))
	}

	instWaitFor(t, "plain reconcile to finish the namespace's records", 90*time.Second, func() bool {
		sum, r := recRunStrict(t, ns, nil, withCatalog("--max-duration", "30s", "--interval", "200ms")...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		for _, it := range sum.Items {
			assert.Assert(t, it.Outcome != reconcile.Refused && it.Outcome != reconcile.Failed, "%s %s: %s", it.Kind, it.Name, it.Detail)
		}
		_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	assert.Equal(t, len(b.Bindings()), 0)
	instAssertBrokerHolds(t, b)
}
