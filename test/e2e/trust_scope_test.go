package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestTrustScope_DroppingALabelDoesNotTakeARecordOutOfThePolicy: alice and bob share a
// namespace with the documented user role. bob registers a namespace broker with Basic
// credentials and provisions through it. alice tries to unlabel bob's broker record, so
// that the policy no longer sees it, and then to point it at her server: the API server
// refuses both, and bob's deprovision sends his broker's credentials nowhere but to his
// broker.
func TestTrustScope_DroppingALabelDoesNotTakeARecordOutOfThePolicy(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	shared := e.teamB

	r := kubectl(t, controlplane.AdminUser, "create", "rolebinding", "kubectl-catalog-user-alice", "--clusterrole", "kubectl-catalog-user",
		"--user", controlplane.AliceUser, "-n", shared)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err := e.admin.CoreV1().Secrets(shared).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-auth"},
		StringData: map[string]string{"username": "u", "password": "p"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	instWaitFor(t, "alice's role binding to take effect", 30*time.Second, func() bool {
		_, err := e.alice.CoreV1().ConfigMaps(shared).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	})

	// The cluster id, which whoever first sets the catalog up stores (bob may not write
	// in the catalog namespace).
	_, err = e.admin.CoreV1().ConfigMaps(e.catalogNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ClusterIDConfigMap},
		Data: map[string]string{kube.ClusterIDKey: "e2e-trust-scope"}}, metav1.CreateOptions{})
	assert.Check(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)

	r = trustBob(t, e, "register", "team", "--url", e.brokerURL, "--basic-auth-secret", "team-auth", "--scope", "namespace")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = trustBob(t, e, "provision", "db", "--class", "team/object-storage", "--plan", "bucket")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, shared)
	inst, err := e.st.Instances().Get(ctx, shared, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)

	cms := e.alice.CoreV1().ConfigMaps(shared)
	name := store.ConfigMapName(v1alpha1.KindBroker, "team")
	refusedByPolicy := func(err error, what string) {
		t.Helper()
		assert.Check(t, apierrors.IsForbidden(err), "%s: want refused by the trust policy, got %v", what, err)
		assert.Check(t, is.ErrorContains(err, store.TrustPolicyName), what)
	}

	// 1. The managed-by label removed, nothing else: the policy selected records by it.
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	delete(cm.Labels, store.LabelManagedBy)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	refusedByPolicy(err, "the managed-by label removed")
	assert.Check(t, is.ErrorContains(err, "may not be removed or changed"))

	// The kind label changed or removed, likewise.
	cm, err = cms.Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Labels[store.LabelKind] = v1alpha1.KindCatalogAccess
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	refusedByPolicy(err, "the kind label changed")

	// 2. Then (were the label gone) the spec pointed at her server, without re-stamping.
	cm, err = cms.Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	var rec map[string]any
	assert.NilError(t, json.Unmarshal([]byte(cm.Data[store.DataKey]), &rec))
	rec["spec"].(map[string]any)["url"] = e.attackerURL
	raw, err := json.Marshal(rec)
	assert.NilError(t, err)
	cm.Data[store.DataKey] = string(raw)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	refusedByPolicy(err, "the spec of an unlabelled record changed")

	// 3. A record created under a record's name without the label, stamped as herself.
	forged := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: store.ConfigMapName(v1alpha1.KindBroker, "forged"), Namespace: shared,
			Labels: map[string]string{store.LabelKind: v1alpha1.KindBroker},
			Annotations: map[string]string{store.AnnotationAuthor: controlplane.AliceUser, store.AnnotationAuthorGroups: authenticatedGroups,
				store.AnnotationTrustToken: e.token}},
		Data: map[string]string{store.DataKey: string(raw)},
	}
	_, err = cms.Create(ctx, forged, metav1.CreateOptions{})
	refusedByPolicy(err, "a record created without the managed-by label")

	// 4. bob's own deprovision: his broker's credentials go to his broker only.
	before := len(e.brokerTap.requests())
	r = trustBob(t, e, "deprovision", "db", "--yes")
	assert.Check(t, r.ExitCode == 0, r.Stderr)
	trustReconcile(t, e, shared)
	for _, req := range e.attacker.requests() {
		assert.Check(t, !strings.Contains(req, "Authorization: Basic"), "bob's broker credentials reached alice's server:\n%s", req)
	}
	assert.Check(t, len(e.brokerTap.requests()) > before, "the deprovision went to bob's broker")
	_, err = e.st.Instances().Get(ctx, shared, "db")
	assert.Check(t, apierrors.IsNotFound(err), "db is deprovisioned: %v", err)
}
