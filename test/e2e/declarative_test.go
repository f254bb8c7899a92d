package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// declOwnInstance is an instance of the catalog's own kind; STORAGE is its storage_gb.
const declOwnInstance = `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceInstance
metadata:
  name: db
  labels:
    app: shop
spec:
  classExternalName: postgresql
  planExternalName: hobby
  parameters:
    storage_gb: STORAGE
  parametersFrom:
  - secretKeyRef:
      name: db-params
      key: extra
`

// declSvcat are objects of the retired Service Catalog: an instance and a binding of
// the instance above.
const declSvcat = `apiVersion: servicecatalog.k8s.io/v1beta1
kind: ServiceInstance
metadata:
  name: cache
spec:
  serviceClassExternalName: postgresql
  servicePlanExternalName: hobby
  updateRequests: 2
---
apiVersion: servicecatalog.k8s.io/v1beta1
kind: ServiceBinding
metadata:
  name: db-creds
spec:
  instanceRef:
    name: db
  secretName: db-secret
`

const declUnrelated = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports: [{port: 80}]
`

// declParamsSecret creates Secret db-params, which declOwnInstance's parametersFrom
// names, in ns; it returns the admin's client. Its parameter is one the plan's update
// schema accepts too: an update sends every parameter read from a Secret.
func declParamsSecret(t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = admin.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db-params"}, StringData: map[string]string{"extra": `{"extensions":["pgcrypto"]}`},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	return admin
}

func declWrite(t *testing.T, dir, name, content string) {
	t.Helper()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
}

// declStdin runs "kubectl catalog -n NS ARGS..." as the admin with input on standard
// input.
func declStdin(t *testing.T, ns, input string, args ...string) result {
	t.Helper()
	cmd := exec.Command(cp.Binaries.Kubectl, append([]string{"catalog", "-n", ns}, args...)...)
	cmd.Env, cmd.Stdin = instEnviron(t), strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{Stdout: stdout.String(), Stderr: stderr.String()}
	if exitErr, ok := err.(*exec.ExitError); ok {
		res.ExitCode = exitErr.ExitCode()
	} else {
		assert.NilError(t, err)
	}
	t.Logf("$ kubectl catalog %s < input (exit %d)\n%s%s", strings.Join(args, " "), res.ExitCode, res.Stdout, res.Stderr)
	return res
}

func TestDeclarative_ApplyReapplyChangeDiffAndBrokenSet(t *testing.T) {
	t.Parallel()
	ns, b, _ := instSetup(t)
	admin := declParamsSecret(t, ns)
	dir := t.TempDir()
	declWrite(t, dir, "db.yaml", strings.Replace(declOwnInstance, "STORAGE", "2", 1))
	declWrite(t, dir, "svcat.yaml", declSvcat)

	// Applied: two instances provisioned, one binding bound.
	b.ClearRequests()
	r := instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db created\n"+
		"serviceinstance.catalog.kubectl-catalog.io/cache created\n"+
		"servicebinding.catalog.kubectl-catalog.io/db-creds created\n")
	assert.Assert(t, is.Contains(r.Stderr, "spec.updateRequests ignored"))
	assert.Equal(t, len(b.RequestsFor(broker.OpProvision)), 2)
	assert.Equal(t, len(b.RequestsFor(broker.OpBind)), 1)
	r = instCatalog(t, ns, "get", "instances", "-l", "app=shop", "-o", "name")
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db\n")
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(context.Background(), "catalog-instance.db", metav1.GetOptions{})
	assert.NilError(t, err)
	for k, v := range cm.Data {
		assert.Assert(t, !strings.Contains(v, "pgcrypto"), "a Secret's parameter copied into the record's %s: %s", k, v)
	}

	// Re-applied: no broker call, no write.
	b.ClearRequests()
	before := snapshotRecords(t, ns)
	r = instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, strings.Count(r.Stdout, " unchanged\n"), 3, r.Stdout)
	assert.Equal(t, len(b.Requests()), 0)
	assert.DeepEqual(t, snapshotRecords(t, ns), before)
	r = instCatalog(t, ns, "diff", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stdout+r.Stderr)
	assert.Equal(t, r.Stdout, "")

	// A broken manifest in the set: nothing changes, and the error names it.
	declWrite(t, dir, "db.yaml", strings.Replace(declOwnInstance, "STORAGE", "3", 1))
	declWrite(t, dir, "zz-broken.yaml", "apiVersion: catalog.kubectl-catalog.io/v1alpha1\nkind: ServiceInstance\nmetadata:\n  name: broken\nspec:\n  classExternalName: postgresql\n  planExternalName: no-such-plan\n")
	r = instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "zz-broken.yaml, document 1"))
	assert.Assert(t, is.Contains(r.Stderr, "nothing was applied"))
	assert.Equal(t, len(b.Requests()), 0)
	assert.DeepEqual(t, snapshotRecords(t, ns), before)
	assert.NilError(t, os.Remove(filepath.Join(dir, "zz-broken.yaml")))

	// Changed: diff says so, then one update.
	r = instCatalog(t, ns, "diff", "-f", dir)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "-    storage_gb: 2\n+    storage_gb: 3\n"))
	r = instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Contains(r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db configured\n"))
	assert.Equal(t, len(b.RequestsFor(broker.OpUpdate)), 1)
	assert.Equal(t, b.RequestsFor(broker.OpUpdate)[0].Status, http.StatusOK, "the broker took the update")
	assert.Equal(t, len(b.RequestsFor(broker.OpProvision))+len(b.RequestsFor(broker.OpBind)), 0)

	// A chart's whole output on standard input: the other kinds are skipped.
	r = declStdin(t, ns, declUnrelated+"---\n"+strings.ReplaceAll(strings.Replace(declOwnInstance, "STORAGE", "1", 1), "name: db\n", "name: from-stdin\n"), "apply", "-f", "-")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/from-stdin created\n")
	assert.Assert(t, is.Contains(r.Stderr, `skipped Deployment "web"`))
	assert.Assert(t, is.Contains(r.Stderr, `skipped Service "web"`))
	_, err = admin.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	assert.Assert(t, err != nil, "a Deployment was created")

	// Deleted: the binding unbound, then both instances deprovisioned; the one from
	// standard input stays.
	b.ClearRequests()
	r = instCatalog(t, ns, "delete", "-f", dir, "--yes", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, len(b.RequestsFor(broker.OpUnbind)), 1)
	assert.Equal(t, len(b.RequestsFor(broker.OpDeprovision)), 2)
	r = instCatalog(t, ns, "get", "instances", "-o", "name")
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/from-stdin\n")
}

// declBrokers are a broker of the catalog's own kind and one of the retired Service
// Catalog, both namespace-scoped, with basic authentication from Secret broker-auth
// (instSetup's), at OTHER_URL and OLD_URL; declOnBrokers an instance on each.
const declBrokers = `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: Broker
metadata:
  name: other
