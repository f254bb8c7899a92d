package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	gtgolden "gotest.tools/v3/golden"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// golden compares got with testdata/NAME; go test ./pkg/cmd/ -update (make golden)
// rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Join("testdata", filepath.Dir(name)), 0o755))
	gtgolden.Assert(t, got, name)
}

// stableEnvironment makes what the help shows independent of the machine: defaults
// derived from the home directory and the environment.
func stableEnvironment(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", "/home/user")
	t.Setenv("KUBECACHEDIR", "")
	t.Setenv(cmdutil.CatalogNamespaceEnv, "")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
}

// commandPaths lists the path of every command of the tree but help, as arguments.
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{}))
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Name() == "help" {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(NewCmdRoot(f), nil)
	return paths
}

// TestHelp_Golden: the --help of every command is as in testdata/help, and every
// command has a description (Long) and examples.
func TestHelp_Golden(t *testing.T) {
	stableEnvironment(t)
	paths := commandPaths(t)
	assert.Assert(t, len(paths) > 30)
	for _, p := range paths {
		name := strings.Join(append([]string{"kubectl", "catalog"}, p...), "_")
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
			root := NewCmdRoot(f)
			c, _, err := root.Find(p)
			assert.NilError(t, err)
			assert.Check(t, strings.TrimSpace(c.Long) != "", "%s has no Long description", c.CommandPath())
			assert.Check(t, strings.TrimSpace(c.Example) != "", "%s has no Example", c.CommandPath())
			code := Execute(context.Background(), f, append(append([]string(nil), p...), "--help"))
			assert.Equal(t, code, cmdutil.ExitOK, errOut.String())
			assert.Equal(t, errOut.String(), "")
			golden(t, filepath.Join("help", name+".golden"), out.String())
		})
	}
}
