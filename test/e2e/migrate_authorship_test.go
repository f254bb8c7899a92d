package e2e

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// A tenant's svcat binding that makes the catalog read Secrets otherwise than through
// parametersFrom: keys copied from a Secret (secretTransforms addKeysFrom), or a
// credentials Secret it merely names (svcat's controller made its own, owned by the
// binding), which the catalog would take over (rewrite, project into workloads, delete
// at the unbind). An administrator migrating the namespace would become the record's
// author and lend it her rights: such a binding is migrated only by the author svcat
// recorded, who may read those Secrets herself; the others of the run go on.
func TestMigrateAuthorship_TransformsAndNamedSecretsAreMigratedOnlyByTheirAuthor(t *testing.T) {
	serial(t, retiredCatalogCRDs)
	e := newSvcatEnv(t)
	f := e.seed(t)
	ctx := context.Background()
	secret := func(name string, owner *metav1.OwnerReference) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"token": "root-4c2e91"}}
		if owner != nil {
			s.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		_, err := e.admin.CoreV1().Secrets(e.ns).Create(ctx, s, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	secret("root", nil)
	bound := map[string]any{
		"conditions":        []any{map[string]any{"type": "Ready", "status": "True", "reason": "InjectedBindResult", "message": "Injected bind result", "lastTransitionTime": "2021-03-01T10:00:00Z"}},
		"asyncOpInProgress": false, "reconciledGeneration": int64(1), "unbindStatus": "Required",
	}
	yes := true
	binding := func(name, author, secretName string, transforms []any, owned bool) {
		t.Helper()
		id := uuid.NewString()
		e.bindAtBroker(t, f.readyID, id)
		spec := map[string]any{"instanceRef": map[string]any{"name": "ready"}, "externalID": id, "secretName": secretName,
			"userInfo": map[string]any{"username": author}}
		if transforms != nil {
			spec["secretTransforms"] = transforms
		}
		u := e.createOld(t, "servicebindings", "ServiceBinding", e.ns, name, spec, bound, false)
		if secretName == name {
			var owner *metav1.OwnerReference
			if owned {
				owner = &metav1.OwnerReference{APIVersion: "servicecatalog.k8s.io/v1beta1", Kind: "ServiceBinding", Name: name, UID: u.GetUID(), Controller: &yes}
			}
			secret(name, owner)
		}
	}
	addRoot := []any{map[string]any{"addKeysFrom": map[string]any{"secretRef": map[string]any{"name": "root"}}}}
	binding("tenant-transform", controlplane.BobUser, "tenant-transform", addRoot, true)
	binding("tenant-root", controlplane.BobUser, "root", nil, false)
	binding("admin-transform", controlplane.AdminUser, "admin-transform", addRoot, true)
	before := e.state(t)

	_, got := e.migrate(t)
	for name, reason := range map[string]string{
		"tenant-transform": `its credentials take keys from Secrets (spec.secretTransforms addKeysFrom: "root")`,
		"tenant-root":      `its credentials Secret "root" is not owned by it`,
	} {
		o := got["ServiceBinding/"+name]
		assert.Equal(t, o.Result, "skipped", "%s: %s", name, o.Reason)
		assert.Check(t, is.Contains(o.Reason, reason), name)
		assert.Check(t, is.Contains(o.Reason, `svcat recorded "`+controlplane.BobUser+`" as its author`), name)
		assert.Check(t, o.NeedsPerson, name)
		_, err := e.st.Bindings().Get(ctx, e.ns, name)
		assert.Check(t, store.IsNotFound(err), "%s: no record in the administrator's name: %v", name, err)
	}
	after := e.state(t)
	assert.Equal(t, after["secret/root"], before["secret/root"], "the named Secret is not taken over")
	o := got["ServiceBinding/admin-transform"]
	assert.Equal(t, o.Result, "migrated", "the author who may read the Secret migrates it: %s", o.Reason)
	assert.Equal(t, got["ServiceBinding/ready-creds"].Result, "migrated", "the rest of the run goes on")
}
