package cmd_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/get"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

func TestGetInstances_FlagsReachTheCompletedOptions(t *testing.T) {
	got := cmdtest.Parse(t, get.NewCmdGetInstances, "a", "b", "-A", "--class", "postgres", "--plan", "small", "-l", "team=x", "-o", "wide")
	assert.DeepEqual(t, got.Names, []string{"a", "b"})
	assert.Assert(t, got.AllNamespaces)
	assert.Equal(t, got.Namespace, "")
	assert.Equal(t, got.Class, "postgres")
	assert.Equal(t, got.Plan, "small")
	assert.Equal(t, got.List.LabelSelector().String(), "team=x")
	assert.Assert(t, got.Output.IsWide())
	assert.Assert(t, got.Reader != nil)
}

func TestGetBindings_FlagsReachTheCompletedOptions(t *testing.T) {
	got := cmdtest.Parse(t, get.NewCmdGetBindings, "db", "--instance", "pg", "--watch-only", "-o", "yaml")
	assert.DeepEqual(t, got.Names, []string{"db"})
	assert.Equal(t, got.Instance, "pg")
	assert.Assert(t, got.Watch.On() && got.Watch.WatchOnly)
	assert.Assert(t, !got.Output.IsTable())
	assert.Assert(t, got.Reader != nil)
}

func TestGetBrokers_FlagsReachTheCompletedOptions(t *testing.T) {
	got := cmdtest.Parse(t, get.NewCmdGetBrokers, "acme", "--sort-by", ".metadata.name")
	assert.DeepEqual(t, got.Names, []string{"acme"})
	assert.Equal(t, got.List.SortBy, ".metadata.name")
	assert.Assert(t, got.Reader != nil)
}

func TestGetInstances_ValidateChangesNothing(t *testing.T) {
	o := &get.InstancesOptions{RecordListOptions: get.RecordListOptions{Output: printers.OutputFlagsFor("")}}
	o.List.Selector = "team=x"
	assert.NilError(t, o.Validate())
	assert.Assert(t, o.List.LabelSelector() == nil, "Validate parsed the selector into the options")
}
