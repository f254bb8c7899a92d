package cmdtest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// FakeFactory is a factory on an empty fake cluster, with a kubeconfig that does not
// exist (so nothing reaches a real one), and the cluster to seed.
func FakeFactory(t *testing.T) (*cmdutil.Factory, *storetest.Cluster) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &out))
	c := storetest.NewCluster()
	f.UseClients(c.Core, c.Metadata)
	return f, c
}

// FakeFactoryIn is FakeFactory with namespace as -n gives it, reading no environment
// variable (so that those of the machine running the tests do not count).
func FakeFactoryIn(t *testing.T, namespace string) (*cmdutil.Factory, *storetest.Cluster) {
	t.Helper()
	f, c := FakeFactory(t)
	f.Getenv = func(string) string { return "" }
	f.ConfigFlags.Namespace = &namespace
	return f, c
}

// Parse runs the command newCmd builds on a FakeFactory with args, up to Run, and
// returns the completed options (see Completed).
func Parse[O any](t *testing.T, newCmd func(*cmdutil.Factory, func(O) error) *cobra.Command, args ...string) O {
	t.Helper()
	f, _ := FakeFactory(t)
	return Completed(t, f, newCmd, args...)
}

// Completed runs the command newCmd builds on f with args, up to Run, and returns the
// options its runF was given: completed, they are what Run would get. The factory's
// flags (-n, --context, ...) are added as the root command adds them.
func Completed[O any](t *testing.T, f *cmdutil.Factory, newCmd func(*cmdutil.Factory, func(O) error) *cobra.Command, args ...string) O {
	t.Helper()
	var got O
	called := false
	cmd := newCmd(f, func(o O) error { got, called = o, true; return nil })
	f.AddFlags(cmd.PersistentFlags())
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	assert.NilError(t, cmd.ExecuteContext(context.Background()), out.String())
	assert.Assert(t, called, "runF was not called")
	return got
}
