package cmd_test

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
)

func TestGraph_BadInvocations_AreUsageErrorsBeforeAnyRead(t *testing.T) {
	cmdtest.UsageErrors(t, []cmdtest.BadInvocation{
		{Args: []string{"graph", "-o", "yaml"}, Want: `unknown output format "yaml" for graph: use one of tree, dot, mermaid, json`},
		{Args: []string{"graph", "-o", ""}, Want: `unknown output format ""`},
		{Args: []string{"graph", "db"}, Want: `graph takes no arguments, got "db"`},
		{Args: []string{"graph", "--no-such"}, Want: "unknown flag"},
	})
}

func TestGraph_Help(t *testing.T) {
	out, err := cmdtest.RunOfflineOutput(t, "graph", "--help")
	assert.NilError(t, err)
	for _, want := range []string{"kubectl catalog graph -A -o dot", "-o, --output string", "-A, --all-namespaces", "warning on stderr"} {
		assert.Assert(t, is.Contains(out, want))
	}
}
