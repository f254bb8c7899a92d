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
	"time"

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

func TestDiff_ExitStatusSaysWhetherApplyWouldChangeAnything(t *testing.T) {
	w := newWorld(t)
	p := w.file(t, "db.yaml", instance("5"))
	out, errOut, code := w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "+++ manifest/serviceinstance/db"), out)
	assert.Assert(t, is.Contains(out, "+  plan: small"), out)
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)

	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "")

	w.file(t, "db.yaml", instance("8"))
	out, errOut, code = w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "-    storage: 5\n+    storage: 8\n"), out)
	assert.Equal(t, w.calls.Load(), int32(1)) // the provision only
	assert.Equal(t, w.recordWrites(), 0)

	w.file(t, "db.yaml", instance("5")+"  colour: blue\n")
	_, errOut, code = w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 2, errOut)
	assert.Assert(t, is.Contains(errOut, "db.yaml, document 1"), errOut)
}

func TestDelete_UnbindsThenDeprovisionsWhatTheFilesName(t *testing.T) {
	w := newWorld(t)
	w.file(t, "db.yaml", instance("5"))
	w.file(t, "binding.yaml", dbBinding)
	_, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)

	_, errOut, code = w.run(t, "", "delete", "-f", w.dir)
	assert.Equal(t, code, cmdutil.ExitUsage, "not a terminal: --yes is needed")
	assert.Assert(t, is.Contains(errOut, "--yes"), errOut)
	assert.Equal(t, w.calls.Load(), int32(2))

	_, errOut, code = w.run(t, "", "delete", "-f", w.dir, "--yes")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, w.calls.Load(), int32(4)) // unbind, deprovision
	ctx := context.Background()
	_, err := w.c.Store().Bindings().Get(ctx, storetest.UserNamespace, "db-creds")
	assert.Assert(t, err != nil)
	_, err = w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.Assert(t, err != nil)

	_, errOut, code = w.run(t, "", "delete", "-f", w.dir, "--yes")
	assert.Equal(t, code, 0, errOut)
	assert.Assert(t, is.Contains(errOut, `instance "db" not found`), errOut)
}

func TestApplyPrune_DeprovisionsWhatTheFilesNoLongerName(t *testing.T) {
	w := newWorld(t)
	w.file(t, "db.yaml", instance("5"))
	w.file(t, "db2.yaml", strings.Replace(instance("5"), "name: db\n", "name: db2\n", 1))
	_, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.NilError(t, os.Remove(filepath.Join(w.dir, "db2.yaml")))

	_, errOut, code = w.run(t, "", "apply", "-f", w.dir, "--prune", "-l", "team=payments")
	assert.Equal(t, code, cmdutil.ExitUsage, errOut)
	assert.Assert(t, is.Contains(errOut, "--yes"), errOut)
	_, errOut, code = w.run(t, "", "apply", "-f", w.dir, "--prune")
	assert.Equal(t, code, cmdutil.ExitUsage, errOut)
	assert.Equal(t, w.calls.Load(), int32(2))

	out, errOut, code := w.run(t, "", "apply", "-f", w.dir, "--prune", "-l", "team=payments", "--yes")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\nserviceinstance.catalog.kubectl-catalog.io/db2 pruned\n")
	assert.Equal(t, w.calls.Load(), int32(3)) // the deprovision
	_, err := w.c.Store().Instances().Get(context.Background(), storetest.UserNamespace, "db2")
	assert.Assert(t, err != nil)
}

// brokerCatalog is the catalog every broker of the world's server offers: class "mysql"
// with plan "tiny".
const brokerCatalog = `{"services":[{"id":"mysql-id","name":"mysql","description":"MySQL","bindable":true,
"plans":[{"id":"tiny-id","name":"tiny","description":"tiny","free":true}]}]}`

// otherBroker is a cluster broker "other" at URL, with basic auth from Secret other-auth.
const otherBroker = `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: Broker
metadata:
  name: other
spec:
  url: URL
  scope: Cluster
  auth:
    type: Basic
    secretRef:
      name: other-auth
`

const mysqlInstance = `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceInstance
metadata:
  name: my
spec:
  classExternalName: mysql
  brokerName: other
  planExternalName: tiny
`

