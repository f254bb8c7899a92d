package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestMove_NamespaceToAnotherCluster_BrokerSeesNoCreateNoDelete moves a namespace's
// services between two control planes sharing one broker: a postgresql instance
// (retrievable, allow_context_updates) with a binding, and a redis instance (neither).
// The export is moved in on the new cluster with no provision and no bind, GET instance
// and GET binding only where the service serves them, and one context-only update for
// the instance that allows it; release on the old cluster is refused without the new
// cluster and forgets the records without a broker call once confirmed, after which a
// deprovision there reaches no broker, while the new cluster unbinds and deprovisions.
// Bad input (a missing namespace or instance, an id the broker does not hold, a release
// confirmed by the old cluster itself) exits non-zero, names the object and the fix, and
// changes nothing.
func TestMove_NamespaceToAnotherCluster_BrokerSeesNoCreateNoDelete(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	ctx := context.Background()
	// The new cluster starts while the old one's services are made.
	started := make(chan error, 1)
	var newCP *controlplane.ControlPlane
	go func() {
		var err error
		newCP, err = controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir()})
		started <- err
	}()
	t.Cleanup(func() {
		if newCP != nil {
			assert.Check(t, newCP.Stop())
		}
	})

	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", RetryAfter: -1})
	ns := cp.NewNamespace(t)
	oldAdmin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	brokerAuth := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "broker-auth"}, StringData: map[string]string{"username": "u", "password": "p"}}
	_, err = oldAdmin.CoreV1().Secrets(ns).Create(ctx, brokerAuth, metav1.CreateOptions{})
	assert.NilError(t, err)
	old := func(args ...string) result { t.Helper(); return instCatalog(t, ns, args...) }
	ok := func(r result) { t.Helper(); assert.Equal(t, r.ExitCode, 0, r.Stderr) }
	ok(old("register", "acme", "--url", b.URL(), "--basic-auth-secret", "broker-auth", "--scope", "namespace"))
	// Ids given with --external-id move as they are; ids kubectl catalog generates (db,
	// app, and "generated", refused below) move only with the old cluster's move ticket.
	ok(old("provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=2", "--wait"))
	ok(old("provision", "cache", "--class", "redis", "--plan", "cache-small", "--external-id", uuid.NewString(), "--wait"))
	ok(old("bind", "db", "--name", "app", "--wait"))
	ok(old("provision", "generated", "--class", "postgresql", "--plan", "hobby", "--wait"))
	oldSt := store.New(oldAdmin, nil)
	dbID := getInstance(t, oldSt, ns, "db").CurrentExternalID()
	cacheID := getInstance(t, oldSt, ns, "cache").CurrentExternalID()
	appB, err := oldSt.Bindings().Get(ctx, ns, "app")
	assert.NilError(t, err)
	appID := appB.CurrentExternalID()
	assert.Assert(t, v1alpha1.IsBoundID(dbID) && v1alpha1.IsBoundID(appID), "generated ids")

	// Export: the records with their ids, no credentials.
	exp := old("export", "db", "cache")
	ok(exp)
	for _, want := range []string{dbID, cacheID, appID, engine.AnnotationMovedFrom, "secretRef"} {
		assert.Assert(t, strings.Contains(exp.Stdout, want), "export lacks %q:\n%s", want, exp.Stdout)
	}
	assert.Assert(t, !strings.Contains(exp.Stdout, "password: p"), "no credentials are exported")
	file := filepath.Join(t.TempDir(), "export.yaml")
	assert.NilError(t, os.WriteFile(file, []byte(exp.Stdout), 0o600))

	// Bad input on the old cluster: exit non-zero, the object named.
	r := kubectl(t, controlplane.AdminUser, "catalog", "-n", ns+"-missing", "export")
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, `namespace "`+ns+`-missing" has no instances`))
	r = old("export", "nope")
	assert.Equal(t, r.ExitCode, 1)
	assert.Assert(t, is.Contains(r.Stderr, `instance "nope" does not exist`))

	assert.NilError(t, <-started)
	newAdmin, err := newCP.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = newAdmin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = newAdmin.CoreV1().Secrets(ns).Create(ctx, brokerAuth, metav1.CreateOptions{})
	assert.NilError(t, err)
	newKubeconfig := newCP.Kubeconfig(controlplane.AdminUser)
	newEnv := append(os.Environ(), "KUBECONFIG="+newKubeconfig, "HOME="+t.TempDir())
	plugin := filepath.Join(binDir, "kubectl-catalog")
	onNew := func(args ...string) result {
		t.Helper()
		return runWith(t, newEnv, plugin, append([]string{"-n", ns}, args...)...)
	}
	newSt := store.New(newAdmin, nil)
	ok(runWith(t, newEnv, plugin, "init"))
	ok(onNew("register", "acme", "--url", b.URL(), "--basic-auth-secret", "broker-auth", "--scope", "namespace"))

	// An export naming an id the broker does not hold is refused, and nothing is written.
	b.ClearRequests()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	assert.NilError(t, os.WriteFile(bad, []byte(strings.ReplaceAll(exp.Stdout, dbID, "00000000-0000-4000-8000-000000000000")), 0o600))
	r = onNew("apply", "-f", bad)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "holds no instance with id 00000000-0000-4000-8000-000000000000"))
	insts, err := newSt.Instances().List(ctx, ns, store.Filter{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(insts, 0), "nothing written on the new cluster")
	assertBrokerChanged(t, b, 0)
	gen := old("export", "generated")
	ok(gen)
	genFile := filepath.Join(t.TempDir(), "generated.yaml")
	assert.NilError(t, os.WriteFile(genFile, []byte(gen.Stdout), 0o600))
	r = onNew("apply", "-f", genFile)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `instance "generated" cannot be moved in: its OSB id`))
	assert.Assert(t, is.Contains(r.Stderr, "holds no move ticket"))
	insts, err = newSt.Instances().List(ctx, ns, store.Filter{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(insts, 0), "nothing written on the new cluster")

	// The move ticket: written on the old cluster for this cluster and namespace, with
	// db's and app's ids, not generated's.
	newClusterID := clusterIDOf(t, newAdmin)
	r = old("export", "db", "cache", "--to-cluster-id", newClusterID)
	assert.Equal(t, r.ExitCode, 2, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "--to-namespace"))
	ok(old("export", "db", "cache", "--to-cluster-id", newClusterID, "--to-namespace", ns))
	oldKubeconfig := cp.Kubeconfig(controlplane.AdminUser)
	r = onNew("apply", "-f", genFile, "--moved-from-kubeconfig", oldKubeconfig)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "the move ticket does not name it"))
	// The same export applied in another namespace of the new cluster is refused: the
	// ticket names ns only.
	other := ns + "-copy"
	_, err = newAdmin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = newAdmin.CoreV1().Secrets(other).Create(ctx, brokerAuth, metav1.CreateOptions{})
	assert.NilError(t, err)
	ok(runWith(t, newEnv, plugin, "-n", other, "register", "acme", "--url", b.URL(), "--basic-auth-secret", "broker-auth", "--scope", "namespace"))
	copied := filepath.Join(t.TempDir(), "copy.yaml")
	assert.NilError(t, os.WriteFile(copied, []byte(strings.ReplaceAll(exp.Stdout, "namespace: "+ns+"\n", "namespace: "+other+"\n")), 0o600))
	r = runWith(t, newEnv, plugin, "-n", other, "apply", "-f", copied, "--moved-from-kubeconfig", oldKubeconfig)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `instance "db" cannot be moved in`), r.Stderr)
	insts, err = newSt.Instances().List(ctx, other, store.Filter{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(insts, 0), "nothing written in the other namespace")
	insts, err = newSt.Instances().List(ctx, ns, store.Filter{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(insts, 0), "nothing written on the new cluster")
	assertBrokerChanged(t, b, 0)

	// The ticket alone is not enough: the new cluster's Namespace must say it continues
	// the old namespace (an annotation only an administrator writes), or a record written
	// directly in any namespace could claim the old namespace's ids.
	r = onNew("apply", "-f", file, "--moved-from-kubeconfig", oldKubeconfig)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "does not say it continues"), r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "kubectl annotate namespace "+ns), r.Stderr)
	insts, err = newSt.Instances().List(ctx, ns, store.Filter{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(insts, 0), "nothing written on the new cluster")
	oldNs, err := oldAdmin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	assert.NilError(t, err)
	newNs, err := newAdmin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	assert.NilError(t, err)
	if newNs.Annotations == nil {
		newNs.Annotations = map[string]string{}
	}
	newNs.Annotations[v1alpha1.AnnotationMovedKeys] = clusterIDOf(t, oldAdmin) + "/" + string(oldNs.UID)
	_, err = newAdmin.CoreV1().Namespaces().Update(ctx, newNs, metav1.UpdateOptions{})
	assert.NilError(t, err)

	// The move in: no create, no delete, one context update where allowed.
	b.ClearRequests()
	r = onNew("apply", "-f", file, "--wait")
	assert.Equal(t, r.ExitCode, 1, "generated ids need the ticket: %s", r.Stderr)
	r = onNew("apply", "-f", file, "--wait", "--moved-from-kubeconfig", oldKubeconfig)
	ok(r)
	assert.Assert(t, is.Contains(r.Stderr, "does not allow context updates"))
	assert.Assert(t, is.Contains(r.Stderr, "taken on your word"))
	assertBrokerChanged(t, b, 1)
	updates := b.RequestsFor(broker.OpUpdate)
	assert.Equal(t, updates[0].InstanceID, dbID)
	var body map[string]any
	assert.NilError(t, json.Unmarshal(updates[0].Body, &body))
	assert.Assert(t, body["plan_id"] == nil && body["parameters"] == nil, "a context-only update: %s", updates[0].Body)
	assert.Equal(t, body["context"].(map[string]any)["clusterid"], newClusterID)
	assert.Assert(t, is.Len(requestsFor(b, broker.OpGetInstance, dbID), 2), "checked by the plan and by the move")
	assert.Assert(t, is.Len(requestsFor(b, broker.OpGetInstance, cacheID), 0), "redis does not serve GET instance")
	assert.Assert(t, len(b.RequestsFor(broker.OpGetBinding)) > 0)
	moved, err := newSt.Bindings().Get(ctx, ns, "app")
	assert.NilError(t, err)
	assert.Equal(t, moved.Status.Phase, v1alpha1.PhaseReady)
	secret, err := newAdmin.CoreV1().Secrets(ns).Get(ctx, "app", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Assert(t, len(secret.Data["password"]) > 0, "the credentials came from GET binding")
	for _, name := range []string{"db", "cache"} {
		inst := getInstance(t, newSt, ns, name)
		assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady, name)
		assert.Assert(t, !inst.HasPendingWork(), name)
	}

	// An apply interrupted after the records were written: cache without its id claim,
	// app's Secret still owned by db's record. Applying again finishes both, with no
	// change at the broker.
	cacheRec := getInstance(t, newSt, ns, "cache")
	claims := newAdmin.CoreV1().ConfigMaps(ns)
	claimName := store.IDClaimName(v1alpha1.KindServiceInstance, cacheRec.UID, cacheID)
	claim, err := claims.Get(ctx, claimName, metav1.GetOptions{})
	assert.NilError(t, err)
	claim.Finalizers = nil
	_, err = claims.Update(ctx, claim, metav1.UpdateOptions{})
	assert.NilError(t, err)
	assert.NilError(t, claims.Delete(ctx, claimName, metav1.DeleteOptions{}))
	dbRec := getInstance(t, newSt, ns, "db")
	yes := true
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: store.ConfigMapName(v1alpha1.KindServiceInstance, "db"), UID: dbRec.UID, Controller: &yes}}
	_, err = newAdmin.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{})
	assert.NilError(t, err)
	// Not released while so: nothing but applying again would finish it.
	r = old("release", "db", "cache", "--confirm-with-kubeconfig", newKubeconfig)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "interrupted before the Secret"), r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "apply the export there again"), r.Stderr)
	getInstance(t, oldSt, ns, "db")
	b.ClearRequests()
	r = onNew("apply", "-f", file, "--moved-from-kubeconfig", oldKubeconfig)
	ok(r)
	assert.Assert(t, is.Contains(r.Stderr, "an earlier apply of this move was interrupted"), r.Stderr)
	assertBrokerChanged(t, b, 0)
	_, err = claims.Get(ctx, claimName, metav1.GetOptions{})
	assert.NilError(t, err, "cache's id claim is made again")
	secret, err = newAdmin.CoreV1().Secrets(ns).Get(ctx, "app", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Assert(t, store.OwnedBy(secret, moved) && len(secret.OwnerReferences) == 1, "app owns its Secret: %v", secret.OwnerReferences)

	// Release on the old cluster: refused without the new cluster, or confirmed by itself.
	b.ClearRequests()
	r = old("release")
	assert.Equal(t, r.ExitCode, 2)
	assert.Assert(t, is.Contains(r.Stderr, "--confirm-with-kubeconfig"))
	r = old("release", "--confirm-with-kubeconfig", cp.Kubeconfig(controlplane.AdminUser))
	assert.Equal(t, r.ExitCode, 2)
	assert.Assert(t, is.Contains(r.Stderr, "is this cluster"))
	getInstance(t, oldSt, ns, "db")
	r = old("release", "db", "cache", "--confirm-with-kubeconfig", newKubeconfig)
	ok(r)
	for _, name := range []string{"db", "cache"} {
		_, err := oldSt.Instances().Get(ctx, ns, name)
		assert.Assert(t, store.IsNotFound(err), "%s: %v", name, err)
	}
	_, err = oldAdmin.CoreV1().Secrets(ns).Get(ctx, "app", metav1.GetOptions{})
	assert.Assert(t, err != nil, "the old cluster's copy of the credentials goes")
	// A deprovision on the old cluster after the release reaches no broker.
	r = old("deprovision", "db", "--yes", "--wait")
	assert.Assert(t, r.ExitCode != 0)
	assert.Assert(t, is.Len(b.Requests(), 0), "the release and the deprovision after it call no broker")

	// The new cluster owns them: unbind and deprovision reach the broker.
	ok(onNew("unbind", "app", "--yes", "--wait"))
	ok(onNew("deprovision", "db", "--yes", "--wait"))
	ok(onNew("deprovision", "cache", "--yes", "--wait"))
	for _, id := range []string{dbID, cacheID} {
		_, held := b.Instance(id)
		assert.Assert(t, !held, id)
	}
	_, held := b.Binding(appID)
	assert.Assert(t, !held)
}

