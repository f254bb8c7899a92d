package cmdutil

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
)

func TestDryRunFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    DryRunStrategy
		wantErr string
	}{
		{args: nil, want: DryRunNone},
		{args: []string{"--dry-run"}, want: DryRunClient},
		{args: []string{"--dry-run=client"}, want: DryRunClient},
		{args: []string{"--dry-run=server"}, want: DryRunServer},
		{args: []string{"--dry-run=none"}, want: DryRunNone},
		{args: []string{"--dry-run=true"}, wantErr: `invalid argument "true" for "--dry-run" flag: invalid value "true": must be one of none, client, server (a bare --dry-run means client)`},
		{args: []string{"--dry-run=Server"}, wantErr: `must be one of none, client, server`},
	} {
		t.Run(caseName(tc.args), func(t *testing.T) {
			var d DryRunStrategy
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
			AddDryRunFlag(cmd, &d, "the record")
			cmd.SetArgs(tc.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Equal(t, ExitCode(err), ExitUsage)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, d, tc.want)
			assert.Equal(t, d.Enabled(), tc.want != DryRunNone)
			assert.Equal(t, string(d.Engine()), string(tc.want))
		})
	}
}

// caseName names a test case by its arguments.
func caseName(args []string) string {
	if len(args) == 0 {
		return "no flag"
	}
	return args[0]
}

func TestDryRunWithWait_RefusesOnlyBoth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dry     DryRunStrategy
		wait    bool
		wantErr string
	}{
		{name: "none, no wait", dry: DryRunNone},
		{name: "none, wait", dry: DryRunNone, wait: true},
		{name: "client, no wait", dry: DryRunClient},
		{name: "client, wait", dry: DryRunClient, wait: true, wantErr: "--dry-run and --wait cannot be used together: a dry run records nothing, so there is nothing to wait for"},
		{name: "server, wait", dry: DryRunServer, wait: true, wantErr: "--dry-run and --wait cannot be used together: a dry run records nothing, so there is nothing to wait for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := DryRunWithWait(tc.dry, tc.wait, "records nothing")
			if tc.wantErr == "" {
				assert.NilError(t, err)
				return
			}
			assert.Error(t, err, tc.wantErr)
			var usage *UsageError
			assert.Assert(t, errors.As(err, &usage), "want a usage error, got %T", err)
		})
	}
}

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
