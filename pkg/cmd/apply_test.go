package cmd_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// world is a cluster with a broker (counting the OSB requests it gets) whose class
// "postgres" has plan "small" (not updateable; its schema requires "storage").
type world struct {
	c     *storetest.Cluster
	calls atomic.Int32
	dir   string
	url   string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{dir: t.TempDir()}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.calls.Add(1)
		rw.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodGet:
			if strings.HasSuffix(r.URL.Path, "/v2/catalog") {
				_, _ = rw.Write([]byte(brokerCatalog))
				return
			}
			rw.WriteHeader(http.StatusNotFound)
		case http.MethodPut:
			rw.WriteHeader(http.StatusCreated)
			if strings.Contains(r.URL.Path, "service_bindings") {
				_, _ = rw.Write([]byte(`{"credentials":{"password":"s3cret"}}`))
				return
			}
		case http.MethodPatch, http.MethodDelete:
			rw.WriteHeader(http.StatusOK)
		default:
			rw.WriteHeader(http.StatusNotFound)
		}
		_, _ = rw.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	ctx := context.Background()
	w.c = storetest.NewCluster(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: storetest.UserNamespace, UID: "uid-dev"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap, Namespace: storetest.CatalogNamespace},
			Data: map[string]string{kube.ClusterIDKey: "cluster-1"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-extra", Namespace: storetest.UserNamespace}, Data: map[string][]byte{"extra": []byte(`{"tier":"gold"}`)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-auth", Namespace: storetest.CatalogNamespace},
			Data: map[string][]byte{"username": []byte("u"), "password": []byte("hunter2")}},
	)
	w.c.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
			UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}}}, nil
	})
	st := w.c.Store()
	_, err := st.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Name: storetest.BrokerName, Namespace: storetest.CatalogNamespace},
		Spec:       v1alpha1.BrokerSpec{URL: srv.URL, Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)
	class := storetest.SampleClass()
	class.Spec.Plans = append(class.Spec.Plans, v1alpha1.ServicePlan{ID: "large-id", ExternalName: "large", Free: true})
	_, err = st.Classes().Create(ctx, class)
	assert.NilError(t, err)
	_, err = st.PlanSchemas().Create(ctx, storetest.SamplePlanSchemas())
	assert.NilError(t, err)
	return w
}

// file writes a manifest into the world's directory.
func (w *world) file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(w.dir, name)
	assert.NilError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// run runs "kubectl catalog -n dev ARGS" with stdin.
func (w *world) run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.NewTestIOStreams(strings.NewReader(stdin), &out, &errOut))
	f.UseClients(w.c.Core, w.c.Metadata)
	f.Getenv = func(string) string { return "" }
	code := cmd.Execute(context.Background(), f, append([]string{"-n", storetest.UserNamespace}, args...))
	return out.String(), errOut.String(), code
}

// recordWrites counts the writes of ConfigMaps since the last ClearActions.
func (w *world) recordWrites() int {
	n := 0
	for _, a := range w.c.Core.Actions() {
		if a.GetResource().Resource == "configmaps" && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			n++
		}
	}
	return n
}

const dbInstance = `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceInstance
metadata:
  name: db
  labels:
    team: payments
    catalog.kubectl-catalog.io/pending: "false"
spec:
  classExternalName: postgres
  planExternalName: small
  parameters:
    storage: %STORAGE%
  parametersFrom:
  - secretKeyRef:
      name: db-extra
      key: extra
`

const dbBinding = `apiVersion: servicecatalog.k8s.io/v1beta1
kind: ServiceBinding
metadata:
  name: db-creds
spec:
  instanceRef:
    name: db
  secretName: db-secret
  userInfo:
    username: someone
`

const unrelated = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec: {}
---
apiVersion: v1
kind: Service
metadata:
  name: web