func TestApply_Broker_RegisteredThenUnchangedThenChanged(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.file(t, "broker.yaml", strings.Replace(otherBroker, "URL", w.url, 1))
	// An instance of the new broker's class: checked by its provision, once the catalog
	// is fetched.
	w.file(t, "my.yaml", mysqlInstance)

	out, errOut, code := w.run(t, "", "diff", "-f", w.dir)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "+++ manifest/broker/other"), out)
	assert.Equal(t, w.calls.Load(), int32(0))

	out, errOut, code = w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "broker.catalog.kubectl-catalog.io/other created\nserviceinstance.catalog.kubectl-catalog.io/my created\n")
	b, err := w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "other")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.Auth.SecretRef.Name, "other-auth")
	assert.Assert(t, b.Status.LastCatalogFetch != nil, "the catalog was not fetched")
	cm, err := w.c.Core.CoreV1().ConfigMaps(storetest.CatalogNamespace).Get(ctx, "catalog-broker.other", metav1.GetOptions{})
	assert.NilError(t, err)
	for k, v := range cm.Data {
		assert.Assert(t, !strings.Contains(v, "hunter2"), "a credential copied into the record's %s", k)
	}
	inst, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "my")
	assert.NilError(t, err)
	assert.Equal(t, inst.Spec.BrokerName, "other")

	// Again: unchanged, no broker call, no write.
	calls := w.calls.Load()
	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "broker.catalog.kubectl-catalog.io/other unchanged\nserviceinstance.catalog.kubectl-catalog.io/my unchanged\n")
	assert.Equal(t, w.calls.Load(), calls)
	assert.Equal(t, w.recordWrites(), 0)

	// As "get broker -o yaml" prints it: unchanged too.
	got, errOut, code := w.run(t, "", "get", "broker", "other", "-o", "yaml")
	assert.Equal(t, code, 0, errOut)
	out, errOut, code = w.run(t, got, "apply", "-f", "-")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "broker.catalog.kubectl-catalog.io/other unchanged\n")

	// A new URL and relist interval: the broker is changed and its catalog fetched again.
	w.file(t, "broker.yaml", strings.Replace(otherBroker, "URL", w.url+"/osb", 1)+"  relistInterval: 1h\n")
	out, errOut, code = w.run(t, "", "diff", "-f", w.dir)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "+  url: "+w.url+"/osb\n"), out)
	assert.Assert(t, is.Contains(out, "+  relistInterval: 1h0m0s\n"), out)
	out, errOut, code = w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)
	assert.Assert(t, is.Contains(out, "broker.catalog.kubectl-catalog.io/other configured\n"), out)
	b, err = w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "other")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.URL, w.url+"/osb")
	assert.Equal(t, b.Spec.RelistInterval.Duration, time.Hour)
}

func TestApply_Broker_BadOnesChangeNothing(t *testing.T) {
	for name, tc := range map[string]struct{ manifest, want string }{
		"missing Secret": {strings.Replace(otherBroker, "other-auth", "nosuch", 1), `"nosuch"`},
		"Secret of another namespace": {strings.Replace(otherBroker, "name: other-auth", "name: other-auth\n      namespace: dev", 1),
			"its own namespace"},
		"svcat, credentials outside the catalog namespace": {`apiVersion: servicecatalog.k8s.io/v1beta1
kind: ClusterServiceBroker
metadata:
  name: other
spec:
  url: URL
  authInfo:
    basic:
      secretRef:
        name: other-auth
        namespace: dev
`, `as "kubectl catalog migrate svcat" refuses it: its credentials are in Secret "other-auth" in namespace "dev"`},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.file(t, "a.yaml", instance("5"))
			w.file(t, "b.yaml", strings.Replace(tc.manifest, "URL", w.url, 1))
			w.c.Core.ClearActions()
			out, errOut, code := w.run(t, "", "apply", "-f", w.dir)
			assert.Equal(t, code, 1, errOut)
			assert.Assert(t, is.Contains(errOut, tc.want), errOut)
			assert.Equal(t, out, "")
			assert.Assert(t, is.Contains(errOut, "nothing was applied"), errOut)
			assert.Equal(t, w.calls.Load(), int32(0))
			assert.Equal(t, w.recordWrites(), 0)
		})
	}
}

func TestApply_SvcatServiceBroker_MapsItsFields(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.c.Core.CoreV1().Secrets(storetest.CatalogNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tok"},
		Data: map[string][]byte{"token": []byte("t0ken")}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	out, errOut, code := w.run(t, `apiVersion: servicecatalog.k8s.io/v1beta1
kind: ClusterServiceBroker
metadata:
  name: old
spec:
  url: `+w.url+`
  relistBehavior: Duration
  relistDuration: 30m
  relistRequests: 3
  authInfo:
    bearer:
      secretRef:
        name: tok
        namespace: catalog-system
  catalogRestrictions:
    servicePlan: ["free==true"]
`, "apply", "-f", "-")
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "broker.catalog.kubectl-catalog.io/old created\n")
	assert.Assert(t, is.Contains(errOut, "spec.relistRequests ignored"), errOut)
	b, err := w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "old")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.Auth.Type, v1alpha1.AuthBearer)
	assert.Equal(t, b.Spec.Auth.SecretRef.Name, "tok")
	assert.Equal(t, b.Spec.RelistInterval.Duration, 30*time.Minute)
	assert.DeepEqual(t, b.Spec.CatalogRestrictions.ServicePlan, []string{"free==true"})
}

func TestDelete_Broker_DeregistersOnlyWithoutInstances(t *testing.T) {
	w := newWorld(t)
	w.file(t, "broker.yaml", strings.Replace(otherBroker, "URL", w.url, 1))
	w.file(t, "my.yaml", mysqlInstance)
	_, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 0, errOut)

	// The broker alone: refused while its instance exists.
	_, errOut, code = w.run(t, "", "delete", "-f", filepath.Join(w.dir, "broker.yaml"), "--yes")
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(errOut, `instance`), errOut)
	ctx := context.Background()
	_, err := w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "other")
	assert.NilError(t, err)

	// Both: the instance is deprovisioned (synchronously), then the broker deregistered.
	_, errOut, code = w.run(t, "", "delete", "-f", w.dir, "--yes")
	assert.Equal(t, code, 0, errOut)
	_, err = w.c.Store().Brokers().Get(ctx, storetest.CatalogNamespace, "other")
	assert.Assert(t, err != nil, "the broker is still registered")
}

