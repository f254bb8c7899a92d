package e2e

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// A class of 1,500 plans, each with create, update and bind schemas, is 2.8 MB of catalog
// JSON: its schemas record does not fit in a ConfigMap as JSON, so it is stored
// compressed, and everything that reads schemas (provision's validation) still works.
func TestBigCatalog_AClassOf1500PlansWithSchemasRegistersAndWorks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat := broker.GenerateCatalog(1, 1500)
	b := broker.NewTestBroker(t, broker.Options{Catalog: &cat})
	ns := cp.NewNamespace(t)
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	run := func(args ...string) result {
		t.Helper()
		return kubectl(t, controlplane.AdminUser, append([]string{"catalog", "-n", ns}, args...)...)
	}

	r := run("register", "big", "--url", b.URL(), "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	svc := cat.Services[0]
	name := store.ConfigMapName(v1alpha1.KindServicePlanSchemas, v1alpha1.ClassRecordName("big", svc.ID))
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, cm.Annotations[store.AnnotationFormat], "3", "the schemas record is compressed")
	size := 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	t.Logf("schemas record of 1,500 plans: %d bytes stored", size)
	assert.Assert(t, size < 1<<20)

	r = run("marketplace", "--class", svc.Name)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, strings.Count(r.Stdout, " plan-"), 1500, "one row per plan")

	// The schemas are read back: a parameter the plan's schema forbids is refused
	// before the broker is called, and a valid one provisions.
	r = run("provision", "bad", "--class", svc.Name, "--plan", "plan-1499", "-p", "size=huge")
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Assert(t, is.Contains(r.Stderr, "size"))
	assert.Assert(t, is.Len(b.RequestsFor(broker.OpProvision), 0))

	r = run("provision", "db", "--class", svc.Name, "--plan", "plan-1498", "-p", "size=large", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = run("bind", "db", "--name", "db-creds", "-p", "role=readonly", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	// An unchanged sync rewrites nothing.
	before := cm.ResourceVersion
	r = run("sync", "broker", "big")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	cm, err = admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, cm.ResourceVersion, before)

	r = run("unbind", "db-creds", "--yes", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = run("deprovision", "db", "--yes", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Assert(t, is.Len(b.Violations(), 0))
}
