package describe_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/describe"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// seamFactory is a factory on an empty fake cluster.
func seamFactory(t *testing.T) *cmdutil.Factory {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	c := storetest.NewCluster()
	f.UseClients(c.Core, c.Metadata)
	return f
}

func TestDescribeInstance_NameReachesTheCompletedOptions(t *testing.T) {
	var got *describe.InstanceOptions
	cmd := describe.NewCmdDescribeInstance(seamFactory(t), func(o *describe.InstanceOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"db"})
	assert.NilError(t, cmd.Execute())
	assert.Equal(t, got.Name, "db")
	assert.Assert(t, got.Reader != nil && got.Now != nil)
}

func TestDescribeBinding_FlagsReachTheCompletedOptions(t *testing.T) {
	var got *describe.BindingOptions
	cmd := describe.NewCmdDescribeBinding(seamFactory(t), func(o *describe.BindingOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"db", "--show-secrets"})
	assert.NilError(t, cmd.Execute())
	assert.Equal(t, got.Name, "db")
	assert.Assert(t, got.ShowSecrets)
	assert.Assert(t, got.Reader != nil)
}

func TestDescribePlan_FlagsReachTheCompletedOptions(t *testing.T) {
	var got *describe.Options
	cmd := describe.NewCmdDescribePlan(seamFactory(t), func(o *describe.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"small", "--class", "postgres", "--show-schemas"})
	assert.NilError(t, cmd.Execute())
	assert.Equal(t, got.Name, "small")
	assert.Equal(t, got.Class, "postgres")
	assert.Assert(t, got.ShowSchemas)
	assert.Assert(t, got.Reader != nil)
}
