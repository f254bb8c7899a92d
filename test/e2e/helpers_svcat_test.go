package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// The old controller's finalizer, which keeps a deleted old object until removed.
const svcatFinalizer = "kubernetes-incubator/service-catalog"

var svcatCRDs = []string{
	"clusterservicebrokers", "servicebrokers", "clusterserviceclasses", "serviceclasses",
	"clusterserviceplans", "serviceplans", "serviceinstances", "servicebindings",
}

func svcatGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "servicecatalog.k8s.io", Version: "v1beta1", Resource: resource}
}

// svcatEnv is a cluster with the retired Service Catalog's CRDs, a test broker, a user
// namespace and a catalog namespace of its own.
type svcatEnv struct {
	ns, catNS string
	b         *broker.Broker
	admin     kubernetes.Interface
	dyn       dynamic.Interface
	st        *store.Store
}

func newSvcatEnv(t *testing.T) *svcatEnv {
	t.Helper()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	dyn, err := dynamic.NewForConfig(cp.RESTConfig(controlplane.AdminUser))
	assert.NilError(t, err)
	e := &svcatEnv{admin: admin, dyn: dyn, st: store.New(admin, nil)}
	e.installCRDs(t)
	e.b = broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", AsyncDelay: 3 * time.Second, RetryAfter: -1})
	e.ns = cp.NewNamespace(t)
	e.catNS = cp.NewNamespace(t)
	_, err = admin.CoreV1().Secrets(e.catNS).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "acme-auth"}, StringData: map[string]string{"username": "u", "password": "p"},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	return e
}

// installCRDs installs the CRDs; the cleanup strips the finalizers of what is left of
// the old objects and waits until the CRDs are gone, for the next test.
func (e *svcatEnv) installCRDs(t *testing.T) {
	t.Helper()
	r := kubectl(t, controlplane.AdminUser, "apply", "-f", "testdata/svcat-crds.yaml")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, res := range svcatCRDs {
			l, err := e.dyn.Resource(svcatGVR(res)).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, u := range l.Items {
				if len(u.GetFinalizers()) > 0 {
					_, _ = e.dyn.Resource(svcatGVR(res)).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType,
						[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				}
			}
		}
		kubectl(t, controlplane.AdminUser, "delete", "-f", "testdata/svcat-crds.yaml", "--wait=true", "--timeout=90s")
		// The group leaves discovery a moment after its CRDs are gone.
		instWaitFor(t, "servicecatalog.k8s.io to leave discovery", 30*time.Second, func() bool {
			_, err := e.admin.Discovery().ServerResourcesForGroupVersion("servicecatalog.k8s.io/v1beta1")
			return apierrors.IsNotFound(err)
		})
	})
	for _, res := range svcatCRDs {
		r := kubectl(t, controlplane.AdminUser, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+res+".servicecatalog.k8s.io")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
	}
	// The API server serves a new CRD a moment after it is Established.
	deadline := time.Now().Add(slow(30 * time.Second))
	for {
		_, err := e.dyn.Resource(svcatGVR("servicebindings")).List(context.Background(), metav1.ListOptions{Limit: 1})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Service Catalog CRDs are not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// osbCall sends one OSB request to the test broker, as the old controller did.
func (e *svcatEnv) osbCall(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		assert.NilError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.b.URL()+path, rd)
	assert.NilError(t, err)
	req.SetBasicAuth("u", "p")
	req.Header.Set("X-Broker-API-Version", "2.14")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	assert.NilError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// provisionAtBroker provisions an instance at the broker; it returns the operation key
// of an asynchronous provision.
func (e *svcatEnv) provisionAtBroker(t *testing.T, id, planID string, params map[string]any) string {
	t.Helper()
	status, out := e.osbCall(t, http.MethodPut, "/v2/service_instances/"+id+"?accepts_incomplete=true", map[string]any{
		"service_id": broker.DemoPostgresServiceID, "plan_id": planID, "organization_guid": "old-cluster", "space_guid": "old-space",
		"parameters": params,
	})
	assert.Assert(t, status == http.StatusCreated || status == http.StatusAccepted, "provision %s: %d %v", id, status, out)
	key, _ := out["operation"].(string)
	return key
}

func (e *svcatEnv) bindAtBroker(t *testing.T, instanceID, bindingID string) map[string]any {
	t.Helper()
	status, out := e.osbCall(t, http.MethodPut, "/v2/service_instances/"+instanceID+"/service_bindings/"+bindingID, map[string]any{
		"service_id": broker.DemoPostgresServiceID, "plan_id": broker.DemoPostgresHobbyPlanID,
	})
	assert.Equal(t, status, http.StatusCreated, "bind %s: %v", bindingID, out)
	creds, _ := out["credentials"].(map[string]any)
	return creds
}

// createOld creates an old object as the old controller left it: spec, then status, and
// with deleting set, a finalizer and a deletion in progress.
func (e *svcatEnv) createOld(t *testing.T, resource, kind, ns, name string, spec, status map[string]any, deleting bool) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "servicecatalog.k8s.io/v1beta1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	if deleting || resource == "serviceinstances" || resource == "servicebindings" {
		u.SetFinalizers([]string{svcatFinalizer})
	}
	ri := e.dyn.Resource(svcatGVR(resource)).Namespace(ns)
	created, err := ri.Create(ctx, u, metav1.CreateOptions{})
	assert.NilError(t, err)
	if status != nil {
		created.Object["status"] = status
		created, err = ri.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		assert.NilError(t, err)
	}
	if deleting {
		assert.NilError(t, ri.Delete(ctx, name, metav1.DeleteOptions{}))
		created, err = ri.Get(ctx, name, metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Assert(t, created.GetDeletionTimestamp() != nil)
	}
	return created
}

