package e2e

import (
	"context"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// TestLimits_TheOwnersNamespaceLeftOutOfAllowedNamespaces_KeepsItsBindings: after
// "update --allowed-namespaces" leaves the instance's own namespace out, the bindings
// bound there stay and keep following the instance (a brokered one is rotated, a
// user-provided one gets the new credentials) and keep their places under the limit; a
// new bind there fails naming the list and the fix, and records nothing.
func TestLimits_TheOwnersNamespaceLeftOutOfAllowedNamespaces_KeepsItsBindings(t *testing.T) {
	t.Parallel()
	nsA, b, st := instSetup(t)
	nsB := cp.NewNamespace(t)
	ctx := context.Background()

	r := instCatalog(t, nsA, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--max-bindings", "2")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "provision", "ups", "--user-provided", "--credentials-json", `{"password":"old-pa55"}`)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, inst := range []string{"db", "ups"} {
		r = instCatalog(t, nsA, "bind", inst, "--name", inst+"-app")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		r = instCatalog(t, nsA, "share", inst, "--to-namespace", nsB)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		r = instCatalog(t, nsA, "update", inst, "--allowed-namespaces", nsB)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}

	// The brokered binding is rotated, and still holds a place: with the limit lowered
	// to 1, another namespace's bind is refused naming it.
	r = instCatalog(t, nsA, "bind", "--rotate", "db-app")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, len(b.RequestsFor(broker.OpBind)), 2, "the first bind and the rotation's")
	bd, err := st.Bindings().Get(ctx, nsA, "db-app")
	assert.NilError(t, err)
	assert.Assert(t, bd.DeletionTimestamp == nil && bd.Status.Bound != nil && bd.Status.Bound.BindingID == bd.CurrentExternalID(), "%+v", bd.Status)
	r = instCatalog(t, nsA, "update", "db", "--max-bindings", "1")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	before := snapshotRecords(t, nsA, nsB)
	r = instCatalog(t, nsB, "bind", nsA+"/db")
	assert.Assert(t, r.ExitCode != 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "limit of 1 bindings ("+nsA+"/db-app)"), r.Stderr)
	assert.DeepEqual(t, snapshotRecords(t, nsA, nsB), before)

	// The user-provided binding gets the new credentials.
	r = instCatalog(t, nsA, "update", "ups", "--credentials-json", `{"password":"new-pa55"}`)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	s, err := limitsAdmin(t).CoreV1().Secrets(nsA).Get(ctx, "ups-app", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, string(s.Data["password"]), "new-pa55")
	before = snapshotRecords(t, nsA, nsB)

	// New binds of the owner's namespace fail, change nothing, send nothing.
	for _, inst := range []string{"db", "ups"} {
		r = instCatalog(t, nsA, "bind", inst, "--name", inst+"-new")
		assert.Assert(t, r.ExitCode != 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, fmt.Sprintf("allows bindings only from namespaces %s, not from %q", nsB, nsA)), r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, "--allowed-namespaces"), r.Stderr)
	}
	assert.DeepEqual(t, snapshotRecords(t, nsA, nsB), before)
	assert.Equal(t, len(b.RequestsFor(broker.OpBind)), 2)
}
