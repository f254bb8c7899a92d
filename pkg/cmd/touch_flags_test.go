package cmd_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/touch"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func TestNewCmdTouch_FlagsReachTheOptions(t *testing.T) {
	got := cmdtest.Parse(t, touch.NewCmdTouch, "inst", "db", "--dry-run=server", "-o", "yaml", "--interval", "3s")
	assert.Equal(t, got.Name, "db")
	assert.Equal(t, got.DryRun, cmdutil.DryRunServer)
	assert.Equal(t, got.Wait.Interval.String(), "3s")
	assert.Assert(t, !got.Output.IsTable())
	assert.Assert(t, got.Engine != nil)
}
