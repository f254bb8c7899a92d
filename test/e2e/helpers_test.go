package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// SlowEnv scales every timeout the tests wait with (not how long they wait: they wait
// for conditions, and return as soon as those hold). Set it on a loaded or slow
// machine, e.g. E2E_SLOW=4, or to 1 for the nominal timeouts.
const SlowEnv = "E2E_SLOW"

// defaultSlow is the factor when SlowEnv is not set: a machine running another suite
// beside this one (two cores shared by two packages of control planes) takes about
// twice as long to reach a condition, and a wait on a condition costs nothing when it
// holds sooner.
const defaultSlow = 2

var slowFactor = sync.OnceValue(func() float64 {
	v, ok := os.LookupEnv(SlowEnv)
	if !ok {
		return defaultSlow
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		return 1
	}
	return f
})

// slow is a timeout scaled by E2E_SLOW.
func slow(d time.Duration) time.Duration {
	return time.Duration(float64(d) * slowFactor())
}

// commandTimeout bounds one command line a test runs.
const commandTimeout = 2 * time.Minute

// result is the outcome of one command line.
type result struct {
	Stdout, Stderr string
	ExitCode       int
}

// kubectl runs "kubectl ARGS..." as user, with the plugin under test on PATH.
// "kubectl catalog ..." runs the plugin itself, as kubectl does once it has found it on
// PATH: kubectl executes the plugin in its own place with the arguments after "catalog"
// and the same environment. Starting kubectl costs more CPU than most commands of the
// plugin, and the suite runs about a thousand of them; viaKubectl's tests cover the
// discovery and what kubectl passes on.
func kubectl(t *testing.T, user string, args ...string) result {
	t.Helper()
	if len(args) > 0 && args[0] == "catalog" {
		return runCommand(t, filepath.Join(binDir, "kubectl-catalog"), user, args[1:]...)
	}
	return runCommand(t, cp.Binaries.Kubectl, user, args...)
}

// viaKubectl runs the real kubectl as user, with the plugin under test on PATH, also
// for "kubectl catalog ...": plugin discovery and all.
func viaKubectl(t *testing.T, user string, args ...string) result {
	t.Helper()
	return runCommand(t, cp.Binaries.Kubectl, user, args...)
}

// runCommand runs bin as user, with the plugin under test on PATH.
func runCommand(t *testing.T, bin, user string, args ...string) result {
	t.Helper()
	return runWith(t, environ(t, user), bin, args...)
}

// instCatalog runs "kubectl catalog -n NS ARGS..." as the admin.
func instCatalog(t *testing.T, ns string, args ...string) result {
	t.Helper()
	return kubectl(t, controlplane.AdminUser, append([]string{"catalog", "-n", ns}, args...)...)
}

// instRun runs "kubectl catalog -n NS ARGS..." as the admin with extra environment.
func instRun(t *testing.T, ns string, env []string, args ...string) result {
	t.Helper()
	return runWith(t, append(instEnviron(t), env...), filepath.Join(binDir, "kubectl-catalog"), append([]string{"-n", ns}, args...)...)
}

// commandsRun and commandsCPU count the commands runWith ran and the processor time
// they used (in nanoseconds), for the summary at the end of the package.
var commandsRun, commandsCPU atomic.Int64

// runWith runs bin with args in the environment env and returns what it printed and
// its exit code; a command that cannot start, or runs past commandTimeout, fails the
// test.
func runWith(t *testing.T, env []string, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slow(commandTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.ProcessState != nil {
		commandsRun.Add(1)
		commandsCPU.Add(int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()))
	}
	res := result{Stdout: stdout.String(), Stderr: stderr.String()}
	if exitErr, ok := err.(*exec.ExitError); ok {
		res.ExitCode = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %s: %v", filepath.Base(bin), strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %s ran for more than %s", filepath.Base(bin), strings.Join(args, " "), slow(commandTimeout))
	}
	t.Logf("$ %s %s (exit %d)\n%s%s", filepath.Base(bin), strings.Join(args, " "), res.ExitCode, res.Stdout, res.Stderr)
	return res
}

// environ is the environment a command runs in as user: the plugin under test first on
// PATH, then kubectl, and the user's kubeconfig.
func environ(t *testing.T, user string) []string {
	return append(os.Environ(),
		"PATH="+binDir+string(os.PathListSeparator)+filepath.Dir(cp.Binaries.Kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cp.Kubeconfig(user),
		"HOME="+t.TempDir(),
	)
}

// instEnviron is the admin's environment (see environ).
func instEnviron(t *testing.T) []string {
	return environ(t, controlplane.AdminUser)
}

// instWaitFor waits until cond holds, failing the test after timeout (scaled by
// E2E_SLOW).
// deleteNamespaceUntilFinalizersRemain deletes namespace ns and waits until the
// namespace controller deleted what it may and says finalizers remain (the records').
func deleteNamespaceUntilFinalizersRemain(t *testing.T, admin kubernetes.Interface, ns, what string) {
	t.Helper()
	ctx := context.Background()
	assert.NilError(t, admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	instWaitFor(t, what, 2*time.Minute, func() bool {
		n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

func instWaitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(slow(timeout))
	// Polls come quickly at first and then less often: a condition most often holds
	// within a second, and a test waiting longer should not load the API server that
	// the other tests share.
	interval := 50 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%s)", what, slow(timeout))
		}
		time.Sleep(interval)
		interval = min(interval*3/2, 250*time.Millisecond)
	}
}

// writeTokenKubeconfig writes a kubeconfig for the control plane with a bearer token.
func writeTokenKubeconfig(t *testing.T, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: cp.Server, CertificateAuthority: cp.CAFile}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "sa", Namespace: "default"}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	assert.NilError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// saKubectl runs the real kubectl with kubeconfig and returns its trimmed standard
// output, whatever the exit code ("kubectl auth can-i" exits 1 on "no").
func saKubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slow(30*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.Binaries.Kubectl, args...)
	cmd.Env = append(instEnviron(t), "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
		}
	}
	return strings.TrimSpace(stdout.String())
}
