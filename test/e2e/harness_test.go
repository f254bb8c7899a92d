package e2e

import (
	"context"
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestControlPlane_StopLeavesNoProcess starts a second, short-lived control
// plane and checks that stopping it ends every process it started.
func TestControlPlane_StopLeavesNoProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	dir := t.TempDir()
	second, err := controlplane.Start(context.Background(), controlplane.Options{Dir: dir})
	assert.NilError(t, err)
	pids := processesMentioning(t, dir)
	assert.Assert(t, len(pids) >= 3, "etcd, kube-apiserver and kube-controller-manager should be running, found %v", pids)
	assert.NilError(t, second.Stop())
	assert.DeepEqual(t, processesMentioning(t, dir), []string(nil))
}

func processesMentioning(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	assert.NilError(t, err)
	var found []string
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || e.Name() == "self" {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if strings.Contains(string(b), dir) && !strings.Contains(string(stat), ") Z ") {
			found = append(found, e.Name())
		}
	}
	return found
}
