package cmd_test

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/deprovision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
)

func TestDeprovision_BadInvocations_AreUsageErrors(t *testing.T) {
	cmdtest.UsageErrors(t, []cmdtest.BadInvocation{
		{Name: "missing name", Args: []string{"deprovision", "--yes"}, Want: "needs the instance's NAME"},
		{Name: "two names", Args: []string{"deprovision", "a", "b", "--yes"}, Want: "takes one NAME"},
		{Name: "unknown flag", Args: []string{"deprovision", "db", "--force"}, Want: "unknown flag"},
		{Name: "abandon and wait", Args: []string{"deprovision", "db", "--abandon", "--wait", "--yes"}, Want: "cannot be used together"},
		{Name: "zero interval", Args: []string{"deprovision", "db", "--yes", "--interval", "0"}, Want: "--interval"},
		{Name: "bad bool", Args: []string{"deprovision", "db", "--yes=perhaps"}, Want: "invalid argument", PflagWording: true},
	})
}

func TestDeprovisionOptions_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    deprovision.Options
		want string
	}{
		{name: "plain", o: deprovision.Options{Name: "db", VerbOptions: lifecycle.VerbOptions{Wait: lifecycle.WaitFlags{Interval: 1}}}},
		{name: "wait", o: deprovision.Options{Name: "db", VerbOptions: lifecycle.VerbOptions{Wait: lifecycle.WaitFlags{Wait: true, Interval: 1}}}},
		{name: "abandon", o: deprovision.Options{Name: "db", Abandon: true, Yes: true, VerbOptions: lifecycle.VerbOptions{Wait: lifecycle.WaitFlags{Interval: 1}}}},
		{name: "abandon and wait", o: deprovision.Options{Name: "db", Abandon: true, VerbOptions: lifecycle.VerbOptions{Wait: lifecycle.WaitFlags{Wait: true, Interval: 1}}}, want: "--abandon and --wait"},
		{name: "no interval", o: deprovision.Options{Name: "db"}, want: "--interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			cmdtest.Validated(t, err, tc.want)
		})
	}
}

func TestNewCmdDeprovision_ParsesTheFlagsIntoOptions(t *testing.T) {
	got := cmdtest.Parse(t, deprovision.NewCmdDeprovision, "db", "-n", "dev", "--yes", "--wait", "--timeout", "1m", "--dry-run=none", "-o", "yaml")
	assert.Equal(t, got.Name, "db")
	assert.Equal(t, got.Namespace, "dev")
	assert.Assert(t, got.Yes && got.Wait.Wait && !got.Abandon)
	assert.Equal(t, got.Wait.Timeout, time.Minute)
	assert.Assert(t, got.Engine != nil)
}