func readyStatus(extra map[string]any) map[string]any {
	st := map[string]any{
		"conditions":           []any{map[string]any{"type": "Ready", "status": "True", "reason": "ProvisionedSuccessfully", "message": "The instance was provisioned successfully", "lastTransitionTime": "2021-03-01T10:00:00Z"}},
		"reconciledGeneration": int64(1), "observedGeneration": int64(1),
		"provisionStatus": "Provisioned", "deprovisionStatus": "Required",
		"asyncOpInProgress": false, "orphanMitigationInProgress": false,
		"externalProperties": map[string]any{"clusterServicePlanExternalName": "hobby", "clusterServicePlanExternalID": broker.DemoPostgresHobbyPlanID},
	}
	for k, v := range extra {
		st[k] = v
	}
	return st
}

type svcatOutcome struct {
	Kind, Namespace, Name, Result, Reason string
	NeedsPerson                           bool
}

func (e *svcatEnv) migrate(t *testing.T, args ...string) (result, map[string]svcatOutcome) {
	t.Helper()
	r := kubectl(t, controlplane.AdminUser, append([]string{"catalog", "migrate", "svcat", "-n", e.ns, "--catalog-namespace", e.catNS, "-o", "json"}, args...)...)
	var out struct{ Items []svcatOutcome }
	outcomes := map[string]svcatOutcome{}
	if strings.TrimSpace(r.Stdout) != "" {
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &out), r.Stdout)
	}
	for _, o := range out.Items {
		outcomes[o.Kind+"/"+o.Name] = o
	}
	return r, outcomes
}

func (e *svcatEnv) catalog(t *testing.T, args ...string) result {
	t.Helper()
	return kubectl(t, controlplane.AdminUser, append([]string{"catalog", "-n", e.ns, "--catalog-namespace", e.catNS}, args...)...)
}

