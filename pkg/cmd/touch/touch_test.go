package touch_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	var out bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &bytes.Buffer{}))
	root := cmd.NewCmdRoot(f)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

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
			_, err := run(t, tc.args...)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
		})
	}
}

func TestTouch_WithoutKind_ShowsHelp(t *testing.T) {
	out, err := run(t, "touch")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(out, "touch instance"), out)
}
