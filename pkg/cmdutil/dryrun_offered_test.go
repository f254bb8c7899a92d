package cmdutil

import (
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
)

func TestAddDryRunFlagOffering_AnyValueParsesForTheCommandToCheck(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    DryRunStrategy
		offered bool
	}{
		{args: nil, want: DryRunNone, offered: true},
		{args: []string{"--dry-run"}, want: DryRunClient, offered: true},
		{args: []string{"--dry-run=server"}, want: DryRunServer, offered: false},
		{args: []string{"--dry-run=true"}, want: "true", offered: false},
	} {
		var d DryRunStrategy
		cmd := &cobra.Command{}
		AddDryRunFlagOffering(cmd, &d, "what it does", DryRunNone, DryRunClient)
		assert.NilError(t, cmd.Flags().Parse(tc.args))
		assert.Equal(t, d, tc.want)
		assert.Equal(t, d.Offered(DryRunNone, DryRunClient), tc.offered, "%v", tc.args)
		flag := cmd.Flags().Lookup("dry-run")
		assert.Equal(t, flag.Usage, "what it does")
		assert.Equal(t, flag.DefValue, "none")
	}
}
