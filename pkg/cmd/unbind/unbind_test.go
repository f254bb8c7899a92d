package unbind_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/unbind"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func TestUnbind_BadInvocations_AreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "nothing named", args: []string{"unbind"}, want: "needs the BINDING"},
		{name: "all without instance", args: []string{"unbind", "--all"}, want: "give the instance as the only argument"},
		{name: "all with two instances", args: []string{"unbind", "a", "b", "--all"}, want: "got 2 arguments"},
		{name: "instance and argument", args: []string{"unbind", "a", "--instance", "db", "--all"}, want: "names the instance already"},
		{name: "instance alone", args: []string{"unbind", "--instance", "db"}, want: "add --all"},
		{name: "all and name", args: []string{"unbind", "db", "--all", "--name", "a"}, want: "--all and --name"},
		{name: "empty name in list", args: []string{"unbind", "db", "--name", "a,,b"}, want: "empty binding name"},
		{name: "abandon and wait", args: []string{"unbind", "db", "--abandon", "--wait"}, want: "cannot be used together"},
		{name: "zero interval", args: []string{"unbind", "db", "--interval", "0"}, want: "--interval"},
		{name: "unknown flag", args: []string{"unbind", "db", "--force"}, want: "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cmdtest.RunOffline(t, tc.args...)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
		})
	}
}

func TestUnbindOptions_Validate_SelectsByInstance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        unbind.Options
		instance string
	}{
		{name: "bindings", o: unbind.Options{Args: []string{"a", "b"}}},
		{name: "instance argument, all", o: unbind.Options{Args: []string{"db"}, All: true}, instance: "db"},
		{name: "instance argument, names", o: unbind.Options{Args: []string{"db"}, Names: []string{"a", "b"}}, instance: "db"},
		{name: "instance flag", o: unbind.Options{Instance: "db", All: true}, instance: "db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Wait = lifecycle.WaitFlags{Interval: 1}
			given := tc.o.Instance
			assert.NilError(t, tc.o.Validate())
			assert.Equal(t, tc.o.Instance, given, "Validate changes nothing")
			assert.Equal(t, unbind.RequestOf(&tc.o).Instance, tc.instance)
		})
	}
}
