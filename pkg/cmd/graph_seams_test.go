package cmd_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/graph"
)

func TestGraph_FlagsReachTheCompletedOptions(t *testing.T) {
	f, _ := cmdtest.FakeFactory(t)
	for _, tc := range []struct {
		args   []string
		all    bool
		format string
	}{
		{args: nil, format: "tree"},
		{args: []string{"-A", "-o", "mermaid"}, all: true, format: "mermaid"},
	} {
		got := cmdtest.Completed(t, f, graph.NewCmdGraph, tc.args...)
		assert.Equal(t, got.AllNamespaces, tc.all)
		assert.Equal(t, got.Output.Format(), tc.format)
		assert.Assert(t, got.Reader != nil && got.Core != nil)
	}
}
