package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestLimitsForge_ForgedBindingStatusesGetNoMoreBindingsThanTheLimit: an instance of
// namespace A, limited to 2 bindings and shared with namespace B, is bound twice from B.
// bob, who may write ConfigMaps in B only, then writes binding records of that instance
// there by hand whose statuses say what would free them of the limit: a first bind in
// flight (two such binds written before a limit go one after the other, whatever their
// places), a rotation of one of the bound bindings under its id (a rotation keeps its
// predecessor's place), a rotation asked by the spec, and the two bound bindings' own
// statuses wiped (as if the broker held nothing of them). Reconcile, which may write
// the instance's places, steps them all, and bob's own bind is refused: the broker is
// asked for no binding but the two that hold the places, and holds no more than two.
// bob's records are written moments after the places were reserved, often in the same
// second: creation times and places' times are kept in whole seconds, and a record
// created then was made after the places all the same.
// With a cluster broker and with a namespace-scoped one.
func TestLimitsForge_ForgedBindingStatusesGetNoMoreBindingsThanTheLimit(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{"cluster", "namespace"} {
		t.Run(scope+" broker", func(t *testing.T) {
			t.Parallel()
			limitsForge(t, scope)
		})
	}
}

func limitsForge(t *testing.T, scope string) {
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	b := broker.NewTestBroker(t, broker.Options{RetryAfter: -1})
	nsA, nsB := cp.NewNamespace(t), cp.NewNamespace(t)
	catalogNS := nsA
	if scope == "cluster" {
		catalogNS = cp.NewNamespace(t)
	}
	catalog := func(ns string, args ...string) result {
		t.Helper()
		return instCatalog(t, ns, append(args, "--catalog-namespace", catalogNS)...)
	}
	r := catalog(nsA, "register", "acme", "--url", b.URL(), "--scope", scope)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = catalog(nsA, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--max-bindings", "2")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = catalog(nsA, "share", "db", "--to-namespace", nsB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, name := range []string{"b1", "b2"} {
		r = catalog(nsB, "bind", nsA+"/db", "--name", name)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	st := store.New(admin, nil)
	inst, err := st.Instances().Get(ctx, nsA, "db")
	assert.NilError(t, err)
	b1, err := st.Bindings().Get(ctx, nsB, "b1")
	assert.NilError(t, err)
	b2, err := st.Bindings().Get(ctx, nsB, "b2")
	assert.NilError(t, err)
	assert.Assert(t, b1.Status.Bound != nil && b2.Status.Bound != nil)
	placed := []string{b1.Spec.ExternalID, b2.Spec.ExternalID}

	// bob may write ConfigMaps in namespace B, nothing else.
	bob, err := cp.Client(controlplane.BobUser)
	assert.NilError(t, err)
	grantRole(t, admin, nsB, "configmaps", configMapRules("*"), listsConfigMaps(bob, nsB), controlplane.BobUser)
	write := func(rec *v1alpha1.ServiceBinding, update bool) {
		t.Helper()
		cm, err := store.Encode(rec)
		assert.NilError(t, err)
		if update {
			cur, err := bob.CoreV1().ConfigMaps(nsB).Get(ctx, cm.Name, metav1.GetOptions{})
			assert.NilError(t, err)
			cur.Data = cm.Data
			_, err = bob.CoreV1().ConfigMaps(nsB).Update(ctx, cur, metav1.UpdateOptions{})
			assert.NilError(t, err, "bob rewrites %s", cm.Name)
			return
		}
		_, err = bob.CoreV1().ConfigMaps(nsB).Create(ctx, cm, metav1.CreateOptions{})
		assert.NilError(t, err, "bob writes %s", cm.Name)
	}
	forged := func(name string, edit func(*v1alpha1.ServiceBinding)) {
		t.Helper()
		x := engine.NewBinding(engine.BindingIntent{Namespace: nsB, Name: name, Instance: "db", InstanceNamespace: nsA, SecretName: name})
		bind := &v1alpha1.Operation{Type: v1alpha1.OperationBind, InstanceID: inst.Spec.ExternalID, BindingID: x.Spec.ExternalID,
			ServiceID: inst.Spec.ClassID, PlanID: inst.Spec.PlanID, RequestID: "forged-" + name,
			StartedAt: metav1.NewTime(time.Now().Add(-time.Hour))}
		edit(x)
		if x.Status.InFlight != nil {
			x.Status.InFlight = bind
		}
		write(x, false)
	}
	inFlight := &v1alpha1.Operation{}
	forged("inflight", func(x *v1alpha1.ServiceBinding) { x.Status.InFlight = inFlight })
	forged("rotation", func(x *v1alpha1.ServiceBinding) {
		x.Status.Bound = b1.Status.Bound.DeepCopy()
		x.Status.Predecessor = &v1alpha1.BindingReference{Name: "b1", ExternalID: b1.Spec.ExternalID}
		x.Status.InFlight = inFlight
	})
	forged("rotation-unheld", func(x *v1alpha1.ServiceBinding) {
		x.Status.Bound = b1.Status.Bound.DeepCopy()
		x.Status.Bound.BindingID = v1alpha1.NewNamespaceBoundID(nsB)
		x.Status.Predecessor = &v1alpha1.BindingReference{Name: "rotation-unheld", ExternalID: x.Status.Bound.BindingID}
		x.Status.InFlight = inFlight
	})
	forged("rotation-spec", func(x *v1alpha1.ServiceBinding) {
		x.Spec.Predecessor = &v1alpha1.BindingReference{Name: "b1", ExternalID: b1.Spec.ExternalID}
	})
	for _, held := range []*v1alpha1.ServiceBinding{b1, b2} {
		x := held.DeepCopy()
		x.Status.Bound, x.Status.ExternalIDs, x.Status.InFlight = nil, nil, nil
		write(x, true)
	}

	r = instRun(t, nsB, instReconcileEnv, "reconcile", asRunner, "--catalog-namespace", catalogNS, "--interval", "100ms", "--max-duration", "4s", "-o", "json")
	t.Logf("reconcile: exit %d\n%s", r.ExitCode, r.Stderr)

	before := snapshotRecords(t, nsA, nsB)
	r = catalog(nsB, "bind", nsA+"/db", "--name", "b3")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "limit of 2 bindings"), r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, `binding "b3" not created`), r.Stderr)
	assert.DeepEqual(t, snapshotRecords(t, nsA, nsB), before)

	for _, req := range b.RequestsFor(broker.OpBind) {
		assert.Check(t, slices.Contains(placed, req.BindingID), "a bind beyond the limit reached the broker: binding id %s (places: %v)", req.BindingID, placed)
	}
	var held []string
	for _, x := range b.Bindings() {
		if x.InstanceID == inst.Spec.ExternalID {
			held = append(held, x.ID)
		}
	}
	assert.Check(t, len(held) <= 2, "the broker holds %d bindings of an instance limited to 2: %v", len(held), held)
	inst, err = st.Instances().Get(ctx, nsA, "db")
	assert.NilError(t, err)
	var places []string
	for _, c := range inst.Status.Consumers {
		places = append(places, c.Namespace+"/"+c.Name)
	}
	assert.Check(t, is.DeepEqual(places, []string{nsB + "/b1", nsB + "/b2"}), fmt.Sprintf("%+v", inst.Status.Consumers))
}