spec:
  url: OTHER_URL
  scope: Namespace
  auth:
    type: Basic
    secretRef:
      name: broker-auth
---
apiVersion: servicecatalog.k8s.io/v1beta1
kind: ServiceBroker
metadata:
  name: old
spec:
  url: OLD_URL
  relistBehavior: Manual
  authInfo:
    basic:
      secretRef:
        name: broker-auth
`

const declOnBrokers = `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceInstance
metadata:
  name: on-other
spec:
  brokerName: other
  classExternalName: postgresql
  planExternalName: hobby
---
apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceInstance
metadata:
  name: on-old
spec:
  brokerName: old
  classExternalName: postgresql
  planExternalName: hobby
`

func TestDeclarative_BrokersFromManifests_ThenInstancesOnThem(t *testing.T) {
	t.Parallel()
	ns, acme, st := instSetup(t)
	opts := broker.Options{Username: "u", Password: "p", AsyncDelay: 300 * time.Millisecond, RetryAfter: -1}
	other, old := broker.NewTestBroker(t, opts), broker.NewTestBroker(t, opts)
	dir := t.TempDir()
	declWrite(t, dir, "brokers.yaml", strings.NewReplacer("OTHER_URL", other.URL(), "OLD_URL", old.URL()).Replace(declBrokers))
	declWrite(t, dir, "instances.yaml", declOnBrokers)
	all := []*broker.Broker{acme, other, old}
	requests := func() int {
		n := 0
		for _, b := range all {
			n += len(b.Requests())
		}
		return n
	}

	// A server dry run: checked, nothing written, no broker called.
	acme.ClearRequests()
	before := snapshotRecords(t, ns)
	r := instCatalog(t, ns, "apply", "-f", dir, "--dry-run=server")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "broker.catalog.kubectl-catalog.io/other created (server dry run)\n"+
		"broker.catalog.kubectl-catalog.io/old created (server dry run)\n"+
		"serviceinstance.catalog.kubectl-catalog.io/on-other created (server dry run)\n"+
		"serviceinstance.catalog.kubectl-catalog.io/on-old created (server dry run)\n")
	assert.Equal(t, requests(), 0)
	assert.DeepEqual(t, snapshotRecords(t, ns), before)

	// Applied: both brokers registered (their catalogs fetched with the Secret's
	// credentials), then an instance provisioned on each.
	r = instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "broker.catalog.kubectl-catalog.io/other created\n"+
		"broker.catalog.kubectl-catalog.io/old created\n"+
		"serviceinstance.catalog.kubectl-catalog.io/on-other created\n"+
		"serviceinstance.catalog.kubectl-catalog.io/on-old created\n")
	for _, b := range []*broker.Broker{other, old} {
		assert.Equal(t, len(b.RequestsFor(broker.OpCatalog)), 1)
		assert.Equal(t, len(b.RequestsFor(broker.OpProvision)), 1)
	}
	assert.Equal(t, len(acme.Requests()), 0)
	ctx := context.Background()
	for _, name := range []string{"other", "old"} {
		rec, err := st.Brokers().Get(ctx, ns, name)
		assert.NilError(t, err)
		assert.Equal(t, rec.Spec.Auth.Type, v1alpha1.AuthBasic)
		assert.Equal(t, rec.Spec.Auth.SecretRef.Name, "broker-auth")
		inst, err := st.Instances().Get(ctx, ns, "on-"+name)
		assert.NilError(t, err)
		assert.Equal(t, inst.Spec.BrokerName, name)
	}

	// Again: no broker call, no write.
	before = snapshotRecords(t, ns)
	r = instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, strings.Count(r.Stdout, " unchanged\n"), 4, r.Stdout)
	assert.Equal(t, requests(), 4)
	assert.DeepEqual(t, snapshotRecords(t, ns), before)

	// Deleting the brokers alone is refused while their instances exist.
	r = instCatalog(t, ns, "delete", "-f", filepath.Join(dir, "brokers.yaml"), "--yes")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "on-other"), r.Stderr)
	_, err := st.Brokers().Get(ctx, ns, "other")
	assert.NilError(t, err)

	// Both files: the instances deprovisioned, then the brokers deregistered.
	r = instCatalog(t, ns, "delete", "-f", dir, "--yes", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, ns, "get", "brokers", "-o", "name")
	assert.Equal(t, r.Stdout, "broker.catalog.kubectl-catalog.io/acme\n")
}

func TestDeclarative_PruneRemovesOnlyTheLabelledRecordsTheFilesNoLongerName(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	dir := t.TempDir()
	inst := func(name string) string {
		return strings.Replace(strings.Replace(declOwnInstance, "STORAGE", "1", 1), "name: db\n", "name: "+name+"\n", 1)
	}
	declParamsSecret(t, ns)
	declWrite(t, dir, "db.yaml", inst("db"))
	declWrite(t, dir, "db2.yaml", inst("db2"))
	r := instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	// A record without the label, made by hand.
	r = instCatalog(t, ns, "provision", "keep", "--class", "postgresql", "--plan", "hobby")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	db2, err := st.Instances().Get(context.Background(), ns, "db2")
	assert.NilError(t, err)

	assert.NilError(t, os.Remove(filepath.Join(dir, "db2.yaml")))
	b.ClearRequests()
	r = instCatalog(t, ns, "apply", "-f", dir, "--prune", "-l", "app=shop", "--yes", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db unchanged\nserviceinstance.catalog.kubectl-catalog.io/db2 pruned\n")
	deletes := b.RequestsFor(broker.OpDeprovision)
	assert.Equal(t, len(deletes), 1)
	assert.Equal(t, deletes[0].InstanceID, db2.Spec.ExternalID)
	r = instCatalog(t, ns, "get", "instances", "-o", "name")
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db\nserviceinstance.catalog.kubectl-catalog.io/keep\n")
}

func TestDeclarative_ServerDryRun_WaitOnAnAsyncPlan_ThenALabelChangeIsOneWrite(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	manifest := `apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceInstance
metadata:
  name: db
  labels:
    app: shop
