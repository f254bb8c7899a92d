package touch_test

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func TestTouch_BadInvocations_AreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "missing name", args: []string{"touch", "instance"}, want: "needs the instance's NAME"},
		{name: "alias, missing name", args: []string{"touch", "inst"}, want: "needs the instance's NAME"},
		{name: "two names", args: []string{"touch", "instance", "a", "b"}, want: "takes one NAME"},
		{name: "unknown flag", args: []string{"touch", "instance", "db", "-p", "a=1"}, want: "unknown shorthand flag"},
		{name: "zero interval", args: []string{"touch", "instance", "db", "--interval", "0s"}, want: "--interval"},
		{name: "unknown kind", args: []string{"touch", "binding", "b"}, want: "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cmdtest.RunOfflineOutput(t, tc.args...)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
		})
	}
}

func TestTouch_WithoutKind_ShowsHelp(t *testing.T) {
	out, err := cmdtest.RunOfflineOutput(t, "touch")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(out, "touch instance"), out)
}
