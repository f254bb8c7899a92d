package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestXNS_TheCrossNamespaceRule has alice (the documented user role in team-a, viewer of
// the catalog namespace, nothing in team-b) and bob (the user role in team-b) try what
// docs/security.md's cross-namespace rule forbids, with reconcile running on the
// ServiceAccount "reconcile install" creates: a record of one namespace affects an
// object of another only through a grant the other's owner wrote and that is in force.
func TestXNS_TheCrossNamespaceRule(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := sharingSetup(t)
	ctx := context.Background()
	xnsRealRoles(t, e)
	xnsNamespaceBroker(t, e)
	bucket := e.class.PlanByName("bucket")

	for _, tc := range []struct {
		name, class string
		async       bool
	}{
		{name: "cluster broker, synchronous", class: "acme/object-storage"},
		{name: "namespace broker, asynchronous", class: "team/object-storage", async: true},
	} {
		t.Run("a forged binding pins no instance of another tenant: "+tc.name, func(t *testing.T) {
			if tc.async {
				xnsAsync(t, e, bucket.ID)
			}
			db := "pinned-" + strings.Fields(tc.name)[0]
			r := trustBob(t, e, "provision", db, "--class", tc.class, "--plan", "bucket")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			xnsReconcileUntil(t, e, []string{e.teamB}, db+" to be ready", func() bool {
				inst, err := e.st.Instances().Get(ctx, e.teamB, db)
				return err == nil && inst.Status.Phase == v1alpha1.PhaseReady
			})
			got, err := e.st.Instances().Get(ctx, e.teamB, db)
			assert.NilError(t, err)
			id := got.CurrentExternalID()

			// alice guesses the name: one record in her own namespace, stamped as hers.
			pin := xnsForgedBinding(e, "pin-"+db, e.teamB, db)
			pin.Status.Retired = []string{"not-mine"}
			tenantForge(t, e, pin, func(cm *corev1.ConfigMap) { cm.Finalizers = []string{store.Finalizer} })

			if tc.async {
				// bob may read his namespace broker's credentials, so his own deprovision
				// would make the call (and may not list alice's namespace); a deletion of
				// the record, as a namespace's deletion makes it, is reconcile's.
				bob, err := cp.Client(controlplane.BobUser)
				assert.NilError(t, err)
				assert.NilError(t, bob.CoreV1().ConfigMaps(e.teamB).Delete(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, db), metav1.DeleteOptions{}))
			} else {
				r = trustBob(t, e, "deprovision", db, "--yes")
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
			}
			xnsReconcileUntil(t, e, []string{e.teamB}, "bob's deprovision to reach the broker", func() bool {
				_, err := e.st.Instances().Get(ctx, e.teamB, db)
				return store.IsNotFound(err)
			})
			assert.Check(t, slices.ContainsFunc(e.b.RequestsFor(broker.OpDeprovision), func(r broker.RecordedRequest) bool { return r.InstanceID == id }),
				"the DELETE of bob's instance reached the broker")
			_, held := e.b.Instance(id)
			assert.Check(t, !held, "bob's instance is no longer at the broker")
			cur, err := e.st.Bindings().Get(ctx, e.teamA, pin.Name)
			assert.NilError(t, err)
			assert.Check(t, cur.DeletionTimestamp == nil, "alice's record is none of bob's instance's business: not touched")
		})
	}

	t.Run("a junk retired id keeps neither a revoked binding nor the owner's deletion waiting", func(t *testing.T) {
		b := sharingBobBinds(t, e)
		boundID := b.Status.Bound.BindingID
		// bob may write his own binding's ConfigMap: a junk id in status.retired.
		bob, err := cp.Client(controlplane.BobUser)
		assert.NilError(t, err)
		cm, err := bob.CoreV1().ConfigMaps(e.teamB).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceBinding, "shop"), metav1.GetOptions{})
		assert.NilError(t, err)
		rec, err := store.Decode(cm)
		assert.NilError(t, err)
		edited := rec.(*v1alpha1.ServiceBinding)
		edited.Status.Retired = append(edited.Status.Retired, "not-mine")
		enc, err := store.Encode(edited)
		assert.NilError(t, err)
		cm.Data[store.StatusDataKey] = enc.Data[store.StatusDataKey]
		_, err = bob.CoreV1().ConfigMaps(e.teamB).Update(ctx, cm, metav1.UpdateOptions{})
		assert.NilError(t, err, "bob edits his binding's status")

		r := sharingAlice(t, e, "unshare", "shop", "--from-namespace", e.teamB, "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		xnsReconcileUntil(t, e, []string{e.teamA, e.teamB}, "bob's binding to be unbound", func() bool {
			_, err := e.st.Bindings().Get(ctx, e.teamB, "shop")
			return store.IsNotFound(err)
		})
		_, held := e.b.Binding(boundID)
		assert.Check(t, !held, "bob's credentials are unbound at the broker")
		for _, req := range e.b.RequestsFor(broker.OpUnbind) {
			assert.Check(t, req.BindingID != "not-mine", "the junk id is never sent: %+v", req)
		}
		evs := xnsEvents(t, e, e.teamB, store.ConfigMapName(v1alpha1.KindServiceBinding, "shop"))
		assert.Check(t, is.Contains(evs, `binding "shop" in namespace "`+e.teamB+`" lists OSB id(s) [not-mine]`), "the forgotten id has a visible reason")

		inst, err := e.st.Instances().Get(ctx, e.teamA, "shop")
		assert.NilError(t, err)
		id := inst.CurrentExternalID()
		r = sharingAlice(t, e, "deprovision", "shop", "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		xnsReconcileUntil(t, e, []string{e.teamA}, "alice's deprovision to reach the broker", func() bool {
			_, err := e.st.Instances().Get(ctx, e.teamA, "shop")
			return store.IsNotFound(err)
		})
		assert.Check(t, slices.ContainsFunc(e.b.RequestsFor(broker.OpDeprovision), func(r broker.RecordedRequest) bool { return r.InstanceID == id }))
	})

	t.Run("a forged binding is no oracle for another namespace's instances and grants", func(t *testing.T) {
		// bob's instances: one shared with nobody, one shared with the victim's
		// namespace under an allowed-namespaces list; and a name nothing uses.
		for _, args := range [][]string{
			{"provision", "quiet", "--class", "acme/object-storage", "--plan", "bucket"},
			{"provision", "granted", "--class", "acme/object-storage", "--plan", "bucket", "--allowed-namespaces", e.teamB + "," + e.victim},
		} {
			r := trustBob(t, e, args...)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
		}
		xnsReconcileUntil(t, e, []string{e.teamB}, "bob's instances to be ready", func() bool {
			for _, name := range []string{"quiet", "granted"} {
				if inst, err := e.st.Instances().Get(ctx, e.teamB, name); err != nil || inst.Status.Phase != v1alpha1.PhaseReady {
					return false
				}
			}
			return true
		})
		r := trustBob(t, e, "share", "granted", "--to-namespace", e.victim)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)

		// Each probe with each status alice may write.
		statuses := map[string]func(*v1alpha1.ServiceBinding){
			"new":     nil,
			"retired": func(b *v1alpha1.ServiceBinding) { b.Status.Retired = []string{"not-mine"} },
			"bound":   func(b *v1alpha1.ServiceBinding) { b.Status.Bound = &v1alpha1.BoundState{BindingID: b.Spec.ExternalID} },
		}
		targets := []string{"absent", "quiet", "granted"}
		for _, target := range targets {
			for st, edit := range statuses {
				b := xnsForgedBinding(e, "probe-"+st+"-"+target, e.teamB, target)
				if edit != nil {
					edit(b)
				}
				tenantForge(t, e, b, func(cm *corev1.ConfigMap) { cm.Finalizers = []string{store.Finalizer} })
			}
		}
		for range 2 {
			trustReconcile(t, e, e.teamA)
		}
		for st := range statuses {
			var first string
			for _, target := range targets {
				name := "probe-" + st + "-" + target
				b, err := e.st.Bindings().Get(ctx, e.teamA, name)
				assert.NilError(t, err)
				var seen []string
				for _, c := range b.Status.Conditions {
					seen = append(seen, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, xnsRetryless(c.Message)))
				}
				seen = append(seen, fmt.Sprintf("phase %s, deleting %v", b.Status.Phase, b.DeletionTimestamp != nil))
				seen = append(seen, xnsEvents(t, e, e.teamA, store.ConfigMapName(v1alpha1.KindServiceBinding, name)))
				all := strings.ReplaceAll(strings.Join(seen, "\n"), name, "PROBE")
				all = strings.ReplaceAll(all, `"`+target+`"`, `"TARGET"`)
				all = strings.ReplaceAll(all, " "+target+" ", " TARGET ")
				assert.Check(t, !strings.Contains(all, e.victim), "%s names whom %s grants: %s", name, target, all)
				if first == "" {
					first = all
					continue
				}
				assert.Equal(t, all, first, "what reconcile writes on %s differs from what it writes on the probe of a missing instance", name)
			}
		}
	})

	t.Run("a binding record of a newer release blocks its instance's deletion; one of an ungranted namespace does not", func(t *testing.T) {
		r := trustBob(t, e, "provision", "upgrade", "--class", "acme/object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		xnsReconcileUntil(t, e, []string{e.teamB}, "the instance to be ready", func() bool {
			inst, err := e.st.Instances().Get(ctx, e.teamB, "upgrade")
			return err == nil && inst.Status.Phase == v1alpha1.PhaseReady
		})
		inst, err := e.st.Instances().Get(ctx, e.teamB, "upgrade")
		assert.NilError(t, err)
		id := inst.CurrentExternalID()
		bob, err := cp.Client(controlplane.BobUser)
		assert.NilError(t, err)
		newer := func(ns, author string) *corev1.ConfigMap {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: store.ConfigMapName(v1alpha1.KindServiceBinding, "newer"),
				Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceBinding, store.LabelManagedBy: store.ManagedBy,
					store.LabelInstance: "upgrade"},
				Annotations: map[string]string{store.AnnotationFormat: "99", store.AnnotationAuthor: author,
					store.AnnotationAuthorGroups: authenticatedGroups, store.AnnotationTrustToken: e.token},
				Finalizers: []string{store.Finalizer}},
				Data: map[string]string{store.DataKey: `{"apiVersion":"catalog.kubectl-catalog.io/v9","kind":"ServiceBinding"}`}}
			if ns != e.teamB {
				cm.Labels[store.LabelInstanceNamespace] = e.teamB
			}
			return cm
		}
		// bob's own, as a newer release wrote it; and alice's, in her namespace.
		_, err = bob.CoreV1().ConfigMaps(e.teamB).Create(ctx, newer(e.teamB, controlplane.BobUser), metav1.CreateOptions{})
		assert.NilError(t, err)
		tenantCreate(t, e, newer(e.teamA, controlplane.AliceUser))

		r = trustBob(t, e, "deprovision", "upgrade", "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		for range 2 {
			xnsReconcile(t, e, e.teamB)
		}
		inst, err = e.st.Instances().Get(ctx, e.teamB, "upgrade")
		assert.NilError(t, err, "the deletion waits")
		assert.Check(t, !slices.ContainsFunc(e.b.RequestsFor(broker.OpDeprovision), func(r broker.RecordedRequest) bool { return r.InstanceID == id }),
			"no DELETE under a binding a newer release may hold")
		ready := ""
		for _, c := range inst.Status.Conditions {
			if c.Type == v1alpha1.ConditionReady {
				ready = c.Message
			}
		}
		assert.Check(t, is.Contains(ready, "newer"), "the wait names the record")
		assert.Check(t, !strings.Contains(ready, e.teamA), "alice's record is not waited for: %s", ready)

		// The newer release unbinds its binding: the finalizer goes, and so does the instance.
		cm, err := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceBinding, "newer"), metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Check(t, cm.DeletionTimestamp != nil, "it is marked for deletion")
		cm.Finalizers = nil
		_, err = e.admin.CoreV1().ConfigMaps(e.teamB).Update(ctx, cm, metav1.UpdateOptions{})
		assert.NilError(t, err)
		xnsReconcileUntil(t, e, []string{e.teamB}, "the instance's deletion to finish", func() bool {
			_, err := e.st.Instances().Get(ctx, e.teamB, "upgrade")
			return store.IsNotFound(err)
		})
		assert.Check(t, slices.ContainsFunc(e.b.RequestsFor(broker.OpDeprovision), func(r broker.RecordedRequest) bool { return r.InstanceID == id }))
	})

	t.Run("bob's namespace deletion finishes under alice's forged binding", func(t *testing.T) {
		// A cluster broker's: a namespace's deletion takes its role bindings first, so bob
		// may no longer lend his namespace broker its credentials.
		r := trustBob(t, e, "provision", "last", "--class", "acme/object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		xnsReconcileUntil(t, e, []string{e.teamB}, "the instance to be ready", func() bool {
			inst, err := e.st.Instances().Get(ctx, e.teamB, "last")
			return err == nil && inst.Status.Phase == v1alpha1.PhaseReady
		})
		pin := xnsForgedBinding(e, "pin-last", e.teamB, "last")
		pin.Status.Retired = []string{"not-mine"}
		tenantForge(t, e, pin, func(cm *corev1.ConfigMap) { cm.Finalizers = []string{store.Finalizer} })

		// Forged records of the earlier parts would hold the namespace too: they are
		// alice's own, in her namespace, and hold nothing of bob's.
		assert.NilError(t, e.admin.CoreV1().Namespaces().Delete(ctx, e.teamB, metav1.DeleteOptions{}))
		instWaitFor(t, "the namespace controller to mark bob's records deleted", 2*time.Minute, func() bool {
			inst, err := e.st.Instances().Get(ctx, e.teamB, "last")
			return err == nil && inst.DeletionTimestamp != nil
		})
		instWaitFor(t, "bob's namespace deletion to finish", 3*time.Minute, func() bool {
			xnsReconcile(t, e, e.teamB)
			_, err := e.admin.CoreV1().Namespaces().Get(ctx, e.teamB, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		cur, err := e.st.Bindings().Get(ctx, e.teamA, pin.Name)
		assert.NilError(t, err)
		assert.Check(t, cur.DeletionTimestamp == nil, "alice's record is not touched")
	})
}

// xnsRealRoles leaves alice only the documented roles sharingRoles gave her (the user
// role in team-a, the viewer role in the catalog namespace): the extra Role on team-a's
// ConfigMaps trustSetup gave her goes.
func xnsRealRoles(t *testing.T, e *trustEnv) {
	t.Helper()
	err := e.admin.RbacV1().RoleBindings(e.teamA).Delete(context.Background(), "alice-configmaps", metav1.DeleteOptions{})
	assert.NilError(t, err)
	r := kubectl(t, controlplane.AliceUser, "auth", "can-i", "list", "configmaps", "-n", e.teamB)
	assert.Assert(t, r.ExitCode != 0, "alice has nothing in team-b: %s", r.Stdout)
}

// xnsNamespaceBroker has bob register the test broker as namespace broker "team" of
// team-b, with credentials of his namespace.
func xnsNamespaceBroker(t *testing.T, e *trustEnv) {
	t.Helper()
	ctx := context.Background()
	_, err := e.admin.CoreV1().Secrets(e.teamB).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-auth"},
		StringData: map[string]string{"username": "u", "password": "p"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = e.admin.CoreV1().ConfigMaps(e.catalogNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap},
		Data: map[string]string{kube.ClusterIDKey: "e2e-xns"}}, metav1.CreateOptions{})
	assert.Check(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)
	r := trustBob(t, e, "register", "team", "--url", e.brokerURL, "--basic-auth-secret", "team-auth", "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
}

// xnsAsync makes the test broker answer plan's provisions and deprovisions
// asynchronously until the test ends.
func xnsAsync(t *testing.T, e *trustEnv, plan string) {
	t.Helper()
	err := e.b.SetPlanBehaviour(plan, broker.PlanBehaviour{
		Async:      []broker.Op{broker.OpProvision, broker.OpDeprovision},
		AsyncDelay: broker.Duration(100 * time.Millisecond),
	})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = e.b.SetPlanBehaviour(plan, broker.PlanBehaviour{}) })
}

