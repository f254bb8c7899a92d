package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/serve"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

// serveWaitStatus polls url until it answers want, and returns the body and how long
// it took.
func serveWaitStatus(t *testing.T, url string, want int, within time.Duration) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		code, body := serveGet(url)
		if code == want {
			return body, time.Since(start)
		}
		if time.Since(start) > slow(within) {
			t.Fatalf("%s: still %d after %s, want %d: %s", url, code, slow(within), want, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestReconcileServe_HealthFollowsTheAPIServerAndSIGTERMExitsZero runs "reconcile
// --serve" against a control plane of its own (its API server is stopped and started
// again, which the package's shared one must not see): /healthz is 200, /metrics
// scrapes with broker requests in it, /healthz turns 503 while the API server is down
// and 200 once it is back, and SIGTERM ends the process with 0.
func TestReconcileServe_HealthFollowsTheAPIServerAndSIGTERMExitsZero(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a control plane of its own")
	}
	ctx := context.Background()
	own, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir()})
	assert.NilError(t, err)
	t.Cleanup(func() { assert.Check(t, own.Stop()) })
	kubeconfig := own.Kubeconfig(controlplane.AdminUser)
	plugin := filepath.Join(binDir, "kubectl-catalog")
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())

	// A broker whose catalog is fetched again at every run, so that the runs talk to
	// it and its requests show in the metrics.
	b := broker.NewTestBroker(t, broker.Options{})
	reg := exec.Command(plugin, "register", "acme", "--url", b.URL(), "--scope", "namespace", "-n", "default", "--relist-interval", "1s")
	reg.Env = env
	out, err := reg.CombinedOutput()
	assert.NilError(t, err, "%s", out)

	grace := 5 * time.Second
	cmd := exec.Command(plugin, "reconcile", "-A", "--serve", "--serve-interval", "2s", "--listen", serveListen, "--shutdown-grace", grace.String())
	cmd.Env = env
	var stderr testio.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	assert.NilError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		t.Logf("reconcile --serve output:\n%s", stderr.String())
	})
	base := serveBase(t, &stderr)

	body, took := serveWaitStatus(t, base+"/healthz", http.StatusOK, 20*time.Second)
	t.Logf("/healthz 200 after %s: %s", took, body)
	var h serve.Health
	assert.NilError(t, json.Unmarshal([]byte(body), &h))
	assert.Equal(t, h.Status, "ok")
	assert.Assert(t, h.APIServer.Reachable)
	// Healthy from the start; the first run's outcome shows once it has ended.
	for deadline := time.Now().Add(slow(15 * time.Second)); h.LastRun == nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		_, body = serveGet(base + "/healthz")
		h = serve.Health{}
		assert.NilError(t, json.Unmarshal([]byte(body), &h), body)
	}
	assert.Assert(t, h.LastRun != nil, "no run reported: %s", body)

	// Wait for a run that relisted the broker.
	deadline := time.Now().Add(slow(15 * time.Second))
	var metrics string
	for {
		_, metrics = serveGet(base + "/metrics")
		// The broker's latency is observed during the run, the run's records when it
		// ends: wait for both.
		relisted := strings.Contains(metrics, `kubectl_catalog_broker_request_duration_seconds_count{broker="default/acme",code="2xx"}`) &&
			strings.Contains(metrics, `kubectl_catalog_reconcile_records_total{kind="Broker",outcome="done"}`)
		if relisted || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{
		`kubectl_catalog_reconcile_runs_total{result="ok"}`,
		`kubectl_catalog_reconcile_records_total{kind="Broker",outcome="done"}`,
		"kubectl_catalog_reconcile_queue_depth ",
		"kubectl_catalog_reconcile_last_run_timestamp_seconds ",
		"kubectl_catalog_reconcile_run_duration_seconds_bucket",
		`kubectl_catalog_broker_request_duration_seconds_count{broker="default/acme",code="2xx"}`,
	} {
		assert.Assert(t, is.Contains(metrics, want))
	}

	// The API server goes away: /healthz says so within a few seconds.
	assert.NilError(t, own.StopAPIServer())
	body, took = serveWaitStatus(t, base+"/healthz", http.StatusServiceUnavailable, 15*time.Second)
	t.Logf("/healthz 503 %s after the API server stopped: %s", took, body)
	// Whichever comes first says so: the API server check, or a run that cannot list.
	assert.NilError(t, json.Unmarshal([]byte(body), &h))
	assert.Equal(t, h.Status, "unhealthy")
	assert.Assert(t, is.Contains(body, "connection refused"))

	// A run while it is away says so in the log.
	for deadline := time.Now().Add(slow(10 * time.Second)); !strings.Contains(stderr.String(), "cannot list the pending records") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}

	// It comes back: so does /healthz.
	assert.NilError(t, own.StartAPIServer(ctx))
	body, took = serveWaitStatus(t, base+"/healthz", http.StatusOK, 20*time.Second)
	t.Logf("/healthz 200 %s after the API server was ready again: %s", took, body)

	// SIGTERM, as the kubelet sends it: exit 0 within the grace period.
	start := time.Now()
	assert.NilError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		assert.NilError(t, err, "exit status after SIGTERM")
		assert.Equal(t, cmd.ProcessState.ExitCode(), 0)
	case <-time.After(grace + slow(5*time.Second)):
		t.Fatalf("reconcile --serve still running %s after SIGTERM", grace+5*time.Second)
	}
	t.Logf("exited %s after SIGTERM", time.Since(start))
	log := stderr.String()
	assert.Assert(t, is.Contains(log, "reconcile run took"))
	assert.Assert(t, is.Contains(log, "cannot list the pending records"), "a run while the API server was down says so")
	assert.Assert(t, is.Contains(log, "stopping: no new run"))
	assert.Assert(t, is.Contains(log, "Z stopped\n"))
}