spec:
  classExternalName: postgresql
  planExternalName: standard
---
apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceBinding
metadata:
  name: db
spec:
  instanceName: db
`
	dir := t.TempDir()
	declWrite(t, dir, "db.yaml", manifest)

	// A server dry run: the API server checks the instance's create; nothing is written
	// and no broker called; the binding of the new instance is said to be unchecked.
	b.ClearRequests()
	empty := snapshotRecords(t, ns)
	r := instCatalog(t, ns, "apply", "-f", dir, "--dry-run=server")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db created (server dry run)\n"+
		"servicebinding.catalog.kubectl-catalog.io/db created (server dry run)\n")
	assert.Assert(t, is.Contains(r.Stderr, `ServiceBinding "db" not checked by the dry run`), r.Stderr)
	assert.Equal(t, len(b.Requests()), 0)
	assert.DeepEqual(t, snapshotRecords(t, ns), empty)

	// --wait: the asynchronous provision is polled until done, then the binding bound.
	r = instCatalog(t, ns, "apply", "-f", dir, "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	ctx := context.Background()
	inst, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, string(inst.Status.Phase), "Ready")
	assert.Assert(t, len(b.RequestsFor(broker.OpLastOperation)) > 0)
	bnd, err := st.Bindings().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, string(bnd.Status.Phase), "Ready")
	provisioned := b.RequestsFor(broker.OpProvision)[0].Seq
	bound := b.RequestsFor(broker.OpBind)[0].Seq
	polls := b.RequestsFor(broker.OpLastOperation)
	assert.Assert(t, polls[len(polls)-1].Seq < bound && provisioned < bound, "bound before the provision was done")

	// A label change: the instance's ConfigMap alone is written, no broker request, the
	// author kept.
	declWrite(t, dir, "db.yaml", strings.Replace(manifest, "app: shop", "app: shop\n    tier: gold", 1))
	b.ClearRequests()
	before := snapshotRecords(t, ns)
	r = instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db configured\nservicebinding.catalog.kubectl-catalog.io/db unchanged\n")
	assert.Equal(t, len(b.Requests()), 0)
	after := snapshotRecords(t, ns)
	var changed []string
	for k, v := range after {
		if before[k] != v {
			changed = append(changed, k)
		}
	}
	assert.DeepEqual(t, changed, []string{"cm/" + ns + "/catalog-instance.db"})
	relabelled, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, relabelled.Labels["tier"], "gold")
	assert.Equal(t, relabelled.Annotations["catalog.kubectl-catalog.io/author"], inst.Annotations["catalog.kubectl-catalog.io/author"])
	r = instCatalog(t, ns, "get", "instances", "-l", "tier=gold", "-o", "name")
	assert.Equal(t, r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db\n")

	// Again: nothing.
	r = instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, strings.Count(r.Stdout, " unchanged\n"), 2, r.Stdout)
	assert.DeepEqual(t, snapshotRecords(t, ns), after)
}

func TestDeclarative_SharedWith_SharesAndKeepsAGrantInUse(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	other := cp.NewNamespace(t)
	manifest := strings.Replace(declOwnInstance, "STORAGE", "1", 1)
	manifest = strings.Replace(manifest, "  parametersFrom:\n  - secretKeyRef:\n      name: db-params\n      key: extra\n", "", 1)
	dir := t.TempDir()
	declWrite(t, dir, "db.yaml", manifest+"  sharedWith: ["+other+"]\n")

	// Provisioned, then shared: the other namespace binds to it.
	r := instCatalog(t, ns, "apply", "-f", dir, "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	ctx := context.Background()
	inst, err := st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, inst.Spec.SharedWith, []string{other})
	r = instCatalog(t, other, "bind", ns+"/db", "--name", "theirs", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// Left out while that namespace holds a binding: refused, nothing changed.
	declWrite(t, dir, "db.yaml", manifest)
	b.ClearRequests()
	before := snapshotRecords(t, ns, other)
	r = instCatalog(t, ns, "apply", "-f", dir)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "holds bindings of it (theirs)"), r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "kubectl catalog unshare db --from-namespace "+other), r.Stderr)
	assert.Equal(t, len(b.Requests()), 0)
	assert.DeepEqual(t, snapshotRecords(t, ns, other), before)
}

// declInstanceAndBinding is an instance whose parameters come from Secret db-params and
// a binding of it, in one file, as docs/declarative.md shows them.
const declInstanceAndBinding = declOwnInstance + `---
apiVersion: catalog.kubectl-catalog.io/v1alpha1
kind: ServiceBinding
metadata:
  name: db
