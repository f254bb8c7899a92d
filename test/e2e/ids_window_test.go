package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
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

// TestIDsWindow_AForgedStatusDoesNotBindAnotherTenantsUnclaimedID has bob's instance use
// an OSB id bound to nothing without an id claim (a record of an earlier release, or
// one whose claim a quota refused). alice, with the documented user role in her
// namespace and a viewer of bob's, writes a younger record of her own naming that id,
// writes into its status that it is provisioned, and binds it. reconcile, run with its
// ServiceAccount's token over her namespace only, claims the id for bob's older record
// before hers, and binds nothing: her binding gets no credentials, and bob's instance
// goes on as his.
func TestIDsWindow_AForgedStatusDoesNotBindAnotherTenantsUnclaimedID(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	alice := trustAliceInTeamA(t, e)

	const id = "svcat-ids-window-e2e"
	r := trustBob(t, e, "provision", "db", "--class", "object-storage", "--plan", "bucket", "--external-id", id)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamB)
	db, err := e.st.Instances().Get(ctx, e.teamB, "db")
	assert.NilError(t, err)
	assert.Equal(t, db.Status.Phase, v1alpha1.PhaseReady)
	// bob's record has no claim: it is one of an earlier release.
	claim := store.IDClaimName(v1alpha1.KindServiceInstance, db.UID, id)
	_, err = e.admin.CoreV1().ConfigMaps(e.teamB).Patch(ctx, claim, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	assert.NilError(t, err)
	assert.NilError(t, e.admin.CoreV1().ConfigMaps(e.teamB).Delete(ctx, claim, metav1.DeleteOptions{}))
	instWaitFor(t, "bob's claim to go", 30*time.Second, func() bool {
		_, err := e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, claim, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// Creation times are whole seconds: hers comes in a later one.
	instWaitFor(t, "the second bob's instance was created in to pass", 5*time.Second, func() bool {
		return time.Now().After(db.CreationTimestamp.Add(time.Second))
	})

	// Her record names the id, and its status says it is provisioned.
	hers := store.New(e.alice, nil, store.WithIdentity(func(context.Context) (*store.Identity, error) {
		return &store.Identity{Username: controlplane.AliceUser, Groups: []string{authenticatedGroups}}, nil
	}))
	_, err = hers.Instances().Create(ctx, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: "mine"}, Spec: db.Spec})
	assert.NilError(t, err)
	_, err = store.New(e.alice, nil).Instances().UpdateWithRetry(ctx, e.teamA, "mine", func(i *v1alpha1.ServiceInstance) error {
		i.Status = v1alpha1.ServiceInstanceStatus{Provisioned: &v1alpha1.ProvisionedState{PlanID: db.Spec.PlanID}}
		i.Status.ExternalID, i.Status.ExternalIDs = id, []string{id}
		i.Status.ObservedGeneration, i.Status.Phase = i.Generation, v1alpha1.PhaseReady
		return nil
	})
	assert.NilError(t, err)

	alice("bind", "mine", "--name", "steal")
	_, err = e.st.Bindings().Get(ctx, e.teamA, "steal")
	assert.NilError(t, err)
	trustReconcile(t, e, e.teamA)

	_, err = e.admin.CoreV1().Secrets(e.teamA).Get(ctx, "steal", metav1.GetOptions{})
	assert.Assert(t, apierrors.IsNotFound(err), "no credentials Secret: %v", err)
	for _, req := range e.b.RequestsFor(broker.OpBind) {
		assert.Assert(t, req.InstanceID != id, "a bind to bob's instance was sent: %+v", req)
	}
	c := meta.FindStatusCondition(trustConditions(t, e, v1alpha1.KindServiceBinding, e.teamA, "steal"), v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Reason == engine.ReasonRefusedIDInUse, "%+v", c)
	_, err = e.admin.CoreV1().ConfigMaps(e.teamB).Get(ctx, claim, metav1.GetOptions{})
	assert.NilError(t, err, "bob's record got its claim back, first")

	t.Run("bob's instance is still his", func(t *testing.T) {
		r := trustBob(t, e, "bind", "db", "--name", "app")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamB)
		b, err := e.st.Bindings().Get(ctx, e.teamB, "app")
		assert.NilError(t, err)
		assert.Assert(t, b.Status.Bound != nil, "%+v", b.Status.Conditions)
	})
}
