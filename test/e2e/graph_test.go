package e2e

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// graphDeployment creates Deployment name in ns whose single container's Pod template is
// shaped by edit.
func graphDeployment(t *testing.T, admin kubernetes.Interface, ns, name string, edit func(*corev1.PodSpec)) {
	t.Helper()
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/" + name + ":1"}}}
	edit(&spec)
	_, err := admin.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
}

func graphSecretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

// graphGolden compares out, with the namespace's random name replaced by NAMESPACE, to
// testdata/name (go test -run TestGraph_ ./test/e2e/ -update rewrites it).
func graphGolden(t *testing.T, out, ns, name string) {
	t.Helper()
	golden.Assert(t, strings.ReplaceAll(out, ns, "NAMESPACE"), name)
}

// TestGraph_TwoAppsThreeInstances_GoldenTreeAndDot builds a namespace with three
// instances of the test broker and their bindings, an app "web" reading the Secrets of
// two instances (one by env secretKeyRef, one by volume), an app "worker" reading a
// third's (by envFrom and env), and an app that reads no binding's Secret; "graph -o
// tree" and "-o dot" match their golden files. A user who may read the records but not
// list Deployments gets the rest of the graph and a warning, and the command succeeds.
func TestGraph_TwoAppsThreeInstances_GoldenTreeAndDot(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	ns := e.ns
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)

	for _, args := range [][]string{
		{"provision", "db", "--class", "postgresql", "--plan", "hobby"},
		{"provision", "orders", "--class", "postgresql", "--plan", "hobby"},
		{"provision", "files", "--class", "object-storage", "--plan", "bucket"},
		{"bind", "db", "--name", "db-web"},
		{"bind", "orders", "--name", "orders-web", "--secret-name", "orders-creds"},
		{"bind", "files", "--name", "files-worker"},
	} {
		r := instCatalog(t, ns, args...)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	graphDeployment(t, admin, ns, "web", func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{graphSecretEnv("DB_URI", "db-web", "uri")}
		s.Volumes = []corev1.Volume{{Name: "orders", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: "orders-creds"},
		}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "orders", MountPath: "/bindings/orders"}}
	})
	graphDeployment(t, admin, ns, "worker", func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "files-worker"},
		}}}
		s.Containers[0].Env = []corev1.EnvVar{graphSecretEnv("BUCKET", "files-worker", "bucket")}
	})
	graphDeployment(t, admin, ns, "unrelated", func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{graphSecretEnv("BROKER_USER", "broker-auth", "username")}
	})

	r := instCatalog(t, ns, "graph", "-o", "tree")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stderr, "")
	graphGolden(t, r.Stdout, ns, "graph-tree.golden")
	r = instCatalog(t, ns, "graph", "-o", "dot")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	graphGolden(t, r.Stdout, ns, "graph-dot.golden")
	r = instCatalog(t, ns, "graph")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	graphGolden(t, r.Stdout, ns, "graph-tree.golden")
	assert.Assert(t, !strings.Contains(r.Stdout, "unrelated"), "a workload using no binding's Secret is left out")

	r = instCatalog(t, ns, "describe", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "Used by:\n  Binding db-web, Secret db-web: Deployment web [env]\n"), r.Stdout)

	var consumer string // the namespace orders is shared with
	t.Run("a binding of an instance shared from another namespace hangs under it", func(t *testing.T) {
		consumer = cp.NewNamespace(t)
		for _, args := range [][]string{
			{"-n", ns, "share", "orders", "--to-namespace", consumer},
			{"-n", consumer, "bind", ns + "/orders", "--name", "orders"},
		} {
			r := kubectl(t, controlplane.AdminUser, append([]string{"catalog"}, args...)...)
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
		}
		graphDeployment(t, admin, consumer, "shop", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "migrate", Image: "registry.example/migrate:1", EnvFrom: []corev1.EnvFromSource{{
				SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "orders"}},
			}}}}
		})
		r := instCatalog(t, consumer, "graph")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		// The consumer's name first: it is the longer when one is the other's prefix.
		golden.Assert(t, strings.ReplaceAll(strings.ReplaceAll(r.Stdout, consumer, "CONSUMER"), ns, "NAMESPACE"), "graph-tree-shared.golden")
		r = instCatalog(t, ns, "describe", "instance", "orders")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, "  Binding "+consumer+"/orders, Secret orders: Deployment "+consumer+"/shop [envFrom]\n"), r.Stdout)
		// The owner's graph of its own namespace shows the consumer too: the
		// namespaces an instance is shared with are looked in.
		r = instCatalog(t, ns, "graph")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, "Binding "+consumer+"/orders (Ready)\n"), r.Stdout)
		assert.Assert(t, is.Contains(r.Stdout, "Deployment "+consumer+"/shop [envFrom]\n"), r.Stdout)
	})

	t.Run("a user who may not list Deployments sees the rest and a warning", func(t *testing.T) {
		grantRole(t, admin, ns, "graph-reader", []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "pods"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"apps"}, Resources: []string{"statefulsets", "daemonsets"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: []string{"get", "list"}},
		}, func() bool {
			return kubectl(t, controlplane.AliceUser, "auth", "can-i", "list", "cronjobs.batch", "-n", ns).ExitCode == 0
		}, controlplane.AliceUser)
		assert.Assert(t, kubectl(t, controlplane.AliceUser, "auth", "can-i", "list", "deployments.apps", "-n", ns).ExitCode != 0)

		before := snapshotRecords(t, ns)
		r := kubectl(t, controlplane.AliceUser, "catalog", "-n", ns, "graph")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		want := "Warning: could not list deployments in NAMESPACE: forbidden\n"
		if consumer != "" {
			// Alice may not list records in the namespace orders is shared with either.
			r.Stderr = strings.ReplaceAll(r.Stderr, consumer, "CONSUMER")
			want = "Warning: could not list bindings in CONSUMER, which instances of NAMESPACE are shared with: forbidden\n" + want
		}
		assert.Equal(t, strings.ReplaceAll(r.Stderr, ns, "NAMESPACE"), want)
		graphGolden(t, r.Stdout, ns, "graph-tree-no-deployments.golden")
		r = kubectl(t, controlplane.AliceUser, "catalog", "-n", ns, "graph", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, `"could not list deployments in `+ns+`: forbidden"`), r.Stdout)
		r = kubectl(t, controlplane.AliceUser, "catalog", "-n", ns, "describe", "instance", "db")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Assert(t, is.Contains(r.Stdout, "Used by:\n  Binding db-web, Secret db-web: no workload found\n  Not shown: could not list deployments in "+ns+": forbidden\n"), r.Stdout)
		assert.DeepEqual(t, snapshotRecords(t, ns), before)
	})

	t.Run("bad input: an unknown output format or an argument is a usage error", func(t *testing.T) {
		before := snapshotRecords(t, ns)
		r := instCatalog(t, ns, "graph", "-o", "yaml")
		assert.Equal(t, r.ExitCode, 2, r.Stderr)
		assert.Assert(t, is.Contains(r.Stderr, `unknown output format "yaml" for graph: use one of tree, dot, mermaid, json`), r.Stderr)
		r = instCatalog(t, ns, "graph", "db")
		assert.Equal(t, r.ExitCode, 2, r.Stderr)
		assert.Equal(t, r.Stdout, "")
		assert.DeepEqual(t, snapshotRecords(t, ns), before)
	})
}
