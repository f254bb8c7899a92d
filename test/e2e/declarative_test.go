package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	_, err = admin.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db-params"}, StringData: map[string]string{"extra": `{"version":"15"}`},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
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
		assert.Assert(t, !strings.Contains(v, `"15"`), "a Secret's parameter copied into the record's %s: %s", k, v)
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
