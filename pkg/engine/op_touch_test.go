package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

func TestTouchOp_ResendsEveryParameterAndSettles(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1,"b":2}`)
	var said notes

	res, err := f.engine.Touch(context.Background(), TouchRequest{Namespace: ns, Name: "db", Follow: said.follow(false)})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, []string(said), []string{`Re-sending the parameters of instance "db" in namespace "dev"...`})
	req := f.broker.CallsTo(fake.MethodUpdate)[0].Request.(osb.UpdateRequest)
	assert.Equal(t, string(req.Parameters), `{"a":1,"b":2}`)
}

func TestTouchOp_DryRun_WritesNothingAndCallsNoBroker(t *testing.T) {
	for _, tc := range []struct {
		mode    DryRun
		dryRuns int
	}{{DryRunClient, 0}, {DryRunServer, 1}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1}`)
			before := f.snapshot()
			var said notes

			res, err := f.engine.Touch(context.Background(), TouchRequest{Namespace: ns, Name: "db", DryRun: tc.mode, Follow: said.follow(false)})

			assert.NilError(t, err)
			assert.Equal(t, res.DryRun.Status.Provisioned.ParametersChecksum, touchedChecksum)
			assert.Equal(t, res.Summary, `the parameters of instance "db" in namespace "dev" would be re-sent to its broker`)
			assert.Equal(t, len(said), 0)
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			f.assertUnchanged(before)
		})
	}
}

func TestTouchOp_Refusals_ChangeNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record func(*fixture)
		dry    DryRun
		want   string
	}{
		{name: "not found, dry run", dry: DryRunClient, want: `instance "db" not found in namespace "dev": list the instances with "kubectl catalog get instances -n dev"`},
		{name: "not provisioned", record: func(f *fixture) { f.create("db", planSmall, "") }, want: "is not provisioned yet; nothing to re-send"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.record != nil {
				tc.record(f)
			}
			before := f.snapshot()

			_, err := f.engine.Touch(context.Background(), TouchRequest{Namespace: ns, Name: "db", DryRun: tc.dry})

			assert.ErrorContains(t, err, tc.want)
			f.assertUnchanged(before)
		})
	}
}
