package graph_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/graph"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestGraph_FlagsReachTheCompletedOptions(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	c := storetest.NewCluster()
	f.UseClients(c.Core, c.Metadata)
	for _, tc := range []struct {
		args   []string
		all    bool
		format string
	}{
		{args: nil, format: "tree"},
		{args: []string{"-A", "-o", "mermaid"}, all: true, format: "mermaid"},
	} {
		var got *graph.Options
		cmd := graph.NewCmdGraph(f, func(o *graph.Options) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		assert.NilError(t, cmd.Execute())
		assert.Equal(t, got.AllNamespaces, tc.all)
		assert.Equal(t, got.Output.Format(), tc.format)
		assert.Assert(t, got.Reader != nil && got.Core != nil)
	}
}
