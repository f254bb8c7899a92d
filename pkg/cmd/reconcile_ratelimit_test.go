package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// "kubectl catalog reconcile" through the root command: the client's rate limits follow
// --workers, and the root's --qps and --burst, when given, stand.
func TestReconcile_RateLimitsFollowWorkersUnlessGiven(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		qps   float32
		burst int
	}{
		{args: nil, qps: 240, burst: 480},
		{args: []string{"--workers", "64"}, qps: 1920, burst: 3840},
		{args: []string{"--workers", "64", "--qps", "50"}, qps: 50, burst: cmdutil.DefaultBurst},
		{args: []string{"--workers", "64", "--burst", "20"}, qps: 1920, burst: 20},
	} {
		t.Run(strings.Join(append([]string{"reconcile"}, tc.args...), " "), func(t *testing.T) {
			kubeconfig := filepath.Join(t.TempDir(), "config")
			assert.NilError(t, os.WriteFile(kubeconfig, []byte(completionKubeconfig), 0o600))
			t.Setenv("KUBECONFIG", kubeconfig)
			var out, errOut bytes.Buffer
			f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &errOut))
			c := storetest.NewCluster()
			f.UseClients(c.Core, c.Metadata)
			root := NewCmdRoot(f)
			root.SetArgs(append([]string{"reconcile", "--dry-run", "--trust-namespace-writers", "-o", "json"}, tc.args...))
			_ = root.ExecuteContext(context.Background()) // an empty cluster: whatever the run says
			assert.Equal(t, f.QPS, tc.qps, errOut.String())
			assert.Equal(t, f.Burst, tc.burst)
		})
	}
}
