// Package e2e runs kubectl-catalog end to end: the real binary, discovered
// by a real kubectl, against a real kube-apiserver, etcd and
// kube-controller-manager with RBAC on.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

var (
	cp *controlplane.ControlPlane
	// binDir holds kubectl-catalog and a link to kubectl; it goes first on
	// PATH so plugin discovery finds the binary under test.
	binDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kubectl-catalog-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if _, err := controlplane.BuildPlugin(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	return controlplane.RunMain(m, &cp)
}

// asRunner is the flag the tests' reconcile runs take: the control plane has no trust
// policy installed (test/e2e/trust_test.go installs it for itself), so no record's author
// can be verified, and reconcile acts on them with the admin's own rights only when asked
// to; the records are the tests' own.
const asRunner = "--trust-unverified-authors"

// result is the outcome of one command line.
type result struct {
	Stdout, Stderr string
	ExitCode       int
}

// kubectl runs the real kubectl as user, with the plugin under test on PATH.
func kubectl(t *testing.T, user string, args ...string) result {
	t.Helper()
	return runCommand(t, cp.Binaries.Kubectl, user, args...)
}

func runCommand(t *testing.T, bin, user string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(),
		"PATH="+binDir+string(os.PathListSeparator)+filepath.Dir(cp.Binaries.Kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cp.Kubeconfig(user),
		"HOME="+t.TempDir(),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	res := result{Stdout: stdout.String(), Stderr: stderr.String()}
	if exitErr, ok := err.(*exec.ExitError); ok {
		res.ExitCode = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %s: %v", bin, strings.Join(args, " "), err)
	}
	t.Logf("$ %s %s (exit %d)\n%s%s", filepath.Base(bin), strings.Join(args, " "), res.ExitCode, res.Stdout, res.Stderr)
	return res
}
