package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// envLoaderCreds are credentials chosen to run code of their author's in any process
// that reads them as environment variables.
const envLoaderCreds = `{"url":"https://svc.example","LD_PRELOAD":"/tmp/evil.so","BASH_ENV":"/tmp/evil.sh","NODE_OPTIONS":"--require /tmp/evil.js","PATH":"/tmp"}`

// envDeployment creates Deployment name in ns, with one container.
func envDeployment(t *testing.T, e *trustEnv, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := e.admin.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}}}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
}

// envVariables are the environment variables the containers of Deployment ns/name get
// from Secrets through envFrom: each Secret key with the envFrom's prefix.
func envVariables(t *testing.T, e *trustEnv, ns, name string) []string {
	t.Helper()
	ctx := context.Background()
	d, err := e.admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, ef := range c.EnvFrom {
			if ef.SecretRef == nil {
				continue
			}
			s, err := e.admin.CoreV1().Secrets(ns).Get(ctx, ef.SecretRef.Name, metav1.GetOptions{})
			assert.NilError(t, err)
			for k := range s.Data {
				out = append(out, ef.Prefix+k)
			}
		}
	}
	return out
}

// envNoLoaderVariable checks that no variable of Deployment ns/name is a loader or
// interpreter variable.
func envNoLoaderVariable(t *testing.T, e *trustEnv, ns, name string) []string {
	t.Helper()
	vars := envVariables(t, e, ns, name)
	assert.Assert(t, len(vars) > 0, "the Deployment reads the Secret as variables")
	for _, v := range vars {
		assert.Check(t, !projection.ForbiddenEnvName(v), "deployment %s/%s gets %s", ns, name, v)
	}
	return vars
}

func envBinding(t *testing.T, e *trustEnv, ns, name string) *v1alpha1.ServiceBinding {
	t.Helper()
	b, err := e.st.Bindings().Get(context.Background(), ns, name)
	assert.NilError(t, err)
	return b
}

// envWarnings are the notes of the EnvKeysLeftOut Events about binding ns/name.
func envWarnings(t *testing.T, ns, name string) string {
	t.Helper()
	r := kubectl(t, controlplane.AdminUser, "get", "events", "-n", ns,
		"--field-selector", "involvedObject.name=catalog-binding."+name+",reason="+engine.ReasonEnvKeysLeftOut,
		"-o", "custom-columns=TYPE:.type,NOTE:.message", "--no-headers")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	return r.Stdout
}

