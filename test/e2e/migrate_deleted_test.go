package e2e

import (
	"context"
	"net/http"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// Records migrated from svcat, then deleted with the product (unbind, deprovision): a
// later "migrate svcat" does not make them again from the old objects, which still say
// the broker holds them. The broker holds nothing under their ids any more, and a
// record made again would claim an instance the broker no longer has, its next call
// answered 404 for ever. The rows say so (nothing for a person), --cleanup deletes the
// old objects, and a binding left behind under the deleted instance waits for a person,
// its row saying what became of its instance. Nothing but catalog GETs reaches the
// broker.
func TestMigrateSvcat_ARecordDeletedAfterItsMigration_IsNotMadeAgain(t *testing.T) {
	serial(t, retiredCatalogCRDs)
	e := newSvcatEnv(t)
	f := e.seed(t)
	ctx := context.Background()

	r, got := e.migrate(t)
	assert.Equal(t, r.ExitCode, 1, r.Stderr)
	assert.Equal(t, got["ServiceInstance/ready"].Result, "migrated", got["ServiceInstance/ready"].Reason)
	assert.Equal(t, got["ServiceBinding/ready-creds"].Result, "migrated", got["ServiceBinding/ready-creds"].Reason)
	old, err := e.dyn.Resource(svcatGVR("serviceinstances")).Namespace(e.ns).Get(ctx, "ready", metav1.GetOptions{})
	assert.NilError(t, err)
	rec, err := e.st.Instances().Get(ctx, e.ns, "ready")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(old.GetAnnotations()["catalog.kubectl-catalog.io/migrated-to"], string(rec.UID)), "the old object names its record")

	// The user deletes them with the product; the binding svcat lost the Secret of is
	// unbound at the broker by hand, as its row said.
	r = e.catalog(t, "unbind", "ready-creds", "--yes", "--wait")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	status, _ := e.osbCall(t, http.MethodDelete, "/v2/service_instances/"+f.readyID+"/service_bindings/"+f.lostBindingID+
		"?service_id="+broker.DemoPostgresServiceID+"&plan_id="+broker.DemoPostgresHobbyPlanID, nil)
	assert.Equal(t, status, http.StatusOK)
	r = e.catalog(t, "deprovision", "ready", "--yes", "--wait", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, held := e.b.Instance(f.readyID)
	assert.Assert(t, !held)
	e.b.ClearRequests()

	for _, cleanup := range []bool{false, true} {
		var args []string
		if cleanup {
			args = []string{"--cleanup"}
		}
		r, got = e.migrate(t, args...)
		assert.Equal(t, r.ExitCode, 1, "the binding left behind needs a person: %s", r.Stderr)
		for _, key := range []string{"ServiceInstance/ready", "ServiceBinding/ready-creds"} {
			o := got[key]
			assert.Equal(t, o.Result, "skipped", "%s: %s", key, o.Reason)
			assert.Check(t, is.Contains(o.Reason, "was deleted since"), key)
			assert.Check(t, !o.NeedsPerson, key)
		}
		lost := got["ServiceBinding/lost-creds"]
		assert.Equal(t, lost.Result, "skipped", lost.Reason)
		assert.Check(t, is.Contains(lost.Reason, `its instance "ready" was migrated, and its record deleted since`))
		assert.Check(t, lost.NeedsPerson)
		_, err = e.st.Instances().Get(ctx, e.ns, "ready")
		assert.Assert(t, store.IsNotFound(err), "the instance's record is not made again: %v", err)
		_, err = e.st.Bindings().Get(ctx, e.ns, "ready-creds")
		assert.Assert(t, store.IsNotFound(err), "the binding's record is not made again: %v", err)
	}
	_, err = e.dyn.Resource(svcatGVR("servicebindings")).Namespace(e.ns).Get(ctx, "ready-creds", metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "--cleanup deletes the old binding: %v", err)
	_, err = e.dyn.Resource(svcatGVR("serviceinstances")).Namespace(e.ns).Get(ctx, "ready", metav1.GetOptions{})
	assert.NilError(t, err, "the old instance a binding left behind names stays")
	onlyCatalogGETs(t, e.b)
}
