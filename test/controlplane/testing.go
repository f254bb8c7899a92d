package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// RunMain starts one control plane for a test package, runs its tests, and
// stops it. Use it from TestMain:
//
//	var cp *controlplane.ControlPlane
//	func TestMain(m *testing.M) { os.Exit(controlplane.RunMain(m, &cp)) }
//
// A test that panics or a test binary that is killed takes the control plane
// with it (the children die with their parent); a normal run also checks that
// no process survived, and fails the package if one did.
func RunMain(m *testing.M, into **ControlPlane) int {
	start := time.Now()
	cp, err := Start(context.Background(), Options{Log: os.Stderr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot start the control plane: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "control plane ready in %s at %s\n", time.Since(start).Round(10*time.Millisecond), cp.Server)
	*into = cp
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	used := cp.CPU()
	fmt.Fprintf(os.Stderr, "control plane CPU: etcd %s, kube-apiserver %s, kube-controller-manager %s\n",
		used["etcd"].Round(100*time.Millisecond), used["kube-apiserver"].Round(100*time.Millisecond),
		used["kube-controller-manager"].Round(100*time.Millisecond))
	return code
}

var namespaceSeq atomic.Int64

// NewNamespace creates a fresh namespace for one test and deletes it when the
// test ends (without waiting for it to finish terminating).
func (c *ControlPlane) NewNamespace(t testing.TB) string {
	t.Helper()
	client, err := c.Client(AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%s-%d", sanitize(t.Name()), namespaceSeq.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		releaseFinalizers(client, name)
		_ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// releaseFinalizers drops the finalizers of the ConfigMaps and Secrets a finished test
// left in its namespace, so that the namespace goes away. Without it, records left
// pending on a broker the test has stopped would stay in a terminating namespace for the
// rest of the package, and every later "reconcile -A" would spend its time retrying them.
func releaseFinalizers(client kubernetes.Interface, ns string) {
	ctx := context.Background()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, cm := range cms.Items {
			if len(cm.Finalizers) > 0 {
				_, _ = client.CoreV1().ConfigMaps(ns).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
		}
	}
	if secrets, err := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range secrets.Items {
			if len(s.Finalizers) > 0 {
				_, _ = client.CoreV1().Secrets(ns).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
		}
	}
}

// sanitize turns a test name into the start of a namespace name.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-")
	}
	if s == "" {
		s = "test"
	}
	return s
}

// BuildPlugin builds kubectl-catalog into dir as a release builds it (static, without
// symbol tables and debug information) and returns its path. Callers put dir on PATH so
// the real kubectl discovers the plugin.
func BuildPlugin(dir string) (string, error) {
	return BuildPluginWith(dir, "")
}

// BuildPluginWith is BuildPlugin with more linker flags, for a build stamped as a release
// stamps it (-X of pkg/version's variables).
func BuildPluginWith(dir, ldflags string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "kubectl-catalog")
	cmd := exec.Command(goCommand(), "build", "-o", out, "-ldflags", strings.TrimSpace("-s -w "+ldflags), "./cmd/kubectl-catalog")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl-catalog: %v\n%s", err, b)
	}
	return out, nil
}
