package unbind_test

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/unbind"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// parsed runs "unbind ARGS" on a fake cluster up to Run, and returns the completed
// options.
func parsed(t *testing.T, args ...string) *unbind.Options {
	t.Helper()
	got := cmdtest.Parse(t, unbind.NewCmdUnbind, args...)
	assert.Assert(t, got.Engine != nil, "Run is replaced by runF, with the options completed")
	return got
}

func TestNewCmdUnbind_FlagsMakeTheRequest(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want engine.UnbindRequest
	}{
		{args: []string{"a", "b", "-n", "dev"}, want: engine.UnbindRequest{Namespace: "dev", Bindings: []string{"a", "b"}, DryRun: engine.DryRunNone}},
		{args: []string{"db", "--all", "--yes", "-n", "dev", "--abandon"}, want: engine.UnbindRequest{Namespace: "dev", Instance: "db", All: true, Abandon: true, DryRun: engine.DryRunNone}},
		{args: []string{"--instance", "db", "--name", "a,b", "-n", "dev", "--dry-run"}, want: engine.UnbindRequest{Namespace: "dev", Instance: "db", Names: []string{"a", "b"}, DryRun: engine.DryRunClient}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			assert.DeepEqual(t, unbind.RequestOf(parsed(t, tc.args...)), tc.want)
		})
	}
}
