package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/poll"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// cliCandidates are the names a "__complete" run printed (descriptions and the
// directive line left out).
func cliCandidates(t *testing.T, r result) []string {
	t.Helper()
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		name, _, _ := strings.Cut(l, "\t")
		out = append(out, name)
	}
	return out
}

// TestCLISurface_Completion: the real plugin completes names from the
// real control plane: instances, brokers, plans of a class, namespaces, bind --to.
func TestCLISurface_Completion(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "hobby", nil)
	_, err := e.admin.AppsV1().Deployments(e.ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Replicas: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	r := e.run(t, "bind", "db", "--name", "db-app")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	complete := func(args ...string) []string {
		t.Helper()
		return cliCandidates(t, e.run(t, append([]string{"__complete"}, args...)...))
	}
	assert.DeepEqual(t, complete("describe", "instance", ""), []string{"db"})
	assert.DeepEqual(t, complete("deprovision", "d"), []string{"db"})
	assert.DeepEqual(t, complete("unbind", ""), []string{"db-app"})
	assert.DeepEqual(t, complete("get", "brokers", ""), []string{"acme"})
	assert.DeepEqual(t, complete("provision", "x", "--class", "postgresql", "--plan", ""), []string{"hobby", "standard", "ha"})
	assert.DeepEqual(t, complete("update", "db", "--plan", "s"), []string{"standard"})
	assert.Assert(t, is.Contains(complete("provision", "x", "--class", ""), "postgresql"))
	assert.Assert(t, is.Contains(complete("get", "instances", "-n", ""), e.ns))
	assert.Assert(t, is.Contains(complete("share", "db", "--to-namespace", ""), "default"))
	assert.DeepEqual(t, complete("bind", "db", "--to", "deployment/"), []string{"deployment/web"})
	assert.DeepEqual(t, complete("bind", "db", "--to", "st"), []string{"statefulset/"})

	// A user who may not list namespaces gets no candidates and no error.
	r = viaKubectl(t, "alice", "catalog", "__complete", "-n", "")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, strings.TrimSpace(r.Stdout), ":4")
	assert.Assert(t, !strings.Contains(r.Stderr, "forbidden"), r.Stderr)
}

// TestCLISurface_ExitCodes: the lifecycle verbs exit 0 on success, 1 on a failure, 2 on
// a usage mistake, 124 when --wait runs out of time and 130 when interrupted.
func TestCLISurface_ExitCodes(t *testing.T) {
	t.Parallel()
	e := bndSetup(t, "ha", nil) // instance db: async binds
	for _, tc := range []struct {
		args []string
		exit int
		want string
	}{
		{[]string{"provision", "two", "--class", "postgresql", "--plan", "hobby"}, 0, `Instance "two" is ready`},
		{[]string{"update", "two", "-p", "storage_gb=6", "--wait"}, 0, ""},
		{[]string{"bind", "two", "--name", "two-app"}, 0, `binding "two-app" created`},
		{[]string{"unbind", "two-app", "--wait"}, 0, ""},
		{[]string{"deprovision", "two", "--yes", "--wait"}, 0, ""},

		{[]string{"provision", "x", "--class", "no-such-class"}, 1, "no-such-class"},
		{[]string{"update", "nope", "-p", "a=b"}, 1, `"nope"`},
		{[]string{"bind", "nope"}, 1, `"nope"`},
		{[]string{"unbind", "nope", "--yes"}, 1, `"nope"`},
		{[]string{"deprovision", "nope", "--yes"}, 1, `"nope"`},

		{[]string{"provision"}, 2, "Run 'kubectl catalog provision --help' for usage."},
		{[]string{"update", "db"}, 2, "nothing to update"},
		{[]string{"bind", "db", "--to", "pod/x"}, 2, "cannot be projected into"},
		{[]string{"unbind"}, 2, "Run 'kubectl catalog unbind --help' for usage."},
		{[]string{"deprovision", "a", "b"}, 2, "Run 'kubectl catalog deprovision --help' for usage."},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := e.run(t, append(tc.args, "--interval", "200ms")...)
			if tc.args[0] == "provision" && len(tc.args) == 1 {
				r = e.run(t, tc.args...)
			}
			assert.Equal(t, r.ExitCode, tc.exit, r.Stderr)
			assert.Assert(t, is.Contains(r.Stderr, tc.want))
		})
	}

	// A second instance whose binds are async: the broker binds one instance at a time.
	r := e.run(t, "provision", "db2", "--class", "postgresql", "--plan", "ha", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	// The broker now takes an hour over every async operation.
	e.b.SetAsyncDelay(time.Hour)
	t.Run("provision --wait times out", func(t *testing.T) {
		r := e.run(t, "provision", "slow", "--class", "postgresql", "--plan", "standard", "--wait", "--timeout", "2s", "--interval", "200ms")
		assert.Equal(t, r.ExitCode, 124, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, "the operation goes on"))
	})
	t.Run("bind --wait times out", func(t *testing.T) {
		r := e.run(t, "bind", "db", "--name", "slow-app", "--wait", "--timeout", "2s", "--interval", "200ms")
		assert.Equal(t, r.ExitCode, 124, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, "the operation goes on"))
	})
	for _, tc := range []struct {
		name string
		args []string
		kind string
	}{
		{"provision --wait interrupted", []string{"provision", "slower", "--class", "postgresql", "--plan", "standard", "--wait", "--interval", "200ms"}, "instance"},
		{"bind --wait interrupted", []string{"bind", "db2", "--name", "slower-app", "--wait", "--interval", "200ms"}, "binding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startCatalog(t, e.ns, tc.args...)
			// Interrupt once the broker accepted the operation: the record says so.
			poll.WaitOn(t, func(poll.LogT) poll.Result {
				errOut := s.stderr.String()
				if strings.Contains(errOut, "the broker is") {
					return poll.Success()
				}
				return poll.Continue("waiting for the operation to be in progress; stderr so far:\n%s", errOut)
			}, poll.WithTimeout(slow(time.Minute)), poll.WithDelay(100*time.Millisecond))
			assert.Equal(t, s.interrupt(t), 130)
			assert.Assert(t, is.Contains(s.stderr.String(), "interrupted: "+tc.kind))
		})
	}
}