`

func instance(storage string) string { return strings.ReplaceAll(dbInstance, "%STORAGE%", storage) }

func TestApply_CreatesThenLeavesUnchangedThenUpdates(t *testing.T) {
	w := newWorld(t)
	w.file(t, "db.yaml", instance("5"))
	w.file(t, "binding.yaml", dbBinding)
	ctx := context.Background()

	out, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db created\nservicebinding.catalog.kubectl-catalog.io/db-creds created\n")
	assert.Assert(t, is.Contains(errOut, "spec.userInfo ignored"))
	assert.Equal(t, w.calls.Load(), int32(2)) // provision, bind
	inst, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Labels["team"], "payments")
	assert.Assert(t, inst.Labels["catalog.kubectl-catalog.io/pending"] != "false") // the store's, not the manifest's
	assert.Assert(t, !strings.Contains(string(inst.Spec.Parameters.Raw), "gold"), "a Secret's value copied into the record: %s", inst.Spec.Parameters.Raw)
	assert.Equal(t, inst.Spec.ParametersFrom[0].SecretKeyRef.Name, "db-extra")
	b, err := w.c.Store().Bindings().Get(ctx, storetest.UserNamespace, "db-creds")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.SecretName, "db-secret")

	// Again: nothing to do, no broker call, no write.
	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\nservicebinding.catalog.kubectl-catalog.io/db-creds unchanged\n")
	assert.Equal(t, w.calls.Load(), int32(2))
	assert.Equal(t, w.recordWrites(), 0)

	// A changed parameter: one update.
	w.file(t, "db.yaml", instance("8"))
	out, errOut, code = w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Assert(t, is.Contains(out, "serviceinstance.catalog.kubectl-catalog.io/db configured\n"))
	assert.Equal(t, w.calls.Load(), int32(3))
	inst, err = w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(string(inst.Spec.Parameters.Raw), `"storage":8`))
}

func TestApply_OneBrokenManifest_ChangesNothing(t *testing.T) {
	for name, broken := range map[string]string{
		"unknown field":    strings.Replace(instance("5"), "name: db\n", "name: db2\n", 1) + "  colour: blue\n",
		"invalid params":   strings.Replace(instance("0"), "name: db\n", "name: db2\n", 1),
		"no such plan":     strings.Replace(strings.Replace(instance("5"), "planExternalName: small", "planExternalName: huge", 1), "name: db\n", "name: db2\n", 1),
		"svcat no class":   "apiVersion: servicecatalog.k8s.io/v1beta1\nkind: ServiceInstance\nmetadata:\n  name: db2\nspec:\n  clusterServicePlanExternalName: small\n",
		"binding no inst.": "apiVersion: catalog.kubectl-catalog.io/v1alpha1\nkind: ServiceBinding\nmetadata:\n  name: b2\nspec:\n  instanceName: nosuch\n",
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.file(t, "a.yaml", instance("5"))
			w.file(t, "b.yaml", unrelated+"---\n"+broken)
			w.c.Core.ClearActions()
			out, errOut, code := w.run(t, "", "apply", "-f", w.dir)
			assert.Equal(t, code, 1, errOut)
			assert.Equal(t, out, "")
			assert.Assert(t, is.Contains(errOut, "nothing was applied"))
			assert.Assert(t, is.Contains(errOut, filepath.Join(w.dir, "b.yaml")+", document 3"), errOut)
			assert.Equal(t, w.calls.Load(), int32(0))
			assert.Equal(t, w.recordWrites(), 0)
		})
	}
}

func TestApply_PlanNotUpdateable_IsRefusedWithTheReason(t *testing.T) {
	w := newWorld(t)
	p := w.file(t, "db.yaml", instance("5"))
	_, errOut, code := w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	w.file(t, "db.yaml", strings.Replace(instance("5"), "planExternalName: small", "planExternalName: large", 1))
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 1)
	assert.Assert(t, is.Contains(errOut, "not updateable"), errOut)
	assert.Assert(t, is.Contains(errOut, "db.yaml, document 1"), errOut)
}

func TestApply_StdinSkipsOtherKinds(t *testing.T) {
	w := newWorld(t)
	out, errOut, code := w.run(t, unrelated+"---\n"+instance("5"), "apply", "-f", "-", "-o", "name")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db\n")
	assert.Assert(t, is.Contains(errOut, `standard input, document 1: skipped Deployment "web" (apps/v1)`), errOut)
	assert.Assert(t, is.Contains(errOut, `standard input, document 2: skipped Service "web" (v1)`), errOut)
}

func TestApply_GetOutputReappliesUnchanged(t *testing.T) {
	w := newWorld(t)
	_, errOut, code := w.run(t, instance("5"), "apply", "-f", "-")
	assert.Equal(t, code, 0, errOut)
	for _, args := range [][]string{{"get", "instance", "db", "-o", "yaml"}, {"get", "instances", "-o", "json"}} {
		got, errOut, code := w.run(t, "", args...)
		assert.Equal(t, code, 0, errOut)
		w.c.Core.ClearActions()
		out, errOut, code := w.run(t, got, "apply", "-f", "-")
		assert.Equal(t, code, 0, errOut)
		assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\n")
		assert.Equal(t, w.recordWrites(), 0)
	}
}

func TestApply_DryRun_WritesNothingAndSaysWhatItCannotCheck(t *testing.T) {
	for _, dry := range []string{"client", "server"} {
		t.Run(dry, func(t *testing.T) {
			w := newWorld(t)
			w.file(t, "db.yaml", instance("5"))
			w.file(t, "binding.yaml", dbBinding)
			w.c.Core.ClearActions()
			out, errOut, code := w.run(t, "", "apply", "-f", w.dir, "--dry-run="+dry)
			assert.Equal(t, code, 0, errOut)
			suffix := map[string]string{"client": " (dry run)", "server": " (server dry run)"}[dry]
			assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db created"+suffix+"\nservicebinding.catalog.kubectl-catalog.io/db-creds created"+suffix+"\n")
			assert.Assert(t, is.Contains(errOut, `ServiceBinding "db-creds" not checked by the dry run: its instance is provisioned by this apply`), errOut)
			assert.Equal(t, w.calls.Load(), int32(0))
			for _, a := range w.c.Core.Actions() {
				if a.GetResource().Resource == "configmaps" && a.GetVerb() == "create" {
					assert.Equal(t, dry, "server", "a client dry run sent a write")
				}
			}
			_, err := w.c.Store().Instances().Get(context.Background(), storetest.UserNamespace, "db")
			assert.Assert(t, err != nil, "the dry run created the instance")
		})
	}
}
