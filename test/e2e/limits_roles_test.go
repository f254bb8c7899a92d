package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// TestLimits_DocumentedRoles_MaxBindingsBelowTheBindingsThatExist_CountsEveryNamespace:
// alice (the owner, with the documented roles) shares "shop" with team-b and binds it
// twice in team-a; bob (the consumer, with the documented roles) binds it once in team-b;
// reconcile makes the calls their commands may not. alice then limits it to 2 bindings:
// the three that exist keep their places (update says so, and that nothing was sent to
// the broker), describe shows 3 taken, and a further bind from either namespace is
// refused, naming the bindings that hold the places, with nothing recorded or sent. Along
// the way: bob's binding names its instance team-a/shop wherever it is shown, and bob's
// rotation, which reconcile makes, says that it waits for reconcile.
func TestLimits_DocumentedRoles_MaxBindingsBelowTheBindingsThatExist_CountsEveryNamespace(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := sharingSetup(t)
	ctx := context.Background()
	r := sharingAlice(t, e, "share", "shop", "--to-namespace", e.teamB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, name := range []string{"a1", "a2"} {
		r = sharingAlice(t, e, "bind", "shop", "--name", name)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	r = trustBob(t, e, "bind", e.teamA+"/shop", "--name", "b1")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamA)
	trustReconcile(t, e, e.teamB)
	for _, b := range []struct{ ns, name string }{{e.teamA, "a1"}, {e.teamA, "a2"}, {e.teamB, "b1"}} {
		got, err := e.st.Bindings().Get(ctx, b.ns, b.name)
		assert.NilError(t, err)
		assert.Equal(t, got.Status.Phase, v1alpha1.PhaseReady, "%s/%s: %+v", b.ns, b.name, got.Status.Conditions)
	}
	binds := len(e.b.RequestsFor(broker.OpBind))

	t.Run("a cross-namespace binding names its instance with its namespace", func(t *testing.T) {
		r := trustBob(t, e, "get", "bindings")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, e.teamA+"/shop"), r.Stdout)
		r = trustBob(t, e, "describe", "binding", "b1")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, "Instance:         "+e.teamA+"/shop\n"), r.Stdout)
		r = trustBob(t, e, "graph")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, "Instance "+e.teamA+"/shop"), r.Stdout)
	})

	t.Run("update below the bindings that exist keeps them and says so", func(t *testing.T) {
		r := sharingAlice(t, e, "update", "shop", "--max-bindings", "2")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, !strings.Contains(r.Stderr, "the broker updated"), r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, "nothing was sent to the broker"), r.Stderr)
		// alice may not list team-b's bindings: she is told they count too.
		assert.Assert(t, is.Contains(r.Stderr, fmt.Sprintf("Bindings of namespace(s) %s, which you may not list, count against the limit too", e.teamB)), r.Stderr)
		assert.Equal(t, len(e.b.RequestsFor(broker.OpUpdate)), 0, "no request sent to the broker")

		r = instCatalog(t, e.teamA, "describe", "instance", "shop", "--catalog-namespace", e.catalogNS)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, "Max bindings:     2 (3 taken): more bindings than the limit"), r.Stdout)
	})

	t.Run("a bind beyond the limit is refused from either namespace, naming the bindings", func(t *testing.T) {
		before := snapshotRecords(t, e.teamA, e.teamB)
		r := sharingAlice(t, e, "bind", "shop", "--name", "a3")
		assert.Equal(t, r.ExitCode, 1, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, `binding "a3" not created`), r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, fmt.Sprintf("limit of 2 bindings (%s/a1, %s/a2)", e.teamA, e.teamA)), r.Stderr)

		r = trustBob(t, e, "bind", e.teamA+"/shop", "--name", "b2")
		assert.Equal(t, r.ExitCode, 1, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, `binding "b2" not created`), r.Stderr)
		held := []string{e.teamA + "/a1", e.teamA + "/a2", e.teamB + "/b1"}
		slices.Sort(held)
		assert.Assert(t, is.Contains(r.Stderr, fmt.Sprintf("3 bindings hold places (%s)", strings.Join(held, ", "))), r.Stderr)
		assert.DeepEqual(t, snapshotRecords(t, e.teamA, e.teamB), before)
		assert.Equal(t, len(e.b.RequestsFor(broker.OpBind)), binds, "nothing sent to the broker")
	})

	t.Run("a consumer's rotation that waits for reconcile says so", func(t *testing.T) {
		r := trustBob(t, e, "bind", "--rotate", "b1")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, !strings.Contains(r.Stderr, "Ready: you may not"), r.Stderr)
		assert.Assert(t, !strings.Contains(r.Stderr, "The broker is working"), r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, `The rotation of binding "b1" is recorded and waits for reconcile`), r.Stderr)
		trustReconcile(t, e, e.teamB)
		b, err := e.st.Bindings().Get(ctx, e.teamB, "b1")
		assert.NilError(t, err)
		assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady, "%+v", b.Status.Conditions)
		assert.Assert(t, !engine.WaitingForReconcile(b))
	})

	t.Run("unbinding gives places back; reconcile binds what fits", func(t *testing.T) {
		for _, name := range []string{"a1", "a2"} {
			r := sharingAlice(t, e, "unbind", name, "--yes")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
		}
		trustReconcile(t, e, e.teamA)
		r := trustBob(t, e, "bind", e.teamA+"/shop", "--name", "b2")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamB)
		b, err := e.st.Bindings().Get(ctx, e.teamB, "b2")
		assert.NilError(t, err)
		assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady, "%+v", b.Status.Conditions)
		inst, err := e.st.Instances().Get(ctx, e.teamA, "shop")
		assert.NilError(t, err)
		var places []string
		for _, c := range inst.Status.Consumers {
			places = append(places, c.Namespace+"/"+c.Name)
		}
		assert.DeepEqual(t, places, []string{e.teamB + "/b1", e.teamB + "/b2"})
	})
}