spec:
  instanceName: db
  secretName: db-credentials
`

// A file whose first document, a new instance, is refused (the Secret its
// parametersFrom names does not exist) says so of the binding of the second document
// too, naming the first, rather than that the instance does not exist; nothing is
// written and no broker is called. Once the Secret exists, the same file provisions the
// instance and binds it.
func TestDeclarative_BindingOfARefusedNewInstance_NamesItsDocument(t *testing.T) {
	t.Parallel()
	ns, b, st := instSetup(t)
	dir := t.TempDir()
	declWrite(t, dir, "db.yaml", strings.Replace(declInstanceAndBinding, "STORAGE", "2", 1))
	file := filepath.Join(dir, "db.yaml")
	b.ClearRequests()

	for _, args := range [][]string{{"apply", "-f", file}, {"apply", "-f", file, "--dry-run=client"}, {"diff", "-f", file}} {
		r := instCatalog(t, ns, args...)

		assert.Check(t, r.ExitCode > 0, "%v", args)
		assert.Check(t, is.Contains(r.Stderr, file+`, document 1: `), args)
		assert.Check(t, is.Contains(r.Stderr, `"db-params"`), args)
		assert.Check(t, is.Contains(r.Stderr, file+`, document 2: binding "db": its instance "db" is new and refused (`+file+`, document 1): fix that document and apply again`), args)
		assert.Check(t, !strings.Contains(r.Stderr, `instance "db" not found`), "%v: %s", args, r.Stderr)
	}
	assert.Check(t, is.Len(b.Requests(), 0))
	_, err := st.Instances().Get(context.Background(), ns, "db")
	assert.Check(t, err != nil, "no instance was written")

	declParamsSecret(t, ns)
	r := instCatalog(t, ns, "apply", "-f", file, "--wait")

	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Check(t, is.Contains(r.Stdout, "serviceinstance.catalog.kubectl-catalog.io/db created"))
	assert.Check(t, is.Contains(r.Stdout, "servicebinding.catalog.kubectl-catalog.io/db created"))
	bnd, err := st.Bindings().Get(context.Background(), ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, bnd.Status.Phase, v1alpha1.PhaseReady)
}
