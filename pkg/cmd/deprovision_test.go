package cmd_test

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/deprovision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
)

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
