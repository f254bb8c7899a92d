package cmd_test

import (
	"testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
)

func TestSvcat_BadFlags_AreUsageErrorsBeforeAnyRead(t *testing.T) {
	cmdtest.UsageErrors(t, []cmdtest.BadInvocation{
		{Args: []string{"migrate", "svcat", "--dry-run=server"}, Want: `--dry-run must be "client" or "none", not "server" (a server-side dry run is not offered)`},
		{Args: []string{"migrate", "svcat", "--dry-run=true"}, Want: `--dry-run must be "client" or "none", not "true" (a server-side dry run is not offered)`},
		{Args: []string{"migrate", "svcat", "-o", "wide"}, Want: `--output must be table, json or yaml, not "wide"`},
		{Args: []string{"migrate", "svcat", "--dry-run", "-o", "json", "--broker-timeout", "0"}, Want: "--broker-timeout must be positive"},
	})
}
