package touch_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/touch"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestNewCmdTouch_FlagsReachTheOptions(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	c := storetest.NewCluster()
	f.UseClients(c.Core, c.Metadata)
	var got *touch.Options
	cmd := touch.NewCmdTouch(f, func(o *touch.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"inst", "db", "--dry-run=server", "-o", "yaml", "--interval", "3s"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)

	assert.NilError(t, cmd.Execute())

	assert.Assert(t, got != nil, "runF was not called")
	assert.Equal(t, got.Name, "db")
	assert.Equal(t, got.DryRun, cmdutil.DryRunServer)
	assert.Equal(t, got.Wait.Interval.String(), "3s")
	assert.Assert(t, !got.Output.IsTable())
	assert.Assert(t, got.Engine != nil)
}
