package cmd_test

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/syncbroker"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
)

func TestNewCmdSync_FlagsBecomeTheRequest(t *testing.T) {
	f, _ := cmdtest.FakeFactoryIn(t, "team")
	got := cmdtest.Completed(t, f, syncbroker.NewCmdSync, "broker", "acme", "--scope", "cluster", "--broker-timeout", "5s")
	assert.Assert(t, got != nil && got.Engine != nil)
	assert.Equal(t, got.BrokerTimeout, 5*time.Second)
	req := got.Request()
	req.Note = nil
	assert.DeepEqual(t, req, engine.SyncBrokerRequest{Name: "acme", Scope: v1alpha1.ScopeCluster, Namespace: "team", DryRun: engine.DryRunNone})

	got = cmdtest.Completed(t, f, syncbroker.NewCmdSync, "broker", "acme", "--dry-run", "--yes")
	assert.Equal(t, got.Request().DryRun, engine.DryRunClient)
	assert.Assert(t, got.Yes)
}

func TestSyncBroker_BadInvocations_AreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"sync", "broker", "acme", "--scope", "galaxy"},
		{"sync", "broker", "acme", "--broker-timeout", "0s"},
		{"sync", "broker"},
		{"sync", "broker", "acme", "--dry-run=server"},
	} {
		err := cmdtest.RunOffline(t, args...)
		assert.Assert(t, err != nil, "%v", args)
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v: %v", args, err)
	}
}

func TestSummary(t *testing.T) {
	assert.Equal(t, syncbroker.Summary(&catalogsync.Result{}), "no changes")
	assert.Equal(t, syncbroker.Summary(&catalogsync.Result{ClassesAdded: 1, PlansAdded: 2, PlansRemoved: 1}),
		"1 class added, 2 plans added, 1 plan marked removed")
}
