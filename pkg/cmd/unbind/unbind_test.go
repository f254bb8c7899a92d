package unbind_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/unbind"
)

func TestUnbind_BadInvocations_AreUsageErrors(t *testing.T) {
	cmdtest.UsageErrors(t, []cmdtest.BadInvocation{
		{Name: "nothing named", Args: []string{"unbind"}, Want: "needs the BINDING"},
		{Name: "all without instance", Args: []string{"unbind", "--all"}, Want: "give the instance as the only argument"},
		{Name: "all with two instances", Args: []string{"unbind", "a", "b", "--all"}, Want: "got 2 arguments"},
		{Name: "instance and argument", Args: []string{"unbind", "a", "--instance", "db", "--all"}, Want: "names the instance already"},
		{Name: "instance alone", Args: []string{"unbind", "--instance", "db"}, Want: "add --all"},
		{Name: "all and name", Args: []string{"unbind", "db", "--all", "--name", "a"}, Want: "--all and --name"},
		{Name: "empty name in list", Args: []string{"unbind", "db", "--name", "a,,b"}, Want: "empty binding name"},
		{Name: "abandon and wait", Args: []string{"unbind", "db", "--abandon", "--wait"}, Want: "cannot be used together"},
		{Name: "zero interval", Args: []string{"unbind", "db", "--interval", "0"}, Want: "--interval"},
		{Name: "unknown flag", Args: []string{"unbind", "db", "--force"}, Want: "unknown flag"},
	})
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