// xnsForgedBinding is a binding record of alice's namespace, named name, that names
// instance ns/instance.
func xnsForgedBinding(e *trustEnv, name, ns, instance string) *v1alpha1.ServiceBinding {
	return &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: name},
		Spec: v1alpha1.ServiceBindingSpec{InstanceName: instance, InstanceNamespace: ns, SecretName: name,
			ExternalID: v1alpha1.NewNamespaceBoundID(e.teamA)},
	}
}

// xnsReconcile runs reconcile in ns as trustReconcile does, where a record this release
// cannot read is a failure of its own (exit 1) beside the others' work.
func xnsReconcile(t *testing.T, e *trustEnv, ns string) {
	t.Helper()
	_, r := recRunStrict(t, ns, []string{"KUBECONFIG=" + e.saKubeconfig}, "--catalog-namespace", e.catalogNS, "--max-duration", "3s", "--interval", "200ms")
	assert.Assert(t, r.ExitCode == 0 || r.ExitCode == 1 && strings.Contains(r.Stderr, "cannot read it"), "exit %d: %s", r.ExitCode, r.Stderr)
}

// xnsReconcileUntil runs reconcile in each of namespaces in turn, as its ServiceAccount,
// until cond holds (a few rounds at most).
func xnsReconcileUntil(t *testing.T, e *trustEnv, namespaces []string, what string, cond func() bool) {
	t.Helper()
	for range 8 {
		for _, ns := range namespaces {
			xnsReconcile(t, e, ns)
		}
		if cond() {
			return
		}
	}
	t.Fatalf("reconcile did not bring about %s", what)
}

// xnsEvents are the notes of the Events about ConfigMap name in ns, one a line.
func xnsEvents(t *testing.T, e *trustEnv, ns, name string) string {
	t.Helper()
	list, err := e.admin.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	assert.NilError(t, err)
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Name == name {
			out = append(out, ev.Reason+": "+xnsRetryless(ev.Note))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// xnsRetryless is msg without the attempt count and retry time a refusal ends with.
func xnsRetryless(msg string) string {
	if i := strings.Index(msg, " (attempt "); i >= 0 {
		if j := strings.Index(msg[i:], ")"); j >= 0 {
			return msg[:i] + msg[i+j+1:]
		}
	}
	return msg
}
