package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

// serveListen is the --listen of the "reconcile --serve" processes the tests start: a
// port the system picks when the process binds it (a port chosen free beforehand may be
// taken by another process before then). serveBase reads it from the output.
const serveListen = "127.0.0.1:0"

// serveAddrLine is the line where "reconcile --serve" says the address it serves on.
var serveAddrLine = regexp.MustCompile(`serving /healthz and /metrics on (\S+)`)

// serveBase waits until the "reconcile --serve" writing to out says where it serves
// /healthz and /metrics, and returns that address's URL.
func serveBase(t *testing.T, out *testio.Buffer) string {
	t.Helper()
	var addr string
	instWaitFor(t, "reconcile --serve to say where it serves", 30*time.Second, func() bool {
		if m := serveAddrLine.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	return "http://" + addr
}

// recEnv bounds every broker call of a reconcile run in these tests.
var recEnv = []string{cmdutil.TestBrokerTimeoutEnv + "=5s"}

func recStore(t *testing.T) *store.Store {
	t.Helper()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	return store.New(admin, nil)
}

// recRun runs "kubectl catalog reconcile --trust-namespace-writers ARGS -o json" in ns
// over the tests' own records and returns its summary.
func recRun(t *testing.T, ns string, env []string, args ...string) (reconcile.Summary, result) {
	t.Helper()
	return recRunStrict(t, ns, env, append([]string{asRunner}, args...)...)
}

// recRunStrict is recRun as reconcile in the cluster runs: only with the authority of
// records' verified authors.
func recRunStrict(t *testing.T, ns string, env []string, args ...string) (reconcile.Summary, result) {
	t.Helper()
	r := instRun(t, ns, append(slices.Clone(recEnv), env...), append([]string{"reconcile", "-o", "json"}, args...)...)
	var sum reconcile.Summary
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &sum), "exit %d: %s", r.ExitCode, r.Stderr)
	return sum, r
}

// recItem is the summary's line of the instance ns/name, if any.
func recItem(sum reconcile.Summary, ns, name string) (reconcile.Item, bool) {
	for _, it := range sum.Items {
		if it.Namespace == ns && it.Kind == v1alpha1.KindServiceInstance && it.Name == name {
			return it, true
		}
	}
	return reconcile.Item{}, false
}

// recKindItem is the summary's line of the record kind ns/name, if any.
func recKindItem(sum reconcile.Summary, kind, ns, name string) (reconcile.Item, bool) {
	for _, it := range sum.Items {
		if it.Namespace == ns && it.Kind == kind && it.Name == name {
			return it, true
		}
	}
	return reconcile.Item{}, false
}

// recProvision provisions hobby (synchronous) instances and waits for them.
func recProvision(t *testing.T, ns string, names ...string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, n := range names {
		r := instCatalog(t, ns, "provision", n, "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "60s", "--interval", "200ms")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	st := recStore(t)
	for _, n := range names {
		inst, err := st.Instances().Get(context.Background(), ns, n)
		assert.NilError(t, err)
		ids[n] = inst.Spec.ExternalID
	}
	return ids
}

// recDeleteConfigMaps deletes instance records the way a user would, with a plain
// "kubectl delete configmap": the finalizer holds them.
func recDeleteConfigMaps(t *testing.T, ns string, names ...string) {
	t.Helper()
	args := []string{"delete", "configmap", "-n", ns, "--wait=false"}
	for _, n := range names {
		args = append(args, store.ConfigMapName(v1alpha1.KindServiceInstance, n))
	}
	r := kubectl(t, controlplane.AdminUser, args...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
}

func recAssertGone(t *testing.T, st *store.Store, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := st.Instances().Get(context.Background(), ns, n)
		assert.Assert(t, store.IsNotFound(err), "instance %s/%s should be gone: %v", ns, n, err)
	}
}

// recAssertBindingGone checks that the binding record and its Secret are gone.
func recAssertBindingGone(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = store.New(admin, nil).Bindings().Get(ctx, ns, name)
	assert.Assert(t, store.IsNotFound(err), "binding %s/%s should be gone: %v", ns, name, err)
	_, err = admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "the Secret of binding %s/%s should be gone: %v", ns, name, err)
}

// serveGet GETs url and returns the status and body; status 0 when nothing answered.
func serveGet(url string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
