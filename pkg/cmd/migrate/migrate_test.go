package migrate_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func TestSvcat_BadFlags_AreUsageErrorsBeforeAnyRead(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"--dry-run=server"}, want: `--dry-run must be "client" or "none", not "server" (a server-side dry run is not offered)`},
		{args: []string{"--dry-run=true"}, want: `--dry-run must be "client" or "none", not "true" (a server-side dry run is not offered)`},
		{args: []string{"-o", "wide"}, want: `--output must be table, json or yaml, not "wide"`},
		{args: []string{"--dry-run", "-o", "json", "--broker-timeout", "0"}, want: "--broker-timeout must be positive"},
	} {
		err := cmdtest.RunOffline(t, append([]string{"migrate", "svcat"}, tc.args...)...)
		assert.Error(t, err, tc.want)
		assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
	}
}
