package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestTrustIDs_AnIDWrittenIntoAStatusTakesNothingOver has alice, who holds the documented
// user role in her namespace and may read bob's records, copy the OSB id of bob's
// instance into the status of an instance she recorded before his, bind it, and delete
// it. reconcile, run with its ServiceAccount's token, sends that id for none of it: her
// binding gets no credentials of bob's, her deletion deprovisions nothing of his, and
// her records say why. bob's instance goes on as his.
func TestTrustIDs_AnIDWrittenIntoAStatusTakesNothingOver(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	alice := trustAliceInTeamA(t, e)
	instWaitFor(t, "alice's role binding in her namespace to take effect", 30*time.Second, func() bool {
		_, err := e.alice.CoreV1().Secrets(e.teamA).Get(ctx, "hidden", metav1.GetOptions{})
		return err == nil
	})

	// alice's instance is recorded first; bob's is provisioned after it.
	r := alice("provision", "early", "--class", "object-storage", "--plan", "bucket")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = trustBob(t, e, "provision", "db", "--class", "object-storage", "--plan", "bucket")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamB)
	db, err := e.st.Instances().Get(ctx, e.teamB, "db")
	assert.NilError(t, err)
	assert.Equal(t, db.Status.Phase, v1alpha1.PhaseReady)
	bobID := db.CurrentExternalID()
	_, held := e.b.Instance(bobID)
	assert.Assert(t, held)

	// Her status says her instance holds bob's id: a status write, which the trust
	// policy admits from anyone who may update the ConfigMap.
	_, err = store.New(e.alice, nil).Instances().UpdateWithRetry(ctx, e.teamA, "early", func(i *v1alpha1.ServiceInstance) error {
		i.Status = v1alpha1.ServiceInstanceStatus{Provisioned: &v1alpha1.ProvisionedState{PlanID: db.Spec.PlanID}}
		i.Status.ExternalID, i.Status.ExternalIDs = bobID, []string{bobID}
		i.Status.ObservedGeneration, i.Status.Phase = i.Generation, v1alpha1.PhaseReady
		return nil
	})
	assert.NilError(t, err)

	t.Run("her binding gets nothing of bob's", func(t *testing.T) {
		// Her bind is recorded (she may not read the broker's credentials: reconcile
		// makes the call), whatever the verb then says.
		r := alice("bind", "early", "--name", "steal")
		_, err := e.st.Bindings().Get(ctx, e.teamA, "steal")
		assert.NilError(t, err, "exit %d: %s", r.ExitCode, r.Stderr)
		trustReconcile(t, e, e.teamA)

		_, err = e.admin.CoreV1().Secrets(e.teamA).Get(ctx, "steal", metav1.GetOptions{})
		assert.Assert(t, apierrors.IsNotFound(err), "no credentials Secret: %v", err)
		for _, req := range e.b.RequestsFor(broker.OpBind) {
			assert.Assert(t, req.InstanceID != bobID, "a bind to bob's instance was sent: %+v", req)
		}
		c := meta.FindStatusCondition(trustConditions(t, e, v1alpha1.KindServiceBinding, e.teamA, "steal"), v1alpha1.ConditionRefused)
		assert.Assert(t, c != nil && c.Reason == engine.ReasonRefusedIDNotOwned, "%+v", c)
	})

	t.Run("deleting her instance deprovisions nothing of bob's", func(t *testing.T) {
		alice("unbind", "steal", "--yes")
		alice("deprovision", "early", "--yes")
		trustReconcile(t, e, e.teamA)
		trustReconcile(t, e, e.teamA)
		// bob's id, which her record does not own, is forgotten with a visible reason
		// and keeps her deletion waiting no more (the cross-namespace rule).
		_, err := e.st.Instances().Get(ctx, e.teamA, "early")
		assert.Assert(t, store.IsNotFound(err), "her deletion finishes: %v", err)

		for _, req := range e.b.RequestsFor(broker.OpDeprovision) {
			assert.Assert(t, req.InstanceID != bobID, "bob's instance was deprovisioned: %+v", req)
		}
		_, held := e.b.Instance(bobID)
		assert.Assert(t, held, "bob's instance is still at the broker")
		evs := xnsEvents(t, e, e.teamA, store.ConfigMapName(v1alpha1.KindServiceInstance, "early"))
		assert.Assert(t, strings.Contains(evs, "UnownedIDsForgotten: ") && strings.Contains(evs, bobID), "%s", evs)
	})

	t.Run("bob's instance is still his", func(t *testing.T) {
		r := trustBob(t, e, "deprovision", "db", "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamB)
		recAssertGone(t, e.st, e.teamB, "db")
		_, held := e.b.Instance(bobID)
		assert.Assert(t, !held, "bob's own deletion deprovisions it")
	})
}

