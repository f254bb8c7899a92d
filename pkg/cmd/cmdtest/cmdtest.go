// Package cmdtest runs kubectl catalog commands in unit tests.
package cmdtest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// RunOffline executes "kubectl catalog ARGS" with a kubeconfig that does not
// exist, so any case that would reach a cluster fails instead: it is for
// flag parsing and validation, which must fail before a cluster is needed.
func RunOffline(t *testing.T, args ...string) error {
	t.Helper()
	_, err := RunOfflineOutput(t, args...)
	return err
}

// RunOfflineOutput is RunOffline that also returns what the command wrote
// to standard output.
func RunOfflineOutput(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := RunOfflineOutputs(t, args...)
	return out, err
}

// RunOfflineOutputs is RunOffline that also returns what the command wrote
// to standard output and standard error.
func RunOfflineOutputs(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
	root := cmd.NewCmdRoot(f)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}
