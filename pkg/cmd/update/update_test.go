package update_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/update"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

func TestUpdate_BadInvocations_AreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "missing name", args: []string{"update", "--plan", "standard"}, want: "needs the instance's NAME"},
		{name: "two names", args: []string{"update", "a", "b", "--plan", "x"}, want: "takes one NAME"},
		{name: "nothing to update", args: []string{"update", "db"}, want: "nothing to update"},
		{name: "only wait flags", args: []string{"update", "db", "--wait"}, want: "nothing to update"},
		{name: "unknown flag", args: []string{"update", "db", "--class", "x"}, want: "unknown flag"},
		{name: "json and file", args: []string{"update", "db", "--params-json", "{}", "--params-file", "-"}, want: "cannot be used together"},
		{name: "bad secret ref", args: []string{"update", "db", "--params-from-secret", "/k"}, want: "SECRET or SECRET/KEY"},
		{name: "negative interval", args: []string{"update", "db", "--plan", "x", "--interval", "-1s"}, want: "--interval"},
		{name: "bad output", args: []string{"update", "db", "--plan", "x", "-o", "nosuch"}, want: "--output"},
		{name: "revert with a change", args: []string{"update", "db", "--revert", "-p", "a=1"}, want: "give it alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cmdtest.RunOffline(t, tc.args...)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
		})
	}
}

func TestUpdateOptions_Validate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*update.Options)
		want   string
	}{
		{name: "plan", change: func(o *update.Options) { o.Plan = "standard" }},
		{name: "upgrade", change: func(o *update.Options) { o.Upgrade = true }},
		{name: "a parameter", change: func(o *update.Options) { o.Params.Params = []string{"a=1"} }},
		{name: "parameters from a secret only", change: func(o *update.Options) { o.Params.FromSecret = []string{"s/k"} }},
		{name: "nothing", change: func(*update.Options) {}, want: "nothing to update"},
		{name: "revert", change: func(o *update.Options) { o.Revert = true }},
		{name: "revert and a plan", change: func(o *update.Options) { o.Revert, o.Plan = true, "standard" }, want: "give it alone"},
		{name: "revert and upgrade", change: func(o *update.Options) { o.Revert, o.Upgrade = true, true }, want: "give it alone"},
		{name: "json and file", change: func(o *update.Options) { o.Params.JSON, o.Params.File = "{}", "f" }, want: "cannot be used together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &update.Options{Name: "db", Output: printers.NewOutputFlags(false), Wait: lifecycle.WaitFlags{Interval: 2e9}}
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
