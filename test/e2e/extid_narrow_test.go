package e2e

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestExtIDNarrow_ATenantsProvisionOfAnotherNamespacesIDIsLeftToReconcile: namespace A
// takes over an OSB id bound to nothing (provision --external-id). bob, who may write
// and list ConfigMaps in namespace B only (and read the catalog), runs "provision
// --external-id" with A's id, and with an id nobody uses. His list of every namespace
// is refused, so his process cannot tell who else uses either id: it sends nothing
// under them and leaves both calls to reconcile. Reconcile, which lists every
// namespace, refuses the first (A's record adopted the id first) and provisions the
// second.
func TestExtIDNarrow_ATenantsProvisionOfAnotherNamespacesIDIsLeftToReconcile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	b := broker.NewTestBroker(t, broker.Options{RetryAfter: -1})
	nsA, nsB, catalogNS := cp.NewNamespace(t), cp.NewNamespace(t), cp.NewNamespace(t)
	catalog := func(ns string, args ...string) result {
		t.Helper()
		return instCatalog(t, ns, append(args, "--catalog-namespace", catalogNS)...)
	}
	const held, free = "svcat-extid-narrow-held", "svcat-extid-narrow-free"
	r := catalog(nsA, "register", "acme", "--url", b.URL(), "--scope", "cluster")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = catalog(nsA, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--external-id", held)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// bob may write ConfigMaps in namespace B and read those of the catalog namespace.
	bob, err := cp.Client(controlplane.BobUser)
	assert.NilError(t, err)
	grantRole(t, admin, nsB, "extid-configmaps", configMapRules("*"), listsConfigMaps(bob, nsB), controlplane.BobUser)
	grantRole(t, admin, catalogNS, "extid-configmaps", configMapRules("get", "list", "watch"), listsConfigMaps(bob, catalogNS), controlplane.BobUser)

	sent := func(id string) int {
		n := 0
		for _, req := range b.RequestsFor(broker.OpProvision) {
			if req.InstanceID == id {
				n++
			}
		}
		return n
	}
	st := store.New(admin, nil)
	runs := map[string]result{}
	for name, id := range map[string]string{"steal": held, "own": free} {
		runs[name] = kubectl(t, controlplane.BobUser, "catalog", "-n", nsB, "provision", name, "--class", "postgresql", "--plan", "hobby",
			"--external-id", id, "--catalog-namespace", catalogNS)
	}
	assert.Equal(t, sent(held), 1, "only A's provision reached the broker")
	assert.Equal(t, sent(free), 0, "bob's process sent nothing")
	for name, r := range runs {
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout+r.Stderr, "reconcile"), "bob is told reconcile sends the request")
		inst, err := st.Instances().Get(ctx, nsB, name)
		assert.NilError(t, err)
		assert.Assert(t, engine.WaitingForReconcile(inst), "%+v", inst.Status.Conditions)
		assert.Assert(t, is.Contains(meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady).Message, "you may not list the records of every namespace"))
	}

	catalog(nsB, "reconcile")

	steal, err := st.Instances().Get(ctx, nsB, "steal")
	assert.NilError(t, err)
	c := meta.FindStatusCondition(steal.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue && c.Reason == engine.ReasonRefusedIDInUse, "%+v", steal.Status.Conditions)
	assert.Assert(t, strings.Contains(c.Message, `instance "db" in namespace "`+nsA+`" adopted it first`), c.Message)
	assert.Equal(t, sent(held), 1, "reconcile sent nothing under A's id for bob")
	own, err := st.Instances().Get(ctx, nsB, "own")
	assert.NilError(t, err)
	assert.Equal(t, own.Status.Phase, v1alpha1.PhaseReady, "%+v", own.Status.Conditions)
	assert.Equal(t, sent(free), 1)
}
