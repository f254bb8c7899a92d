package cmd_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/marketplace"
)

func TestMarketplace_FlagsReachTheCompletedOptions(t *testing.T) {
	got := cmdtest.Parse(t, marketplace.NewCmdMarketplace, "-b", "acme", "-c", "postgres", "-l", "tier=gold", "-o", "wide")
	assert.Equal(t, got.Broker, "acme")
	assert.Equal(t, got.Class, "postgres")
	assert.Equal(t, got.List.LabelSelector().String(), "tier=gold")
	assert.Assert(t, got.Output.IsWide())
	assert.Assert(t, got.Reader != nil)
}
