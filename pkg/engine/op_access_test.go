package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestSetAccess_RecordsTheRuleOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var notes []string
	req := AccessRequest{Target: "db/small", Namespace: ns, ViewNamespace: ns, DryRun: DryRunNone, Record: true,
		Note: func(s string) { notes = append(notes, s) }}
	res, err := f.engine.SetAccess(ctx, req)
	assert.NilError(t, err)
	assert.Assert(t, res.Changed)
	assert.Equal(t, res.What, `plan "small" of class "db"`)
	assert.Equal(t, res.Where, `namespace "dev"`)
	assert.DeepEqual(t, notes, []string{`Disabling plan "small" of class "db" (broker "acme") in namespace "dev"...`})
	assert.DeepEqual(t, res.Access.Spec.Rules, []v1alpha1.AccessRule{{Namespace: ns, BrokerName: brokerName, ClassID: classID,
		ClassExternalName: "db", PlanID: planSmall, PlanExternalName: "small"}})

	before := everyRecordAndSecret(t, f.cluster)
	res, err = f.engine.SetAccess(ctx, req)
	assert.NilError(t, err)
	assert.Assert(t, !res.Changed)
	assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)

	req.Enabled, req.Namespace, req.Target, req.Record = true, "", "db", false
	res, err = f.engine.SetAccess(ctx, req)
	assert.NilError(t, err)
	assert.Assert(t, res.Changed && res.Access == nil)
	assert.Equal(t, res.Where, "every namespace")
	a, err := f.st.Access().Get(ctx, storetest.CatalogNamespace, v1alpha1.CatalogAccessName)
	assert.NilError(t, err)
	assert.Equal(t, len(a.Spec.Rules), 2)
}

func TestSetAccess_UnknownClassOrPlan_WritesNothing(t *testing.T) {
	for _, target := range []string{"nope", "db/nope", "other/db/small"} {
		t.Run(target, func(t *testing.T) {
			f := newFixture(t)
			before := everyRecordAndSecret(t, f.cluster)
			_, err := f.engine.SetAccess(context.Background(), AccessRequest{Target: target, ViewNamespace: ns, DryRun: DryRunNone,
				Note: func(s string) { t.Errorf("said %q before failing", s) }})
			assert.Assert(t, err != nil, "an unknown class or plan was accepted")
			assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)
		})
	}
}

func TestSetAccess_DryRun_WritesNothing(t *testing.T) {
	for _, tc := range []struct {
		dry       DryRun
		existing  bool
		operation string
		dryRuns   int
	}{
		{dry: DryRunClient, operation: "created"},
		{dry: DryRunServer, operation: "created", dryRuns: 1},
		{dry: DryRunServer, existing: true, operation: "configured", dryRuns: 1},
	} {
		t.Run(string(tc.dry), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if tc.existing {
				_, err := f.engine.SetAccess(ctx, AccessRequest{Target: "db", Namespace: ns, ViewNamespace: ns, DryRun: DryRunNone})
				assert.NilError(t, err)
			}
			before := everyRecordAndSecret(t, f.cluster)
			res, err := f.engine.SetAccess(ctx, AccessRequest{Target: "db", ViewNamespace: ns, DryRun: tc.dry,
				Note: func(s string) { t.Errorf("a dry run said %q", s) }})
			assert.NilError(t, err)
			assert.Equal(t, res.Operation, tc.operation)
			wantRules := 1
			if tc.existing {
				wantRules = 2
			}
			assert.Equal(t, len(res.Access.Spec.Rules), wantRules)
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			assert.DeepEqual(t, everyRecordAndSecret(t, f.cluster), before)
			_, err = f.st.Access().Get(ctx, storetest.CatalogNamespace, v1alpha1.CatalogAccessName)
			assert.Equal(t, store.IsNotFound(err), !tc.existing)
		})
	}
}
