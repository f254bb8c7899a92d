package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	root := NewCmdRoot(f)
	root.SetArgs(args)
	err := AsUsageError(root.ExecuteContext(context.Background()))
	return out.String(), errOut.String(), err
}

func TestRoot_HelpSaysKubectlCatalog(t *testing.T) {
	out, _, err := execute(t, "--help")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(out, "kubectl catalog [command]"))
	assert.Assert(t, !strings.Contains(out, "kubectl-catalog [command]"))
	assert.Assert(t, is.Contains(out, "--kubeconfig"))
	assert.Assert(t, is.Contains(out, "--qps"))
}

func TestRoot_EveryCommandIsDocumented(t *testing.T) {
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{}))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		t.Run(c.CommandPath(), func(t *testing.T) {
			assert.Assert(t, c.Short != "", "no short description")
			if c.Runnable() && c.HasParent() {
				assert.Assert(t, c.Example != "", "no examples")
				assert.Assert(t, is.Contains(c.Example, c.CommandPath()))
				for _, line := range strings.Split(c.Example, "\n") {
					assert.Assert(t, !strings.HasPrefix(strings.TrimSpace(line), "kubectl-catalog "),
						"example %q should show the kubectl form", line)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmdRoot(f))
}

func TestRoot_UnknownFlagIsAUsageError(t *testing.T) {
	_, _, err := execute(t, "version", "--no-such-flag")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
}

func TestRoot_UnknownCommandIsAUsageError(t *testing.T) {
	_, _, err := execute(t, "no-such-command")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
	assert.ErrorContains(t, err, `unknown command "no-such-command"`)
}

func TestVersion_ClientOnly_PrintsClientVersion(t *testing.T) {
	out, _, err := execute(t, "version", "--client")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(out, "Client Version: "))
	assert.Assert(t, !strings.Contains(out, "Server Version"))
}

func TestVersion_ClientOnly_YAML(t *testing.T) {
	out, _, err := execute(t, "version", "--client", "-o", "yaml")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(out, "clientVersion:\n  gitVersion: "))
}

func TestCompletion_EveryShell(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell", "kubectl"} {
		t.Run(shell, func(t *testing.T) {
			out, _, err := execute(t, "completion", shell)
			assert.NilError(t, err)
			assert.Assert(t, len(out) > 0)
		})
	}
	out, _, _ := execute(t, "completion", "kubectl")
	assert.Assert(t, is.Contains(out, `kubectl catalog __complete "$@"`))
}

func TestCompletion_UnknownShellIsAUsageError(t *testing.T) {
	_, _, err := execute(t, "completion", "tcsh")
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
}

// TestRoot_UsageMistakes_ExitTwo: a mistake in how any command is invoked exits 2,
// before anything contacts a cluster (these run without one), and an unknown command or
// noun gets a suggestion.
func TestRoot_UsageMistakes_ExitTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gett"}, "Did you mean this?\n\tget"},
		{[]string{"get", "brokrs"}, "Did you mean this?\n\tbrokers"},
		{[]string{"describe", "instanse", "db"}, "Did you mean this?\n\tinstance"},
		{[]string{"register"}, "accepts 1 arg(s), received 0"},
		{[]string{"register", "acme"}, `required flag(s) "url" not set`},
		{[]string{"describe", "broker"}, "accepts 1 arg(s)"},
		{[]string{"sync", "broker"}, "accepts 1 arg(s)"},
		{[]string{"access", "enable"}, "accepts 1 arg(s)"},
		{[]string{"reconcile", "now"}, `unknown command "now"`},
		{[]string{"provision", "db", "--user-provided"}, "needs its credentials"},
		{[]string{"provision", "db", "--credentials-json", "{}"}, "add --user-provided"},
		{[]string{"update", "db"}, "nothing to update"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, _, err := execute(t, tc.args...)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestRoot_EveryCommand_UnknownFlagExitsTwo walks the whole command tree.
func TestRoot_EveryCommand_UnknownFlagExitsTwo(t *testing.T) {
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{}))
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(NewCmdRoot(f), nil)
	assert.Assert(t, len(paths) > 20)
	for _, p := range paths {
		t.Run(strings.Join(p, " "), func(t *testing.T) {
			_, _, err := execute(t, append(p, "--no-such-flag")...)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage, "%v", err)
		})
	}
}
