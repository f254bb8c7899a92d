package graph_test

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func TestGraph_BadInvocations_AreUsageErrorsBeforeAnyRead(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"graph", "-o", "yaml"}, want: `unknown output format "yaml" for graph: use one of tree, dot, mermaid, json`},
		{args: []string{"graph", "-o", ""}, want: `unknown output format ""`},
		{args: []string{"graph", "db"}, want: `graph takes no arguments, got "db"`},
		{args: []string{"graph", "--no-such"}, want: "unknown flag"},
	} {
		err := cmdtest.RunOffline(t, tc.args...)
		assert.ErrorContains(t, err, tc.want)
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
	}
}

func TestGraph_Help(t *testing.T) {
	out, err := cmdtest.RunOfflineOutput(t, "graph", "--help")
	assert.NilError(t, err)
	for _, want := range []string{"kubectl catalog graph -A -o dot", "-o, --output string", "-A, --all-namespaces", "warning on stderr"} {
		assert.Assert(t, is.Contains(out, want))
	}
}