// state is every ConfigMap and Secret of the user namespace (name to resourceVersion),
// and the catalog namespace's broker records.
func (e *svcatEnv) state(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	cms, err := e.admin.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, cm := range cms.Items {
		out["cm/"+cm.Name] = cm.ResourceVersion
	}
	secrets, err := e.admin.CoreV1().Secrets(e.ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, s := range secrets.Items {
		out["secret/"+s.Name] = s.ResourceVersion
	}
	return out
}

// svcatFixture is the old world of the tests: a reachable broker and an unreachable
// one, instances in each state the old controller left them in, and bindings.
type svcatFixture struct {
	readyID, asyncID, asyncKey, leavingID string
	bindingID, lostBindingID              string
	creds                                 map[string][]byte
	oldBinding                            *unstructured.Unstructured
}

func (e *svcatEnv) seed(t *testing.T) *svcatFixture {
	t.Helper()
	ctx := context.Background()
	f := &svcatFixture{readyID: uuid.NewString(), asyncID: uuid.NewString(), leavingID: uuid.NewString(), bindingID: uuid.NewString(), lostBindingID: uuid.NewString()}
	// What the old controller had made at the broker.
	e.provisionAtBroker(t, f.readyID, broker.DemoPostgresHobbyPlanID, map[string]any{"storage_gb": 5})
	e.provisionAtBroker(t, f.leavingID, broker.DemoPostgresHobbyPlanID, nil)
	f.asyncKey = e.provisionAtBroker(t, f.asyncID, broker.DemoPostgresStandardPlanID, nil)
	assert.Assert(t, f.asyncKey != "", "the standard plan provisions asynchronously")
	creds := e.bindAtBroker(t, f.readyID, f.bindingID)
	e.bindAtBroker(t, f.readyID, f.lostBindingID)

	acme := map[string]any{
		"url": e.b.URL(), "relistBehavior": "Duration", "relistDuration": "1h0m0s", "relistRequests": int64(0),
		"authInfo": map[string]any{"basic": map[string]any{"secretRef": map[string]any{"namespace": e.catNS, "name": "acme-auth"}}},
	}
	e.createOld(t, "clusterservicebrokers", "ClusterServiceBroker", "", "acme"+suffix(e.ns), acme, nil, false)
	e.createOld(t, "clusterservicebrokers", "ClusterServiceBroker", "", "down"+suffix(e.ns), map[string]any{"url": "http://127.0.0.1:9"}, nil, false)
	// The old class and plan objects of the instance that names them by reference.
	e.createOld(t, "clusterserviceclasses", "ClusterServiceClass", "", "pg"+suffix(e.ns), map[string]any{
		"clusterServiceBrokerName": "acme" + suffix(e.ns), "externalID": broker.DemoPostgresServiceID, "externalName": "postgresql",
	}, nil, false)
	e.createOld(t, "clusterserviceplans", "ClusterServicePlan", "", "pg-hobby"+suffix(e.ns), map[string]any{
		"clusterServiceBrokerName": "acme" + suffix(e.ns), "externalID": broker.DemoPostgresHobbyPlanID, "externalName": "hobby",
	}, nil, false)
	e.createOld(t, "clusterserviceclasses", "ClusterServiceClass", "", "mysql"+suffix(e.ns), map[string]any{
		"clusterServiceBrokerName": "down" + suffix(e.ns), "externalID": "mysql-id", "externalName": "mysql",
	}, nil, false)

	byName := func(plan string) map[string]any {
		return map[string]any{"clusterServiceClassExternalName": "postgresql", "clusterServicePlanExternalName": plan}
	}
	e.createOld(t, "serviceinstances", "ServiceInstance", e.ns, "ready", map[string]any{
		"clusterServiceClassRef": map[string]any{"name": "pg" + suffix(e.ns)}, "clusterServicePlanRef": map[string]any{"name": "pg-hobby" + suffix(e.ns)},
		"clusterServiceClassName": "pg" + suffix(e.ns), "clusterServicePlanName": "pg-hobby" + suffix(e.ns),
		"externalID": f.readyID, "parameters": map[string]any{"storage_gb": int64(5)},
	}, readyStatus(map[string]any{"dashboardURL": "https://dash.example/ready"}), false)
	async := byName("standard")
	async["externalID"] = f.asyncID
	e.createOld(t, "serviceinstances", "ServiceInstance", e.ns, "async", async, map[string]any{
		"conditions":        []any{map[string]any{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "The instance is being provisioned asynchronously", "lastTransitionTime": "2021-03-01T10:00:00Z"}},
		"asyncOpInProgress": true, "currentOperation": "Provision", "lastOperation": f.asyncKey,
		"operationStartTime": "2021-03-01T10:00:00Z", "provisionStatus": "", "deprovisionStatus": "Required",
		"inProgressProperties": map[string]any{"clusterServicePlanExternalName": "standard", "clusterServicePlanExternalID": broker.DemoPostgresStandardPlanID},
	}, false)
	leaving := byName("hobby")
	leaving["externalID"] = f.leavingID
	e.createOld(t, "serviceinstances", "ServiceInstance", e.ns, "leaving", leaving, readyStatus(nil), true)
	failed := byName("hobby")
	failed["externalID"] = uuid.NewString()
	e.createOld(t, "serviceinstances", "ServiceInstance", e.ns, "failed", failed, map[string]any{
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "ProvisionCallFailed", "message": "the broker answered 400", "lastTransitionTime": "2021-03-01T10:00:00Z"},
			map[string]any{"type": "Failed", "status": "True", "reason": "ProvisionCallFailed", "message": "the broker answered 400", "lastTransitionTime": "2021-03-01T10:00:00Z"},
		},
		"provisionStatus": "NotProvisioned", "deprovisionStatus": "NotRequired",
	}, false)
	gone := byName("discontinued")
	gone["externalID"] = uuid.NewString()
	e.createOld(t, "serviceinstances", "ServiceInstance", e.ns, "oldplan", gone, readyStatus(map[string]any{
		"externalProperties": map[string]any{"clusterServicePlanExternalName": "discontinued", "clusterServicePlanExternalID": "discontinued-id"},
	}), false)
	e.createOld(t, "serviceinstances", "ServiceInstance", e.ns, "unreachable", map[string]any{
		"clusterServiceClassRef": map[string]any{"name": "mysql" + suffix(e.ns)}, "clusterServiceClassName": "mysql" + suffix(e.ns),
		"clusterServicePlanExternalName": "small", "externalID": uuid.NewString(),
	}, readyStatus(nil), false)

	bound := map[string]any{
		"conditions":        []any{map[string]any{"type": "Ready", "status": "True", "reason": "InjectedBindResult", "message": "Injected bind result", "lastTransitionTime": "2021-03-01T10:00:00Z"}},
		"asyncOpInProgress": false, "reconciledGeneration": int64(1), "unbindStatus": "Required",
	}
	f.oldBinding = e.createOld(t, "servicebindings", "ServiceBinding", e.ns, "ready-creds", map[string]any{
		"instanceRef": map[string]any{"name": "ready"}, "externalID": f.bindingID, "secretName": "ready-creds",
	}, bound, false)
	e.createOld(t, "servicebindings", "ServiceBinding", e.ns, "lost-creds", map[string]any{
		"instanceRef": map[string]any{"name": "ready"}, "externalID": f.lostBindingID, "secretName": "lost-creds",
	}, bound, false)
	// The Secret as the old controller wrote it: owned by the old binding.
	f.creds = map[string][]byte{}
	for k, v := range creds {
		if s, ok := v.(string); ok {
			f.creds[k] = []byte(s)
		} else {
			data, _ := json.Marshal(v)
			f.creds[k] = data
		}
	}
	yes := true
	_, err := e.admin.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "ready-creds", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "servicecatalog.k8s.io/v1beta1", Kind: "ServiceBinding", Name: "ready-creds", UID: f.oldBinding.GetUID(),
			Controller: &yes, BlockOwnerDeletion: &yes,
		}}},
		Data: f.creds,
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	return f
}

