package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/poll"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

// catalogEnv is one test's corner of the shared control plane: its own catalog
// namespace (so cluster-scoped brokers and access rules of parallel tests never meet)
// and a user namespace.
type catalogEnv struct {
	catalogNS, userNS string
	admin             kubernetes.Interface
	st                *store.Store
}

// run runs "kubectl catalog ARGS" as admin in the user namespace.
func (e *catalogEnv) run(t *testing.T, args ...string) result {
	t.Helper()
	return e.runAs(t, controlplane.AdminUser, e.userNS, args...)
}

func (e *catalogEnv) runAs(t *testing.T, user, ns string, args ...string) result {
	t.Helper()
	full := append([]string{"catalog"}, args...)
	full = append(full, "--catalog-namespace", e.catalogNS, "-n", ns)
	return kubectl(t, user, full...)
}

// runGlobal runs "kubectl catalog ARGS" as admin without -n: the kubeconfig's namespace.
func (e *catalogEnv) runGlobal(t *testing.T, args ...string) result {
	t.Helper()
	full := append([]string{"catalog"}, args...)
	return kubectl(t, controlplane.AdminUser, append(full, "--catalog-namespace", e.catalogNS)...)
}

func (e *catalogEnv) secret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	_, err := e.admin.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{})
	assert.NilError(t, err)
}

func (e *catalogEnv) classes(t *testing.T, ns, brokerName string) map[string]*v1alpha1.ServiceClass {
	t.Helper()
	cs, err := e.st.Classes().List(context.Background(), ns, store.Filter{Broker: brokerName})
	assert.NilError(t, err)
	out := map[string]*v1alpha1.ServiceClass{}
	for _, c := range cs {
		out[c.Spec.ID] = c
	}
	return out
}

// catalogSnapshot is the resourceVersion of every ConfigMap in ns: equal snapshots mean
// nothing was written.
func catalogSnapshot(t *testing.T, e *catalogEnv, ns string) map[string]string {
	t.Helper()
	cms, err := e.admin.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: store.LabelManagedBy + "=" + store.ManagedBy})
	assert.NilError(t, err)
	out := map[string]string{}
	for _, cm := range cms.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

// streamed is a command left running whose standard output is read as it comes.
type streamed struct {
	cmd    *exec.Cmd
	out    testio.Buffer
	stderr testio.Buffer
	done   chan error
}

func (s *streamed) Stdout() string { return s.out.String() }

// waitOutput waits until the output satisfies ok.
func (s *streamed) waitOutput(t *testing.T, what string, ok func(string) bool, timeout time.Duration) {
	t.Helper()
	poll.WaitOn(t, func(poll.LogT) poll.Result {
		if out := s.Stdout(); ok(out) {
			return poll.Success()
		}
		return poll.Continue("waiting for %s; output so far:\n%s", what, s.Stdout())
	}, poll.WithTimeout(slow(timeout)), poll.WithDelay(50*time.Millisecond))
}

// interrupt sends SIGINT (Ctrl-C) and returns the exit code.
func (s *streamed) interrupt(t *testing.T) int {
	t.Helper()
	assert.NilError(t, s.cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-s.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		assert.NilError(t, err)
		return 0
	case <-time.After(slow(20 * time.Second)):
		t.Fatalf("the command did not end after SIGINT; stderr:\n%s", s.stderr.String())
	}
	return -1
}

// startCatalog starts "kubectl catalog -n ns ARGS" as admin and reads its output.
func startCatalog(t *testing.T, ns string, args ...string) *streamed {
	t.Helper()
	return startCatalogIn(t, instEnviron(t), ns, args...)
}

// startCatalogIn is startCatalog in environment env (environ: a user's kubeconfig, and
// whatever else the user's environment names, such as the catalog namespace).
func startCatalogIn(t *testing.T, env []string, ns string, args ...string) *streamed {
	t.Helper()
	cmd := exec.Command(cp.Binaries.Kubectl, append([]string{"catalog", "-n", ns}, args...)...)
	cmd.Env = env
	s := &streamed{cmd: cmd, done: make(chan error, 1)}
	stdout, err := cmd.StdoutPipe()
	assert.NilError(t, err)
	cmd.Stderr = &s.stderr
	assert.NilError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, _ = s.out.Write([]byte(sc.Text() + "\n"))
		}
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	return s
}
