package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// TestEventsScope_AForbiddenEventInOneNamespaceLeavesTheOthersEvents: namespace gone is
// being deleted, so the API server forbids every Event written there; one "reconcile -A"
// run deprovisions its instance first, its Events refused, and then, seconds later,
// finishes a provision in namespace other, whose Events are still recorded. (An events
// quota a tenant filled is refused the same way where a cluster enforces one; the quota
// system of Kubernetes itself ignores Events.)
func TestEventsScope_AForbiddenEventInOneNamespaceLeavesTheOthersEvents(t *testing.T) {
	serial(t, reconcileEveryNamespace)
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	gone, _, _ := instSetup(t)
	recProvision(t, gone, "db")
	other := instSetupCatalog(t, nil)
	// The other namespace's provision succeeds only at its fourth attempt, the run's
	// third, after backoffs: well after the deprovision.
	_, err = other.b.InjectFault(broker.Fault{Op: broker.OpProvision, Action: broker.ActionRespond, Status: 500, Description: "not yet", Times: 3})
	assert.NilError(t, err)
	r := instCatalog(t, other.ns, "provision", "db", "--class", "postgresql", "--plan", "hobby")
	assert.Assert(t, is.Contains(r.Stderr, "not yet"), r.Stderr)
	assert.NilError(t, admin.CoreV1().Namespaces().Delete(ctx, gone, metav1.DeleteOptions{}))
	instWaitFor(t, "the record to be deleted with its namespace", 30*time.Second, func() bool {
		cm, err := admin.CoreV1().ConfigMaps(gone).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceInstance, "db"), metav1.GetOptions{})
		return err == nil && cm.DeletionTimestamp != nil
	})

	sum, r := recRun(t, other.ns, instReconcileEnv, "-A", "--interval", "200ms", "--max-duration", "60s")
	// Other tests' records of other namespaces may fail the run: these two may not.
	assert.Assert(t, r.ExitCode == 0 || r.ExitCode == 1, r.Stderr)
	for _, ns := range []string{gone, other.ns} {
		it, ok := recItem(sum, ns, "db")
		assert.Assert(t, ok, "no line for %s/db: %+v", ns, sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, "%s/db: %+v", ns, it)
	}

	list, err := admin.EventsV1().Events(other.ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=catalog-instance.db"})
	assert.NilError(t, err)
	var reasons []string
	for _, ev := range list.Items {
		if ev.ReportingController == "kubectl-catalog" && ev.ReportingInstance != "cli" {
			reasons = append(reasons, ev.Reason)
		}
	}
	assert.Check(t, is.Contains(reasons, "ProvisionSucceeded"),
		"an Event forbidden in namespace %s stopped reconcile's Events in namespace %s", gone, other.ns)
}