// envBroker is a namespace broker its owner runs: its bind answers hold credentials of
// its choosing.
func envBroker(t *testing.T, creds string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v2/catalog":
			_, _ = w.Write([]byte(`{"services":[{"id":"5f1e9a36-env-svc","name":"envsvc","description":"a service","bindable":true,` +
				`"plans":[{"id":"5f1e9a36-env-plan","name":"basic","description":"a plan","free":true}]}]}`))
		case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/service_bindings/"):
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"credentials":` + creds + `}`))
		case r.Method == http.MethodPut:
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{}`))
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestEnvShape_TheOwnerOfASharedInstance_DoesNotChooseTheConsumersEnvironment: alice
// (kubectl-catalog-user in team-a) shares a user-provided instance with team-b; bob
// (kubectl-catalog-user in team-b) binds it into his Deployment as environment
// variables. Without a prefix of his, bind and apply -f refuse it, changing nothing;
// with one, alice's later credentials holding LD_PRELOAD, BASH_ENV, NODE_OPTIONS and
// PATH reach bob's workload only under his prefix. Loader and interpreter variables are
// left out of a Secret projected as variables whatever their source (bob's own
// credentials, a namespace broker's bind answer), with a Warning Event and the binding's
// status naming them; reconcile runs with its ServiceAccount's token.
func TestEnvShape_TheOwnerOfASharedInstance_DoesNotChooseTheConsumersEnvironment(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	sharingRoles(t, e, false)
	ctx := context.Background()
	envDeployment(t, e, e.teamB, "web")
	envDeployment(t, e, e.teamA, "app")

	r := sharingAlice(t, e, "provision", "svc", "--user-provided", "--credentials-json", `{"url":"https://svc.example"}`)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = sharingAlice(t, e, "share", "svc", "--to-namespace", e.teamB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	t.Run("bind and apply -f without bob's prefix are refused, changing nothing", func(t *testing.T) {
		before := snapshotRecords(t, e.teamA, e.teamB)
		web, err := e.admin.AppsV1().Deployments(e.teamB).Get(ctx, "web", metav1.GetOptions{})
		assert.NilError(t, err)
		for _, args := range [][]string{
			{"bind", e.teamA + "/svc", "--to", "deployment/web", "--env"},
			{"bind", "svc", "--instance-namespace", e.teamA, "--to", "deployment/web", "--env", "--name", "other"},
		} {
			r := trustBob(t, e, args...)
			assert.Equal(t, r.ExitCode, 2, "%v: %s", args, r.Stderr)
			assert.Check(t, is.Contains(r.Stderr, `would expose the credentials of instance "svc" of namespace "`+e.teamA+`" to deployment "web" as environment variables without a prefix`))
			assert.Check(t, is.Contains(r.Stderr, "--env-prefix SVC_"))
		}
		r := trustBob(t, e, "bind", e.teamA+"/svc", "--to", "deployment/web", "--env-prefix", "LD_")
		assert.Equal(t, r.ExitCode, 2, r.Stderr)
		assert.Check(t, is.Contains(r.Stderr, "makes every key a loader variable"))

		dir := t.TempDir()
		manifest := filepath.Join(dir, "binding.yaml")
		assert.NilError(t, os.WriteFile(manifest, []byte("apiVersion: catalog.kubectl-catalog.io/v1alpha1\nkind: ServiceBinding\nmetadata:\n  name: applied\n"+
			"spec:\n  instanceName: svc\n  instanceNamespace: "+e.teamA+"\n  secretName: applied\n  projections:\n  - kind: Deployment\n    name: web\n    env: true\n"), 0o600))
		r = trustBob(t, e, "apply", "-f", manifest)
		assert.Assert(t, r.ExitCode != 0, r.Stdout)
		assert.Check(t, is.Contains(r.Stderr, "without a prefix"))
		assert.Check(t, is.Contains(r.Stderr, "--env-prefix"))

		assert.DeepEqual(t, snapshotRecords(t, e.teamA, e.teamB), before)
		after, err := e.admin.AppsV1().Deployments(e.teamB).Get(ctx, "web", metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Equal(t, after.ResourceVersion, web.ResourceVersion, "the workload is untouched")
	})

	t.Run("with bob's prefix, alice's loader variables reach his workload only under it", func(t *testing.T) {
		r := trustBob(t, e, "bind", e.teamA+"/svc", "--to", "deployment/web", "--env-prefix", "SVC_")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamB)
		assert.Equal(t, envBinding(t, e, e.teamB, "svc").Status.Phase, v1alpha1.PhaseReady)
		assert.Assert(t, is.Contains(envNoLoaderVariable(t, e, e.teamB, "web"), "SVC_url"))

		r = sharingAlice(t, e, "update", "svc", "--credentials-json", envLoaderCreds)
		// alice may not list team-b's bindings: reconcile copies to them.
		assert.Assert(t, is.Contains(r.Stderr, "reconcile copies them"), r.Stderr)
		trustReconcile(t, e, e.teamA)
		trustReconcile(t, e, e.teamB)
		s, err := e.admin.CoreV1().Secrets(e.teamB).Get(ctx, "svc", metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Equal(t, string(s.Data["url"]), "https://svc.example")
		_, copied := s.Data["LD_PRELOAD"]
		assert.Assert(t, copied, "under bob's prefix the key is harmless, and copied")
		vars := envNoLoaderVariable(t, e, e.teamB, "web")
		assert.Assert(t, is.Contains(vars, "SVC_LD_PRELOAD"))
	})

	t.Run("loader variables are left out of bob's own credentials projected without a prefix", func(t *testing.T) {
		r := trustBob(t, e, "provision", "own", "--user-provided", "--credentials-json", envLoaderCreds)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		r = trustBob(t, e, "bind", "own", "--to", "deployment/web", "--env")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamB)
		b := envBinding(t, e, e.teamB, "own")
		assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady, "%+v", b.Status.Conditions)
		vars := envNoLoaderVariable(t, e, e.teamB, "web")
		assert.Assert(t, is.Contains(vars, "url"))
		ready := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
		for _, k := range []string{"LD_PRELOAD", "BASH_ENV", "NODE_OPTIONS", "PATH"} {
			assert.Check(t, is.Contains(ready.Message, k))
			assert.Check(t, is.Contains(envWarnings(t, e.teamB, "own"), k))
		}
		assert.Check(t, is.Contains(envWarnings(t, e.teamB, "own"), "Warning"))
		r = trustBob(t, e, "describe", "binding", "own")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		assert.Check(t, is.Contains(r.Stdout, "LD_PRELOAD"))
	})

	t.Run("a namespace broker alice runs: her bind answer's loader variables are left out, bob needs his prefix", func(t *testing.T) {
		url := envBroker(t, envLoaderCreds)
		// The cluster id, which namespace-bound OSB ids are keyed with, is an
		// administrator's to create.
		r := kubectl(t, controlplane.AdminUser, "catalog", "init", "--catalog-namespace", e.catalogNS)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		r = sharingAlice(t, e, "register", "own-broker", "--url", url, "--scope", "namespace")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		r = sharingAlice(t, e, "provision", "nb", "--class", "envsvc", "--plan", "basic")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamA)
		r = sharingAlice(t, e, "bind", "nb", "--to", "deployment/app", "--env")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamA)
		b := envBinding(t, e, e.teamA, "nb")
		assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady, "%+v", b.Status.Conditions)
		assert.Assert(t, is.Contains(envNoLoaderVariable(t, e, e.teamA, "app"), "url"))
		assert.Check(t, is.Contains(envWarnings(t, e.teamA, "nb"), "LD_PRELOAD"))

		r = sharingAlice(t, e, "share", "nb", "--to-namespace", e.teamB)
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		before := snapshotRecords(t, e.teamB)
		r = trustBob(t, e, "bind", e.teamA+"/nb", "--to", "deployment/web", "--env")
		assert.Equal(t, r.ExitCode, 2, r.Stderr)
		assert.Check(t, is.Contains(r.Stderr, "--env-prefix NB_"))
		assert.DeepEqual(t, snapshotRecords(t, e.teamB), before)
		r = trustBob(t, e, "bind", e.teamA+"/nb", "--to", "deployment/web", "--env-prefix", "PYTHON")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamB)
		assert.Equal(t, envBinding(t, e, e.teamB, "nb").Status.Phase, v1alpha1.PhaseReady)
		// PYTHON + PATH would be PYTHONPATH: that key is left out; the others are prefixed.
		vars := envNoLoaderVariable(t, e, e.teamB, "web")
		assert.Assert(t, is.Contains(vars, "PYTHONurl"))
		s, err := e.admin.CoreV1().Secrets(e.teamB).Get(ctx, "nb", metav1.GetOptions{})
		assert.NilError(t, err)
		_, path := s.Data["PATH"]
		assert.Assert(t, !path, "%v", keysOf(s.Data))
		assert.Check(t, is.Contains(envWarnings(t, e.teamB, "nb"), "PATH (as PYTHONPATH)"))
	})
}

func keysOf(m map[string][]byte) string {
	b, _ := json.Marshal(func() []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}())
	return string(b)
}