// TestCLISurface_GraphForbidden_AndDiffManifestErrors: "graph" of a namespace whose
// records the user may not list fails as "get" does (exit 1, forbidden), not as an empty
// graph; "diff" of a manifest in error names its file and document, exits 2 (as kubectl
// diff: never 1, which says there are differences) and prints no usage hint, as "apply"
// reports the same error (exit 1, nothing applied).
func TestCLISurface_GraphForbidden_AndDiffManifestErrors(t *testing.T) {
	t.Parallel()
	ns, b, _ := instSetup(t)
	r := instCatalog(t, ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// bob holds no role in ns.
	for _, args := range [][]string{{"get", "instances"}, {"graph"}} {
		r := kubectl(t, controlplane.BobUser, append([]string{"catalog", "-n", ns}, args...)...)
		assert.Equal(t, r.ExitCode, 1, "%v: %s%s", args, r.Stdout, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, "403 Forbidden"), "%v: %s", args, r.Stderr)
		assert.Assert(t, !strings.Contains(r.Stderr, "No instances or bindings found"), r.Stderr)
	}

	dir := t.TempDir()
	declWrite(t, dir, "zz-broken.yaml", "apiVersion: catalog.kubectl-catalog.io/v1alpha1\nkind: ServiceInstance\nmetadata:\n  name: broken\nspec:\n  classExternalName: postgresql\n  planExternalName: no-such-plan\n")
	before := snapshotRecords(t, ns)
	b.ClearRequests()
	for _, tc := range []struct {
		verb, says string
		exit       int
	}{{"diff", "nothing was compared", 2}, {"apply", "nothing was applied", 1}} {
		r := instCatalog(t, ns, tc.verb, "-f", dir)
		assert.Equal(t, r.ExitCode, tc.exit, "%s: %s", tc.verb, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, "zz-broken.yaml, document 1"), "%s: %s", tc.verb, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, tc.says), "%s: %s", tc.verb, r.Stderr)
		assert.Assert(t, !strings.Contains(r.Stderr, "--help"), "%s: no usage hint: %s", tc.verb, r.Stderr)
	}
	assert.DeepEqual(t, snapshotRecords(t, ns), before)
	assert.Equal(t, len(b.Requests()), 0)
}
