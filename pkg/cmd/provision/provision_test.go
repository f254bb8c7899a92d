package provision_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/provision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

func TestProvision_BadInvocations_AreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "missing name", args: []string{"provision", "--class", "postgresql"}, want: "needs the instance's NAME"},
		{name: "two names", args: []string{"provision", "a", "b"}, want: "takes one NAME"},
		{name: "empty name", args: []string{"provision", ""}, want: "must not be empty"},
		{name: "unknown flag", args: []string{"provision", "db", "--no-such"}, want: "unknown flag"},
		{name: "flag without value", args: []string{"provision", "db", "--class"}, want: "needs an argument"},
		{name: "bad duration", args: []string{"provision", "db", "--timeout", "soon"}, want: "invalid argument"},
		{name: "bad bool", args: []string{"provision", "db", "--wait=maybe"}, want: "invalid argument"},
		{name: "json and file", args: []string{"provision", "db", "--params-json", "{}", "--params-file", "p.json"}, want: "cannot be used together"},
		{name: "empty secret name", args: []string{"provision", "db", "--params-from-secret", "/key"}, want: "SECRET or SECRET/KEY"},
		{name: "zero interval", args: []string{"provision", "db", "--interval", "0s"}, want: "--interval must be positive"},
		{name: "bad output", args: []string{"provision", "db", "-o", "nosuch"}, want: "--output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cmdtest.RunOffline(t, tc.args...)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
		})
	}
}

func TestProvisionOptions_Validate(t *testing.T) {
	valid := func() *provision.Options {
		return &provision.Options{
			Name: "db", Class: "postgresql", Output: printers.NewOutputFlags(false),
			Wait: lifecycle.WaitFlags{Interval: 2e9},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*provision.Options)
		want   string
	}{
		{name: "valid", change: func(*provision.Options) {}},
		{name: "no class is fine (asked in a terminal)", change: func(o *provision.Options) { o.Class = "" }},
		{name: "json and file", change: func(o *provision.Options) { o.Params.JSON, o.Params.File = "{}", "x" }, want: "cannot be used together"},
		{name: "negative interval", change: func(o *provision.Options) { o.Wait.Interval = -1 }, want: "--interval"},
		{name: "bad secret ref", change: func(o *provision.Options) { o.Params.FromSecret = []string{""} }, want: "SECRET or SECRET/KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.change(o)
			err := o.Validate()
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
		})
	}
}
