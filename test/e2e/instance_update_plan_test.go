package e2e

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// The "update --plan standard" from hobby with storage_gb 8: the parameters that
// stand after the update are checked against the new plan's schema (standard wants
// storage_gb of at least 20), refused before anything is written or sent, with the
// parameter, the limit and the -p that fixes it; given in the same update, the plan
// changes and the broker holds the new value.
func TestInstance_UpdatePlan_ChecksTheParametersThatStand(t *testing.T) {
	t.Parallel()
	ns, b, st := openBrokerSetup(t)
	ctx := context.Background()
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "-p", "storage_gb=8", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	before, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	b.ClearRequests()

	for _, args := range [][]string{
		{"update", "db", "--plan", "standard"},
		{"update", "db", "--plan", "standard", "--wait"},
		{"update", "db", "--plan", "standard", "-p", "high_availability=true"},
		{"update", "db", "--plan", "standard", "--dry-run=client"},
	} {
		r = instCatalog(t, ns, args...)

		assert.Equal(t, r.ExitCode, 1, "%v: %s", args, r.Stderr)
		assert.Check(t, is.Contains(r.Stderr, `instance "db" not updated: plan "standard" does not accept a value the instance keeps`), args)
		assert.Check(t, is.Contains(r.Stderr, "parameter storage_gb: minimum: got 8, want 20"), args)
		assert.Check(t, is.Contains(r.Stderr, "-p storage_gb=20"), args)
	}
	assert.Check(t, is.Len(b.Requests(), 0), "no broker call")
	after, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Check(t, after.ResourceVersion == before.ResourceVersion, "the record is unchanged")

	r = instCatalog(t, ns, "update", "db", "--plan", "standard", "-p", "storage_gb=20", "--wait")

	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	inst, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	held, ok := b.Instance(inst.Spec.ExternalID)
	assert.Assert(t, ok)
	assert.Equal(t, held.PlanID, broker.DemoPostgresStandardPlanID)
	assert.Equal(t, held.Parameters["storage_gb"], 20.0)
}
