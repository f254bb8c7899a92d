package deprovision_test

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/deprovision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func TestDeprovision_BadInvocations_AreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "missing name", args: []string{"deprovision", "--yes"}, want: "needs the instance's NAME"},
		{name: "two names", args: []string{"deprovision", "a", "b", "--yes"}, want: "takes one NAME"},
		{name: "unknown flag", args: []string{"deprovision", "db", "--force"}, want: "unknown flag"},
		{name: "abandon and wait", args: []string{"deprovision", "db", "--abandon", "--wait", "--yes"}, want: "cannot be used together"},
		{name: "zero interval", args: []string{"deprovision", "db", "--yes", "--interval", "0"}, want: "--interval"},
		{name: "bad bool", args: []string{"deprovision", "db", "--yes=perhaps"}, want: "invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cmdtest.RunOffline(t, tc.args...)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
		})
	}
}

func TestDeprovisionOptions_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    deprovision.Options
		want string
	}{
		{name: "plain", o: deprovision.Options{Name: "db", Wait: lifecycle.WaitFlags{Interval: 1}}},
		{name: "wait", o: deprovision.Options{Name: "db", Wait: lifecycle.WaitFlags{Wait: true, Interval: 1}}},
		{name: "abandon", o: deprovision.Options{Name: "db", Abandon: true, Yes: true, Wait: lifecycle.WaitFlags{Interval: 1}}},
		{name: "abandon and wait", o: deprovision.Options{Name: "db", Abandon: true, Wait: lifecycle.WaitFlags{Wait: true, Interval: 1}}, want: "--abandon and --wait"},
		{name: "no interval", o: deprovision.Options{Name: "db"}, want: "--interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
		})
	}
}

func TestNewCmdDeprovision_ParsesTheFlagsIntoOptions(t *testing.T) {
	f, _ := cmdtest.FakeFactory(t)
	got := cmdtest.Completed(t, f, deprovision.NewCmdDeprovision, "db", "-n", "dev", "--yes", "--wait", "--timeout", "1m", "--dry-run=none", "-o", "yaml")
	assert.Equal(t, got.Name, "db")
	assert.Equal(t, got.Namespace, "dev")
	assert.Assert(t, got.Yes && got.Wait.Wait && !got.Abandon)
	assert.Equal(t, got.Wait.Timeout, time.Minute)
	assert.Assert(t, got.Engine != nil)
}