// TestTrustIDs_ASpecRewrittenToAnAdoptedIDTakesNothingOver has bob take over an OSB id
// bound to nothing (provision --external-id, as a migrated svcat instance has it), and
// alice, who may read bob's records, rewrite the spec of an instance of her own,
// recorded long before his, to name that id, then bind and delete it. The id is the
// record's that claimed it first (bob's), not the older record's: reconcile sends
// nothing under it for her, and bob's instance goes on as his.
func TestTrustIDs_ASpecRewrittenToAnAdoptedIDTakesNothingOver(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	alice := trustAliceInTeamA(t, e)

	// alice's instance is recorded and provisioned first, under an id of her own.
	r := alice("provision", "early", "--class", "object-storage", "--plan", "bucket")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamA)
	early, err := e.st.Instances().Get(ctx, e.teamA, "early")
	assert.NilError(t, err)
	// Creation times are whole seconds: bob's comes in a later one.
	instWaitFor(t, "the second alice's instance was created in to pass", 5*time.Second, func() bool {
		return time.Now().After(early.CreationTimestamp.Add(time.Second))
	})
	// bob's takes over an id of another platform.
	const adopted = "svcat-5e0c2b7a-e2e"
	r = trustBob(t, e, "provision", "db", "--class", "object-storage", "--plan", "bucket", "--external-id", adopted)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamB)
	db, err := e.st.Instances().Get(ctx, e.teamB, "db")
	assert.NilError(t, err)
	assert.Equal(t, db.Status.Phase, v1alpha1.PhaseReady)
	_, held := e.b.Instance(adopted)
	assert.Assert(t, held)

	// She read the id in describe, and writes it into her older instance's spec as its
	// author (the trust policy admits a spec write stamped with the writer).
	hers := store.New(e.alice, nil, store.WithIdentity(func(context.Context) (*store.Identity, error) {
		return &store.Identity{Username: controlplane.AliceUser, Groups: []string{authenticatedGroups}}, nil
	}))
	_, err = hers.Instances().UpdateWithRetry(ctx, e.teamA, "early", func(i *v1alpha1.ServiceInstance) error {
		i.Spec.ExternalID = adopted
		return nil
	})
	assert.NilError(t, err)
	assert.Assert(t, early.CreationTimestamp.Before(&db.CreationTimestamp), "hers is the older record")

	t.Run("her binding gets nothing of bob's", func(t *testing.T) {
		alice("bind", "early", "--name", "steal")
		_, err := e.st.Bindings().Get(ctx, e.teamA, "steal")
		assert.NilError(t, err)
		trustReconcile(t, e, e.teamA)

		_, err = e.admin.CoreV1().Secrets(e.teamA).Get(ctx, "steal", metav1.GetOptions{})
		assert.Assert(t, apierrors.IsNotFound(err), "no credentials Secret: %v", err)
		for _, req := range e.b.RequestsFor(broker.OpBind) {
			assert.Assert(t, req.InstanceID != adopted, "a bind to bob's instance was sent: %+v", req)
		}
		c := meta.FindStatusCondition(trustConditions(t, e, v1alpha1.KindServiceBinding, e.teamA, "steal"), v1alpha1.ConditionRefused)
		assert.Assert(t, c != nil && c.Reason == engine.ReasonRefusedIDInUse, "%+v", c)
		assert.Assert(t, strings.Contains(c.Message, `instance "db" in namespace "`+e.teamB+`" adopted it first`), c.Message)
	})

	t.Run("deleting her instance deprovisions nothing of bob's", func(t *testing.T) {
		alice("unbind", "steal", "--yes")
		alice("deprovision", "early", "--yes")
		trustReconcile(t, e, e.teamA)
		trustReconcile(t, e, e.teamA)
		for _, req := range append(e.b.RequestsFor(broker.OpDeprovision), e.b.RequestsFor(broker.OpUpdate)...) {
			assert.Assert(t, req.InstanceID != adopted, "a request changing bob's instance was sent: %+v", req)
		}
		_, held := e.b.Instance(adopted)
		assert.Assert(t, held, "bob's instance is still at the broker")
	})

	t.Run("bob's instance is still his", func(t *testing.T) {
		r := trustBob(t, e, "bind", "db", "--name", "app")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamB)
		b, err := e.st.Bindings().Get(ctx, e.teamB, "app")
		assert.NilError(t, err)
		assert.Assert(t, b.Status.Bound != nil, "%+v", b.Status.Conditions)
		r = trustBob(t, e, "unbind", "app", "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		r = trustBob(t, e, "deprovision", "db", "--yes")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)
		trustReconcile(t, e, e.teamB)
		recAssertGone(t, e.st, e.teamB, "db")
		_, held := e.b.Instance(adopted)
		assert.Assert(t, !held, "bob's own deletion deprovisions it")
	})
}