func getInstance(t *testing.T, st *store.Store, ns, name string) *v1alpha1.ServiceInstance {
	t.Helper()
	inst, err := st.Instances().Get(context.Background(), ns, name)
	assert.NilError(t, err)
	return inst
}

// assertBrokerChanged checks that the broker was asked to create and delete nothing,
// and to update exactly updates times.
func assertBrokerChanged(t *testing.T, b *broker.Broker, updates int) {
	t.Helper()
	for _, op := range []broker.Op{broker.OpProvision, broker.OpDeprovision, broker.OpBind, broker.OpUnbind} {
		assert.Assert(t, is.Len(b.RequestsFor(op), 0), "%s", op)
	}
	assert.Assert(t, is.Len(b.RequestsFor(broker.OpUpdate), updates))
}

func requestsFor(b *broker.Broker, op broker.Op, instanceID string) []broker.RecordedRequest {
	var out []broker.RecordedRequest
	for _, r := range b.RequestsFor(op) {
		if r.InstanceID == instanceID {
			out = append(out, r)
		}
	}
	return out
}

// clusterIDOf is the cluster id the catalog keeps in the catalog namespace.
func clusterIDOf(t *testing.T, admin kubernetes.Interface) string {
	t.Helper()
	cm, err := admin.CoreV1().ConfigMaps(cmdutil.DefaultCatalogNamespace).Get(context.Background(), kube.ClusterIDConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	return cm.Data[kube.ClusterIDKey]
}
