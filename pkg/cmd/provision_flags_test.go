package cmd_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/provision"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// parseProvision runs provision with args, returning the options Run would get.
func parseProvision(t *testing.T, args ...string) *provision.Options {
	t.Helper()
	return cmdtest.Parse(t, provision.NewCmdProvision, args...)
}

func TestNewCmdProvision_FlagsReachTheOptions(t *testing.T) {
	o := parseProvision(t, "db", "--class", "postgresql", "--plan", "small", "-p", "a=1", "--max-bindings", "3",
		"--allowed-namespaces", "b, a,b", "--dry-run=server", "-o", "yaml")

	assert.Equal(t, o.Name, "db")
	assert.Equal(t, o.Class, "postgresql")
	assert.Equal(t, o.Plan, "small")
	assert.DeepEqual(t, o.Params.Params, []string{"a=1"})
	assert.Equal(t, o.DryRun, cmdutil.DryRunServer)
	assert.Assert(t, o.Limits.MaxBindingsGiven && o.Limits.AllowedNamespacesGiven)
	assert.Equal(t, o.Limits.MaxBindings, int32(3))
	assert.DeepEqual(t, o.Limits.AllowedNamespaces, []string{"b", " a", "b"})
	lim := o.Limits.Limits()
	assert.Equal(t, *lim.MaxBindings, int32(3))
	assert.Assert(t, o.Engine != nil)
	assert.Equal(t, o.Namespace, "default")
}

func TestNewCmdProvision_UserProvided(t *testing.T) {
	o := parseProvision(t, "legacy", "--user-provided", "--credentials-from-secret", "legacy-src", "--syslog-drain-url", "syslog://logs.example:514")

	assert.Assert(t, o.UserProvided)
	assert.Assert(t, !o.Limits.Given())
	in := o.Credentials.Input(nil, nil)
	assert.Equal(t, in.FromSecret, "legacy-src")
	assert.Equal(t, in.SyslogDrainURL, "syslog://logs.example:514")
	assert.Assert(t, in.Read == nil)
}
