package describe_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/describe"
)

func TestDescribeInstance_NameReachesTheCompletedOptions(t *testing.T) {
	got := cmdtest.Parse(t, describe.NewCmdDescribeInstance, "db")
	assert.Equal(t, got.Name, "db")
	assert.Assert(t, got.Reader != nil && got.Now != nil)
}

func TestDescribeBinding_FlagsReachTheCompletedOptions(t *testing.T) {
	got := cmdtest.Parse(t, describe.NewCmdDescribeBinding, "db", "--show-secrets")
	assert.Equal(t, got.Name, "db")
	assert.Assert(t, got.ShowSecrets)
	assert.Assert(t, got.Reader != nil)
}

func TestDescribePlan_FlagsReachTheCompletedOptions(t *testing.T) {
	got := cmdtest.Parse(t, describe.NewCmdDescribePlan, "small", "--class", "postgres", "--show-schemas")
	assert.Equal(t, got.Name, "small")
	assert.Equal(t, got.Class, "postgres")
	assert.Assert(t, got.ShowSchemas)
	assert.Assert(t, got.Reader != nil)
}
