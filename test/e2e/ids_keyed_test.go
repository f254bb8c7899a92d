package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestIDsKeyed_ANamespaceCreatedAgainCannotUseTheOldOnesIDs has bob provision an
// instance, drop its record without calling the broker (deprovision --abandon: the
// instance stays at the broker), and his namespace deleted and created again under the
// same name. A record of the new namespace whose status names the old instance's id is
// deleted: reconcile, with its ServiceAccount's token, sends nothing under that id (it
// was bound to the old namespace's uid, not to its name), and the old instance stays.
func TestIDsKeyed_ANamespaceCreatedAgainCannotUseTheOldOnesIDs(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	ctx := context.Background()
	r := trustBob(t, e, "provision", "db", "--class", "object-storage", "--plan", "bucket")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	trustReconcile(t, e, e.teamB)
	db, err := e.st.Instances().Get(ctx, e.teamB, "db")
	assert.NilError(t, err)
	assert.Equal(t, db.Status.Phase, v1alpha1.PhaseReady)
	id := db.CurrentExternalID()
	r = trustBob(t, e, "deprovision", "db", "--abandon", "--yes")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)

	oldNS, err := e.admin.CoreV1().Namespaces().Get(ctx, e.teamB, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.NilError(t, e.admin.CoreV1().Namespaces().Delete(ctx, e.teamB, metav1.DeleteOptions{}))
	instWaitFor(t, "bob's namespace to go", 2*time.Minute, func() bool {
		_, err := e.admin.CoreV1().Namespaces().Get(ctx, e.teamB, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	again, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.teamB}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	assert.Assert(t, again.UID != oldNS.UID)
	r = kubectl(t, controlplane.AdminUser, "create", "rolebinding", "kubectl-catalog-user-"+controlplane.BobUser, "--clusterrole", "kubectl-catalog-user",
		"--user", controlplane.BobUser, "-n", e.teamB)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	instWaitFor(t, "bob's role binding to take effect", 30*time.Second, func() bool {
		return kubectl(t, controlplane.BobUser, "auth", "can-i", "create", "configmaps", "-n", e.teamB).ExitCode == 0
	})

	// A record of the new namespace, its status naming the old instance's id.
	r = trustBob(t, e, "provision", "copy", "--class", "object-storage", "--plan", "bucket")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	_, err = store.New(e.admin, nil).Instances().UpdateWithRetry(ctx, e.teamB, "copy", func(i *v1alpha1.ServiceInstance) error {
		i.Status = v1alpha1.ServiceInstanceStatus{Provisioned: &v1alpha1.ProvisionedState{PlanID: db.Spec.PlanID}}
		i.Status.ExternalID, i.Status.ExternalIDs = id, []string{id}
		i.Status.ObservedGeneration, i.Status.Phase = i.Generation, v1alpha1.PhaseReady
		return nil
	})
	assert.NilError(t, err)
	r = trustBob(t, e, "deprovision", "copy", "--yes")
	trustReconcile(t, e, e.teamB)

	assert.Assert(t, !slices.ContainsFunc(e.b.RequestsFor(broker.OpDeprovision), func(q broker.RecordedRequest) bool { return q.InstanceID == id }),
		"the old namespace's instance was deprovisioned")
	_, held := e.b.Instance(id)
	assert.Assert(t, held, "the old namespace's instance is still at the broker")
	// The id is not the copy's: its deletion forgot it (with a visible reason) and
	// finished without calling the broker.
	_, err = store.New(e.admin, nil).Instances().Get(ctx, e.teamB, "copy")
	assert.Assert(t, store.IsNotFound(err), "the copy's deletion finished: %v", err)
	assert.Assert(t, !v1alpha1.IDBoundTo(id, e.teamB, ""), "the id is not bound to the namespace's name")
}
