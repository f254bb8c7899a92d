package doctor

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// An earlier release's policy is in force all the same, but does not check who sets the
// migrated-from annotation: doctor says so, and that "init" upgrades it.
func TestTrust_AnEarlierReleasesPolicy_SaysToUpgradeIt(t *testing.T) {
	fs := Trust(context.Background(), newFixture(t, trust.PriorPolicy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "t")).config())
	assert.Assert(t, len(fs) >= 2, "%+v", fs)
	assert.Equal(t, fs[0].Severity, OK, "%+v", fs[0])
	assert.Equal(t, fs[1].Severity, Warn, "%+v", fs[1])
	assert.Assert(t, is.Contains(fs[1].Detail, "earlier release"))
	assert.Assert(t, is.Contains(fs[1].Detail, store.AnnotationMigratedFrom))
	assert.Assert(t, is.Contains(fs[1].Fix, "kubectl catalog init"))

	fs = Trust(context.Background(), newFixture(t, trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "t")).config())
	for _, f := range fs {
		assert.Assert(t, !is.Contains(f.Detail, "earlier release")().Success(), "%+v", f)
	}
}