func TestApply_LabelChange_OneWriteNoBrokerCall(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	p := w.file(t, "db.yaml", instance("5"))
	_, errOut, code := w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	before, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)

	// Another label value, an annotation, and catalog keys that must not be forged.
	w.file(t, "db.yaml", strings.Replace(instance("5"), "    team: payments\n",
		"    team: billing\n    catalog.kubectl-catalog.io/kind: ServiceBinding\n  annotations:\n    owner: ops\n    catalog.kubectl-catalog.io/author: mallory\n", 1))
	out, errOut, code := w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "-    team: payments\n+    team: billing\n"), out)
	assert.Assert(t, is.Contains(out, "+    owner: ops\n"), out)
	assert.Assert(t, !strings.Contains(out, "mallory"), out)

	calls := w.calls.Load()
	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db configured\n")
	assert.Equal(t, w.calls.Load(), calls, "a broker was called")
	assert.Equal(t, w.recordWrites(), 1)
	after, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.Equal(t, after.Labels["team"], "billing")
	assert.Equal(t, after.Annotations["owner"], "ops")
	for k, v := range before.Labels {
		if strings.HasPrefix(k, "catalog.kubectl-catalog.io/") || k == "app.kubernetes.io/managed-by" {
			assert.Equal(t, after.Labels[k], v, "label %s", k)
		}
	}
	for k, v := range before.Annotations {
		if strings.HasPrefix(k, "catalog.kubectl-catalog.io/") {
			assert.Equal(t, after.Annotations[k], v, "annotation %s", k)
		}
	}
	assert.DeepEqual(t, after.Spec, before.Spec)

	// Again: a no-op.
	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\n")
	assert.Equal(t, w.recordWrites(), 0)
}

func TestApply_SharedWith_SharesAndUnsharesAsTheVerbsDo(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.c.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	p := w.file(t, "db.yaml", instance("5"))
	_, errOut, code := w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	calls := w.calls.Load()

	// A namespace that does not exist: refused as share refuses it, nothing changed.
	w.file(t, "db.yaml", instance("5")+"  sharedWith: [nosuch]\n")
	w.c.Core.ClearActions()
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(errOut, `namespace "nosuch" does not exist`), errOut)
	assert.Equal(t, w.recordWrites(), 0)

	w.file(t, "db.yaml", instance("5")+"  sharedWith: [team-b]\n")
	out, errOut, code := w.run(t, "", "diff", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(out, "+  sharedWith:\n+  - team-b\n"), out)
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db configured\n")
	inst, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{"team-b"})
	assert.Equal(t, w.calls.Load(), calls, "a broker was called")

	w.c.Core.ClearActions()
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\n")
	assert.Equal(t, w.recordWrites(), 0)

	// Left out again: the grant, which no binding uses, is withdrawn.
	w.file(t, "db.yaml", instance("5"))
	out, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	assert.Equal(t, out, "serviceinstance.catalog.kubectl-catalog.io/db configured\n")
	inst, err = w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.Equal(t, len(inst.Spec.SharedWith), 0)

	// Shared again, then left out while team-b holds a binding of it: refused, unshare named.
	w.file(t, "db.yaml", instance("5")+"  sharedWith: [team-b]\n")
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	_, err = w.c.Store().Bindings().Create(ctx, &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "team-b"},
		Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db", InstanceNamespace: storetest.UserNamespace, SecretName: "theirs", ExternalID: "theirs-id"}})
	assert.NilError(t, err)
	w.file(t, "db.yaml", instance("5"))
	w.c.Core.ClearActions()
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(errOut, `holds bindings of it (theirs)`), errOut)
	assert.Assert(t, is.Contains(errOut, `kubectl catalog unshare db --from-namespace team-b`), errOut)
	assert.Equal(t, w.recordWrites(), 0)
	inst, err = w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{"team-b"})
}

func TestApply_NewInstanceSharedWith_IsSharedOnceProvisioned(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.c.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	w.file(t, "own.yaml", instance("5")+"  sharedWith: [dev]\n")
	_, errOut, code := w.run(t, "", "apply", "-f", w.dir)
	assert.Equal(t, code, 1, errOut)
	assert.Assert(t, is.Contains(errOut, "its own namespace"), errOut)
	assert.Equal(t, w.calls.Load(), int32(0))

	p := w.file(t, "own.yaml", instance("5")+"  sharedWith: [team-b]\n")
	_, errOut, code = w.run(t, "", "apply", "-f", p)
	assert.Equal(t, code, 0, errOut)
	inst, err := w.c.Store().Instances().Get(ctx, storetest.UserNamespace, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{"team-b"})
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
