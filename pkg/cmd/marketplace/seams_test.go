package marketplace_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestMarketplace_FlagsReachTheCompletedOptions(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	c := storetest.NewCluster()
	f.UseClients(c.Core, c.Metadata)
	var got *marketplace.Options
	cmd := marketplace.NewCmdMarketplace(f, func(o *marketplace.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"-b", "acme", "-c", "postgres", "-l", "tier=gold", "-o", "wide"})
	assert.NilError(t, cmd.Execute())
	assert.Equal(t, got.Broker, "acme")
	assert.Equal(t, got.Class, "postgres")
	assert.Equal(t, got.List.LabelSelector().String(), "tier=gold")
	assert.Assert(t, got.Output.IsWide())
	assert.Assert(t, got.Reader != nil)
}
