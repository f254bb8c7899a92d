package cmd_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/cmdtest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/update"
)

// parseUpdate runs update with args, returning the options Run would get.
func parseUpdate(t *testing.T, args ...string) *update.Options {
	t.Helper()
	return cmdtest.Parse(t, update.NewCmdUpdate, args...)
}

func TestNewCmdUpdate_FlagsReachTheOptions(t *testing.T) {
	o := parseUpdate(t, "db", "--plan", "standard", "--upgrade", "--params-json", `{"a":1}`, "--wait", "--timeout", "1m")
	assert.Equal(t, o.Name, "db")
	assert.Equal(t, o.Plan, "standard")
	assert.Assert(t, o.Upgrade && o.Wait.Wait)
	assert.Equal(t, o.Params.JSON, `{"a":1}`)
	assert.Equal(t, o.Wait.Timeout.String(), "1m0s")
	assert.Assert(t, o.Engine != nil)

	o = parseUpdate(t, "db", "--allowed-namespaces", "")
	assert.Assert(t, o.Limits.AllowedNamespacesGiven && !o.Limits.MaxBindingsGiven)
	assert.Equal(t, len(*o.Limits.Limits().AllowedNamespaces), 0)

	o = parseUpdate(t, "db", "--revert")
	assert.Assert(t, o.Revert)

	o = parseUpdate(t, "db", "--credentials-json", `{"password":"p"}`)
	data, err := o.Credentials.Input(nil, nil).Read()
	assert.NilError(t, err)
	assert.Equal(t, string(data["password"]), "p")
}