// suffix keeps cluster-scoped names apart between tests.
func suffix(ns string) string {
	if i := strings.LastIndex(ns, "-"); i >= 0 {
		return ns[i:]
	}
	return ""
}

// onlyCatalogGETs asserts that the broker got nothing but catalog fetches since reqs[from:].
func onlyCatalogGETs(t *testing.T, b *broker.Broker) {
	t.Helper()
	for _, r := range b.Requests() {
		assert.Assert(t, r.Op == broker.OpCatalog && r.Method == http.MethodGet, "migration sent %s %s to the broker", r.Method, r.Path)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// migrateKilledAfter runs migrate with the test knob that kills it (SIGKILL) right after
// its nth write; it reports whether the process was killed.
func (e *svcatEnv) migrateKilledAfter(t *testing.T, n int) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slow(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.Binaries.Kubectl, "catalog", "migrate", "svcat", "-n", e.ns, "--catalog-namespace", e.catNS)
	cmd.Env = append(os.Environ(),
		"PATH="+binDir+string(os.PathListSeparator)+filepath.Dir(cp.Binaries.Kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cp.Kubeconfig(controlplane.AdminUser), "HOME="+t.TempDir(),
		fmt.Sprintf("KUBECTL_CATALOG_TEST_MIGRATE_KILL_AFTER=%d", n))
	out, err := cmd.CombinedOutput()
	t.Logf("$ kubectl catalog migrate svcat (killed after %d writes)\n%s", n, out)
	if ee, ok := err.(*exec.ExitError); ok {
		// kubectl runs the plugin in place (exec), so the kill is the process's own.
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
		return false
	}
	assert.NilError(t, err)
	return false
}
