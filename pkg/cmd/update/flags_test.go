package update_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/update"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// parse runs update with args, returning the options Run would get.
func parse(t *testing.T, args ...string) *update.Options {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	c := storetest.NewCluster()
	f.UseClients(c.Core, c.Metadata)
	var got *update.Options
	cmd := update.NewCmdUpdate(f, func(o *update.Options) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	assert.NilError(t, cmd.Execute())
	assert.Assert(t, got != nil, "runF was not called")
	return got
}

func TestNewCmdUpdate_FlagsReachTheOptions(t *testing.T) {
	o := parse(t, "db", "--plan", "standard", "--upgrade", "--params-json", `{"a":1}`, "--wait", "--timeout", "1m")
	assert.Equal(t, o.Name, "db")
	assert.Equal(t, o.Plan, "standard")
	assert.Assert(t, o.Upgrade && o.Wait.Wait)
	assert.Equal(t, o.Params.JSON, `{"a":1}`)
	assert.Equal(t, o.Wait.Timeout.String(), "1m0s")
	assert.Assert(t, o.Engine != nil)

	o = parse(t, "db", "--allowed-namespaces", "")
	assert.Assert(t, o.Limits.AllowedNamespacesGiven && !o.Limits.MaxBindingsGiven)
	assert.Equal(t, len(*o.Limits.Limits().AllowedNamespaces), 0)

	o = parse(t, "db", "--revert")
	assert.Assert(t, o.Revert)

	o = parse(t, "db", "--credentials-json", `{"password":"p"}`)
	data, err := o.Credentials.Input(nil, nil).Read()
	assert.NilError(t, err)
	assert.Equal(t, string(data["password"]), "p")
}
