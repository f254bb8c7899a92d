package e2e

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLimits_AUserProvidedInstancesLimitLoweredBelowItsBindings_TheyGetItsNewCredentials:
// "update --max-bindings" below the bindings of a user-provided instance keeps them, as
// for a brokered one: each, of its own namespace and of one it is shared with, gets the
// copy of the instance's new credentials; a new bind fails naming the limit, and records
// nothing.
func TestLimits_AUserProvidedInstancesLimitLoweredBelowItsBindings_TheyGetItsNewCredentials(t *testing.T) {
	t.Parallel()
	nsA, _, _ := instSetup(t)
	nsB := cp.NewNamespace(t)
	ctx := context.Background()

	r := instCatalog(t, nsA, "provision", "ups", "--user-provided", "--credentials-json", `{"password":"old-pa55"}`)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "share", "ups", "--to-namespace", nsB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "bind", "ups", "--name", "app-a")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsB, "bind", nsA+"/ups", "--name", "app-b")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, nsA, "update", "ups", "--max-bindings", "1")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	r = instCatalog(t, nsA, "update", "ups", "--credentials-json", `{"password":"new-pa55"}`)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	for _, b := range [][2]string{{nsA, "app-a"}, {nsB, "app-b"}} {
		s, err := limitsAdmin(t).CoreV1().Secrets(b[0]).Get(ctx, b[1], metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Equal(t, string(s.Data["password"]), "new-pa55", "%s/%s", b[0], b[1])
	}

	before := snapshotRecords(t, nsA, nsB)
	r = instCatalog(t, nsA, "bind", "ups", "--name", "app-new")
	assert.Assert(t, r.ExitCode != 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "limit of 1 bindings"), r.Stderr)
	assert.DeepEqual(t, snapshotRecords(t, nsA, nsB), before)
}
