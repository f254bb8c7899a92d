package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestMigrateForged_AForgedMigratedFromTakesNoOtherNamespacesID has bob's instance use an
// OSB id bound to nothing without its id claim, once the cluster's records all have
// theirs (its writer's claim failed). alice, with the documented user role in her
// namespace and a viewer of bob's, writes a record of her own, as herself (its verified
// author), naming that id and annotated as one "migrate svcat" wrote, its status saying
// it is provisioned. She may not read Service Catalog's objects, so the annotation
// counts for nothing: reconcile, run over every namespace with its ServiceAccount, makes
// no claim for her record, bob's next step makes his and goes on under the id, and her
// record is refused, naming bob's as the one that adopted the id first.
func TestMigrateForged_AForgedMigratedFromTakesNoOtherNamespacesID(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	alice := trustAliceInTeamA(t, e)

	const id = "svcat-migrate-forged-e2e"
	r := trustBob(t, e, "provision", "db", "--class", "object-storage", "--plan", "bucket", "--external-id", id)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamB)
	db, err := e.st.Instances().Get(ctx, e.teamB, "db")
	assert.NilError(t, err)
	assert.Equal(t, db.Status.Phase, v1alpha1.PhaseReady)
	// Every record of the cluster has its claims (reconcile's first pass marked it so),
	// but bob's claim failed.
	_, err = e.admin.CoreV1().ConfigMaps(e.catalogNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: store.IDClaimsMarker, Labels: map[string]string{store.LabelManagedBy: store.ManagedBy}}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	bobs := store.IDClaimName(v1alpha1.KindServiceInstance, db.UID, id)
	_, err = e.admin.CoreV1().ConfigMaps(e.teamB).Patch(ctx, bobs, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	assert.NilError(t, err)
	assert.NilError(t, e.admin.CoreV1().ConfigMaps(e.teamB).Delete(ctx, bobs, metav1.DeleteOptions{}))
	instWaitFor(t, "bob's claim to go", 30*time.Second, func() bool {
		_, err := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, bobs, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// Her record, written as herself under the trust policy, says "migrate svcat" wrote it.
	hers := store.New(e.alice, nil,
		store.WithIdentity(func(context.Context) (*store.Identity, error) {
			return &store.Identity{Username: controlplane.AliceUser, Groups: []string{authenticatedGroups}}, nil
		}),
		store.WithTrustToken(func(context.Context) (string, error) { return e.token, nil }))
	mine, err := hers.Instances().Create(store.WithIntent(ctx), &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: e.teamA, Name: "mine",
		Annotations: map[string]string{store.AnnotationMigratedFrom: "ServiceInstance/" + e.teamA + "/mine/4b1e0c7a-forged"},
	}, Spec: db.Spec})
	assert.NilError(t, err)
	assert.Equal(t, mine.Annotations[store.AnnotationAuthor], controlplane.AliceUser)
	_, err = store.New(e.alice, nil).Instances().UpdateWithRetry(ctx, e.teamA, "mine", func(i *v1alpha1.ServiceInstance) error {
		i.Status = v1alpha1.ServiceInstanceStatus{Provisioned: &v1alpha1.ProvisionedState{PlanID: db.Spec.PlanID}}
		i.Status.ExternalID, i.Status.ExternalIDs = id, []string{id}
		i.Status.ObservedGeneration, i.Status.Phase = i.Generation, v1alpha1.PhaseReady
		return nil
	})
	assert.NilError(t, err)
	herClaim := store.IDClaimName(v1alpha1.KindServiceInstance, mine.UID, id)

	// reconcile over every namespace makes the late claims of migrated records: none
	// for hers.
	_, r = recRunStrict(t, e.catalogNS, []string{"KUBECONFIG=" + e.saKubeconfig}, "-A", "--catalog-namespace", e.catalogNS,
		"--max-duration", "3s", "--interval", "200ms")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err = e.admin.CoreV1().ConfigMaps(e.teamA).Get(ctx, herClaim, metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "reconcile made the id claim of her forged migrated record: %v", err)

	// bob's next step makes his claim and sends the update under his id.
	r = trustBob(t, e, "touch", "instance", "db")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamB)
	_, err = e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, bobs, metav1.GetOptions{})
	assert.NilError(t, err, "bob's record made its claim")
	db, err = e.st.Instances().Get(ctx, e.teamB, "db")
	assert.NilError(t, err)
	assert.Assert(t, meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionRefused) == nil, "%+v", db.Status.Conditions)
	updates := func() int {
		n := 0
		for _, req := range e.b.RequestsFor(broker.OpUpdate) {
			if req.InstanceID == id {
				n++
			}
		}
		return n
	}
	assert.Equal(t, updates(), 1, "bob's touch reached the broker")

	// Her record is refused, naming bob's as the id's, and sends nothing.
	alice("touch", "instance", "mine")
	trustReconcile(t, e, e.teamA)
	c := meta.FindStatusCondition(trustConditions(t, e, v1alpha1.KindServiceInstance, e.teamA, "mine"), v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Reason == engine.ReasonRefusedIDInUse, "%+v", c)
	assert.Assert(t, strings.Contains(c.Message, `"db" in namespace "`+e.teamB+`"`), c.Message)
	assert.Equal(t, updates(), 1, "her touch sent nothing")

	t.Run("the policy refuses the annotation from who is neither the author nor a Service Catalog reader", func(t *testing.T) {
		// An administrator's record in her namespace; she may write its ConfigMap.
		admins := store.New(e.admin, nil,
			store.WithIdentity(func(context.Context) (*store.Identity, error) {
				return &store.Identity{Username: controlplane.AdminUser, Groups: []string{"system:masters", authenticatedGroups}}, nil
			}),
			store.WithTrustToken(func(context.Context) (string, error) { return e.token, nil }))
		spec := db.Spec
		spec.ExternalID = ""
		_, err := admins.Instances().Create(store.WithIntent(ctx), &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: "adm"}, Spec: spec})
		assert.NilError(t, err)
		cm, err := e.alice.CoreV1().ConfigMaps(e.teamA).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, "adm"), metav1.GetOptions{})
		assert.NilError(t, err)
		cm.Annotations[store.AnnotationMigratedFrom] = "ServiceInstance/" + e.teamA + "/adm/4b1e0c7a-forged"
		_, err = e.alice.CoreV1().ConfigMaps(e.teamA).Update(ctx, cm, metav1.UpdateOptions{})
		assert.Assert(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "%v", err)
		assert.ErrorContains(t, err, store.AnnotationMigratedFrom)
		assert.ErrorContains(t, err, "servicecatalog.k8s.io")
		// The administrator, who may read the Service Catalog's objects, may.
		cm, err = e.admin.CoreV1().ConfigMaps(e.teamA).Get(ctx, cm.Name, metav1.GetOptions{})
		assert.NilError(t, err)
		cm.Annotations[store.AnnotationMigratedFrom] = "ServiceInstance/" + e.teamA + "/adm/0c3d"
		_, err = e.admin.CoreV1().ConfigMaps(e.teamA).Update(ctx, cm, metav1.UpdateOptions{})
		assert.NilError(t, err)
	})
}
