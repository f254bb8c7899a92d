package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// sharingAlice runs "kubectl catalog -n team-a ARGS" as alice.
func sharingAlice(t *testing.T, e *trustEnv, args ...string) result {
	t.Helper()
	return kubectl(t, controlplane.AliceUser, append([]string{"catalog", "-n", e.teamA, "--catalog-namespace", e.catalogNS}, args...)...)
}

// sharingSetup is trustSetup with the roles of sharingRoles, and instance "shop" of
// alice's provisioned (by reconcile, which makes the call).
func sharingSetup(t *testing.T) *trustEnv {
	t.Helper()
	e := trustSetup(t)
	sharingRoles(t, e, false)
	r := sharingAlice(t, e, "provision", "shop", "--class", "object-storage", "--plan", "bucket")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamA)
	inst, err := e.st.Instances().Get(context.Background(), e.teamA, "shop")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	return e
}

// sharingRoles gives alice the documented roles of an instance's owner
// (kubectl-catalog-user in team-a, kubectl-catalog-viewer in the catalog namespace), and
// (with aliceInTeamB) the user role in team-b too; bob, who holds the user role in
// team-b, may then read team-a's records (kubectl-catalog-viewer there), as a consumer
// needs.
func sharingRoles(t *testing.T, e *trustEnv, aliceInTeamB bool) {
	t.Helper()
	grants := [][]string{
		{"create", "rolebinding", "kubectl-catalog-user-alice", "--clusterrole", "kubectl-catalog-user", "--user", controlplane.AliceUser, "-n", e.teamA},
		{"create", "rolebinding", "kubectl-catalog-viewer-alice", "--clusterrole", "kubectl-catalog-viewer", "--user", controlplane.AliceUser, "-n", e.catalogNS},
		{"create", "rolebinding", "kubectl-catalog-viewer-bob", "--clusterrole", "kubectl-catalog-viewer", "--user", controlplane.BobUser, "-n", e.teamA},
	}
	if aliceInTeamB {
		grants = append(grants, []string{"create", "rolebinding", "kubectl-catalog-user-alice", "--clusterrole", "kubectl-catalog-user", "--user", controlplane.AliceUser, "-n", e.teamB})
	}
	for _, args := range grants {
		r := kubectl(t, controlplane.AdminUser, args...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	instWaitFor(t, "the role bindings to take effect", 30*time.Second, func() bool {
		return kubectl(t, controlplane.BobUser, "auth", "can-i", "list", "configmaps", "-n", e.teamA).ExitCode == 0 &&
			kubectl(t, controlplane.AliceUser, "auth", "can-i", "list", "configmaps", "-n", e.catalogNS).ExitCode == 0 &&
			(!aliceInTeamB || kubectl(t, controlplane.AliceUser, "auth", "can-i", "create", "secrets", "-n", e.teamB).ExitCode == 0)
	})
}

// sharingBobBinds has alice share "shop" with team-b and bob bind it there as "shop",
// through reconcile; it returns the binding, bound.
func sharingBobBinds(t *testing.T, e *trustEnv) *v1alpha1.ServiceBinding {
	t.Helper()
	r := sharingAlice(t, e, "share", "shop", "--to-namespace", e.teamB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = trustBob(t, e, "bind", e.teamA+"/shop", "--name", "shop")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamB)
	b, err := e.st.Bindings().Get(context.Background(), e.teamB, "shop")
	assert.NilError(t, err)
	assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady, "%+v", b.Status.Conditions)
	return b
}

// TestSharing_TwoUsers_ShareBindUnshare proves sharing on the real control plane with
// the trust policy in force and two non-admin users holding only the documented roles:
// alice (kubectl-catalog-user in team-a) owns an instance; bob (kubectl-catalog-user in
// team-b, and kubectl-catalog-viewer in team-a to read the instance) cannot bind it
// until alice shares it, then binds it from team-b (reconcile makes the broker call his
// commands may not); alice's unshare removes bob's binding (Secret and broker binding);
// a shared instance is not deprovisioned; bad input changes nothing.
func TestSharing_TwoUsers_ShareBindUnshare(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := sharingSetup(t)
	ctx := context.Background()

	t.Run("bob cannot bind an instance not shared with team-b", func(t *testing.T) {
		before := snapshotRecords(t, e.teamA, e.teamB)
		r := trustBob(t, e, "bind", e.teamA+"/shop")
		assert.Assert(t, r.ExitCode != 0)
		assert.Assert(t, is.Contains(r.Stderr, fmt.Sprintf("not shared with namespace %q", e.teamB)), r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, fmt.Sprintf("kubectl catalog share shop --to-namespace %s -n %s", e.teamB, e.teamA)), r.Stderr)
		assert.DeepEqual(t, snapshotRecords(t, e.teamA, e.teamB), before)
	})

	t.Run("bad input: sharing to a namespace that does not exist, or from bob", func(t *testing.T) {
		before := snapshotRecords(t, e.teamA, e.teamB)
		r := instCatalog(t, e.teamA, "share", "shop", "--to-namespace", "no-such-namespace", "--catalog-namespace", e.catalogNS)
		assert.Assert(t, r.ExitCode != 0)
		assert.Assert(t, is.Contains(r.Stderr, `namespace "no-such-namespace" does not exist`), r.Stderr)
		r = sharingAlice(t, e, "share", "shop")
		assert.Equal(t, r.ExitCode, 2, r.Stderr)
		r = sharingAlice(t, e, "share", "shop", "--to-namespace", "Bad_Name")
		assert.Equal(t, r.ExitCode, 2, r.Stderr)
		// bob may read team-a's records, not write them: he cannot share himself in.
		r = kubectl(t, controlplane.BobUser, "catalog", "-n", e.teamA, "--catalog-namespace", e.catalogNS, "share", "shop", "--to-namespace", e.teamB)
		assert.Assert(t, r.ExitCode != 0)
		assert.Assert(t, is.Contains(r.Stderr, "forbidden"), r.Stderr)
		assert.DeepEqual(t, snapshotRecords(t, e.teamA, e.teamB), before)
	})

	t.Run("alice shares; bob binds from team-b through reconcile", func(t *testing.T) {
		before := len(e.b.RequestsFor(broker.OpBind))
		b := sharingBobBinds(t, e)
		inst, err := e.st.Instances().Get(ctx, e.teamA, "shop")
		assert.NilError(t, err)
		assert.DeepEqual(t, inst.Spec.SharedWith, []string{e.teamB})
		assert.Equal(t, store.AuthorOf(inst).Username, controlplane.AliceUser)
		assert.Equal(t, b.Spec.InstanceNamespace, e.teamA)
		assert.Equal(t, len(e.b.RequestsFor(broker.OpBind)), before+1)
		s, err := e.admin.CoreV1().Secrets(e.teamB).Get(ctx, "shop", metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Assert(t, len(s.Data) > 0)

		r := sharingAlice(t, e, "describe", "instance", "shop")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, "Shared with:      "+e.teamB), r.Stdout)
		assert.Assert(t, is.Contains(r.Stdout, "Not listed:"), "alice may not list team-b's bindings: %s", r.Stdout)
		r = instCatalog(t, e.teamA, "describe", "instance", "shop", "--catalog-namespace", e.catalogNS)
		assert.Assert(t, is.Contains(r.Stdout, e.teamB+": shop"), r.Stdout)
	})

	t.Run("a shared instance is not deprovisioned", func(t *testing.T) {
		before := snapshotRecords(t, e.teamA, e.teamB)
		r := sharingAlice(t, e, "deprovision", "shop", "--yes")
		assert.Assert(t, r.ExitCode != 0)
		assert.Assert(t, is.Contains(r.Stderr, "unshare it from each first"), r.Stderr)
		assert.DeepEqual(t, snapshotRecords(t, e.teamA, e.teamB), before)
	})

	t.Run("unshare removes bob's binding, its Secret and the broker's binding", func(t *testing.T) {
		r := sharingAlice(t, e, "unshare", "shop", "--from-namespace", e.teamB)
		assert.Equal(t, r.ExitCode, 2, "outside a terminal unshare needs --yes: %s", r.Stderr)
		r = sharingAlice(t, e, "unshare", "shop", "--from-namespace", e.teamB, "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, "reconcile removes them"), r.Stderr)
		// Alice then asks for an update (the cluster broker's call is left to reconcile):
		// its success records her spec as applied, and the instance's step, which revokes
		// only a spec new to it, revokes nothing. Bob's binding's own step must.
		r = sharingAlice(t, e, "touch", "instance", "shop")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)

		unbinds := len(e.b.RequestsFor(broker.OpUnbind))
		trustReconcile(t, e, e.teamA)
		trustReconcile(t, e, e.teamB) // bob's binding finds its grant gone: revoked, then unbound
		_, err := e.st.Bindings().Get(ctx, e.teamB, "shop")
		assert.Assert(t, store.IsNotFound(err), "bob's binding is gone: %v", err)
		_, err = e.admin.CoreV1().Secrets(e.teamB).Get(ctx, "shop", metav1.GetOptions{})
		assert.Assert(t, err != nil, "its Secret is gone")
		assert.Equal(t, len(e.b.RequestsFor(broker.OpUnbind)), unbinds+1)

		before := snapshotRecords(t, e.teamA, e.teamB)
		r = trustBob(t, e, "bind", e.teamA+"/shop", "--name", "again")
		assert.Assert(t, r.ExitCode != 0)
		assert.Assert(t, is.Contains(r.Stderr, "not shared"), r.Stderr)
		assert.DeepEqual(t, snapshotRecords(t, e.teamA, e.teamB), before)
	})

	t.Run("a binding record bob writes by hand for the unshared instance is refused, nothing sent", func(t *testing.T) {
		binds := len(e.b.RequestsFor(broker.OpBind))
		bob := writerStoreFor(t, controlplane.BobUser, e.catalogNS)
		_, err := bob.Bindings().Create(store.WithIntent(ctx), engine.NewBinding(engine.BindingIntent{
			Namespace: e.teamB, Name: "forged", Instance: "shop", InstanceNamespace: e.teamA, SecretName: "forged",
		}))
		assert.NilError(t, err)
		trustReconcile(t, e, e.teamB)
		b, err := e.st.Bindings().Get(ctx, e.teamB, "forged")
		assert.NilError(t, err)
		var reason string
		for _, c := range b.Status.Conditions {
			if c.Type == v1alpha1.ConditionRefused {
				reason = c.Reason
			}
		}
		assert.Equal(t, reason, engine.ReasonRefusedNotShared, "%+v", b.Status.Conditions)
		assert.Equal(t, len(e.b.RequestsFor(broker.OpBind)), binds)
		r := trustBob(t, e, "unbind", "forged", "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	})
}

// writerStoreFor is a store writing as user, stamping the trust token like kubectl
// catalog does.
func writerStoreFor(t *testing.T, user, catalogNS string) *store.Store {
	t.Helper()
	c, err := cp.Client(user)
	assert.NilError(t, err)
	return store.New(c, nil, store.WithClusterIdentity(c), store.WithClusterTrustToken(c, catalogNS))
}

// TestSharing_EveryRoleBrokerScopeAndSpelling_BindsAndUnbinds binds a shared instance
// from the other namespace, with the trust policy in force, as every role the docs list
// (docs/security.md "Sharing" and "Roles"): the owner of the instance's namespace who also
// holds the user role in the consumer's (alice), a consumer holding the documented roles
// (bob: the user role in team-b, the viewer role in team-a), and the administrator; with
// an instance of a cluster broker (in the catalog namespace) and of a namespace broker
// (in the owner's namespace, registered by the owner); and in both spellings of bind
// (team-a/INSTANCE, and --instance-namespace). Each binding's Secret lands in team-b,
// and unbind removes it and the broker's binding. A bind whose broker call the user's
// command may not make is left to reconcile, which makes it.
func TestSharing_EveryRoleBrokerScopeAndSpelling_BindsAndUnbinds(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	sharingRoles(t, e, true)
	ctx := context.Background()

	// The namespace brokers of team-a, the administrator's and alice's, with their
	// credentials there; the cluster id, which whoever sets the catalog up first stores
	// (alice may not write in the catalog namespace).
	_, err := e.admin.CoreV1().Secrets(e.teamA).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-auth"},
		StringData: map[string]string{"username": "u", "password": "p"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = e.admin.CoreV1().ConfigMaps(e.catalogNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap},
		Data: map[string]string{kube.ClusterIDKey: "e2e-sharing-matrix"}}, metav1.CreateOptions{})
	assert.Check(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)

	// as runs "kubectl catalog -n NS ARGS" as user.
	as := func(t *testing.T, user, ns string, args ...string) result {
		t.Helper()
		return kubectl(t, user, append([]string{"catalog", "-n", ns, "--catalog-namespace", e.catalogNS}, args...)...)
	}
	owners := []string{controlplane.AliceUser, controlplane.AdminUser}
	nsBroker := map[string]string{controlplane.AliceUser: "alice-demo", controlplane.AdminUser: "demo"}
	classOf := map[string]map[string]string{} // owner -> scope -> the class to provision
	for _, owner := range owners {
		r := as(t, owner, e.teamA, "register", nsBroker[owner], "--url", e.brokerURL, "--basic-auth-secret", "demo-auth", "--scope", "namespace")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		classOf[owner] = map[string]string{"cluster": "acme/postgresql", "namespace": nsBroker[owner] + "/postgresql"}
	}

	// Each owner's instance of each broker scope, provisioned and shared with team-b.
	// alice's commands may not read the cluster broker's credentials: reconcile
	// provisions hers.
	instance := func(owner, scope string) string {
		if owner == controlplane.AdminUser {
			return "adm-" + scope
		}
		return "alice-" + scope
	}
	for _, owner := range owners {
		for _, scope := range []string{"cluster", "namespace"} {
			r := as(t, owner, e.teamA, "provision", instance(owner, scope), "--class", classOf[owner][scope], "--plan", "hobby")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
		}
	}
	trustReconcile(t, e, e.teamA)
	for _, owner := range owners {
		for _, scope := range []string{"cluster", "namespace"} {
			name := instance(owner, scope)
			inst, err := e.st.Instances().Get(ctx, e.teamA, name)
			assert.NilError(t, err)
			assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady, "%s: %+v", name, inst.Status.Conditions)
			r := as(t, owner, e.teamA, "share", name, "--to-namespace", e.teamB)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			assert.Assert(t, is.Contains(r.Stderr, fmt.Sprintf(`bind it there with "kubectl catalog bind %s/%s -n %s"`, e.teamA, name, e.teamB)), r.Stderr)
		}
	}

	// settle waits until done holds, running reconcile in team-b for what the users'
	// commands left to it; one subtest's run does the work of all that wait meanwhile.
	var reconciling sync.Mutex
	settle := func(t *testing.T, what string, done func() bool) {
		t.Helper()
		reconciling.Lock()
		defer reconciling.Unlock()
		instWaitFor(t, what, 60*time.Second, func() bool {
			if done() {
				return true
			}
			trustReconcile(t, e, e.teamB)
			return done()
		})
	}

	for _, role := range []struct{ name, owner, binder string }{
		{"owner with the user role in both namespaces", controlplane.AliceUser, controlplane.AliceUser},
		{"consumer with the documented roles", controlplane.AliceUser, controlplane.BobUser},
		{"administrator", controlplane.AdminUser, controlplane.AdminUser},
	} {
		for _, scope := range []string{"cluster", "namespace"} {
			for _, spelling := range []struct{ name, key string }{{"spelled NS-A slash INSTANCE", "slash"}, {"spelled with --instance-namespace", "flag"}} {
				t.Run(role.name+"/"+scope+" broker/"+spelling.name, func(t *testing.T) {
					t.Parallel()
					inst := instance(role.owner, scope)
					name := role.binder + "-" + scope + "-" + spelling.key
					args := []string{"bind", e.teamA + "/" + inst, "--name", name}
					if spelling.key == "flag" {
						args = []string{"bind", inst, "--instance-namespace", e.teamA, "--name", name}
					}
					r := as(t, role.binder, e.teamB, args...)
					assert.Equal(t, r.ExitCode, 0, r.Stderr)

					var b *v1alpha1.ServiceBinding
					settle(t, "binding "+name+" to be ready", func() bool {
						var err error
						b, err = e.st.Bindings().Get(ctx, e.teamB, name)
						assert.NilError(t, err)
						return b.Status.Phase == v1alpha1.PhaseReady
					})
					assert.Equal(t, b.Spec.InstanceNamespace, e.teamA)
					assert.Equal(t, b.Spec.InstanceName, inst)
					assert.Equal(t, store.AuthorOf(b).Username, role.binder, "the binding is its binder's own")
					s, err := e.admin.CoreV1().Secrets(e.teamB).Get(ctx, name, metav1.GetOptions{})
					assert.NilError(t, err)
					assert.Assert(t, len(s.Data) > 0)
					id := b.CurrentExternalID()
					_, held := e.b.Binding(id)
					assert.Assert(t, held, "the broker holds binding %s", id)

					r = as(t, role.binder, e.teamB, "unbind", name, "--yes")
					assert.Equal(t, r.ExitCode, 0, r.Stderr)
					settle(t, "binding "+name+" to be gone", func() bool {
						_, err := e.st.Bindings().Get(ctx, e.teamB, name)
						return store.IsNotFound(err)
					})
					_, err = e.admin.CoreV1().Secrets(e.teamB).Get(ctx, name, metav1.GetOptions{})
					assert.Assert(t, apierrors.IsNotFound(err), "its Secret is gone: %v", err)
					_, held = e.b.Binding(id)
					assert.Assert(t, !held, "the broker no longer holds binding %s", id)
				})
			}
		}
	}
}
