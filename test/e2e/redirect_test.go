package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// TestDeprovision_RedirectedDelete_KeepsTheRecordUntilTheBrokerConfirms: a broker (or a
// proxy before it) answers the DELETE with a 301 to its own /v2/catalog. Following it
// would turn the DELETE into a GET answered 200, read as "deprovisioned" while the broker
// still holds the instance. The record must stay, show the failure and a retry, and
// reconcile must finish the deletion once the broker answers the DELETE itself.
func TestDeprovision_RedirectedDelete_KeepsTheRecordUntilTheBrokerConfirms(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	ctx := context.Background()
	r := instCatalog(t, e.ns, "provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "60s")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	inst, err := e.st.Instances().Get(ctx, e.ns, "db")
	assert.NilError(t, err)
	id := inst.Spec.ExternalID
	catalogs := len(e.b.RequestsFor(broker.OpCatalog))
	_, err = e.b.InjectFault(broker.Fault{Op: broker.OpDeprovision, Action: broker.ActionRedirect, Times: 1000})
	assert.NilError(t, err)

	r = instRun(t, e.ns, nil, "deprovision", "db", "--yes", "--wait", "--timeout", "8s", "--interval", "200ms")

	assert.Equal(t, r.ExitCode, 124, "the wait runs out: the deletion is not confirmed\n%s", r.Stderr)
	assert.Assert(t, !strings.Contains(r.Stdout+r.Stderr, "deprovisioned"), "%s%s", r.Stdout, r.Stderr)
	inst, err = e.st.Instances().Get(ctx, e.ns, "db")
	assert.NilError(t, err, "the record is kept while the broker holds the instance")
	assert.Assert(t, inst.DeletionTimestamp != nil)
	assert.Assert(t, inst.Status.Retry != nil)
	assert.Equal(t, inst.Status.Retry.Reason, engine.ReasonDeprovisionCallFailed)
	assert.Assert(t, is.Contains(inst.Status.Retry.LastError, "301 Moved Permanently"))
	assert.Assert(t, is.Contains(inst.Status.Retry.LastError, "not followed"))
	assert.Assert(t, !inst.Status.Retry.NextRetryAt.IsZero())
	// The wait may end between two attempts or during one (its DELETE then stays
	// recorded as in flight, for reconcile to settle).
	assert.Assert(t, is.Contains([]string{"False/" + engine.ReasonDeprovisionCallFailed, "False/" + engine.ReasonDeprovisionRequestInFlight},
		instConditionReason(inst, v1alpha1.ConditionReady)))
	instAssertBrokerHolds(t, e.b, id)
	assert.Equal(t, len(e.b.RequestsFor(broker.OpCatalog)), catalogs, "no redirect was followed")
	for _, d := range e.b.RequestsFor(broker.OpDeprovision) {
		assert.Equal(t, d.Status, http.StatusMovedPermanently)
	}

	e.b.ClearFaults()
	res := instReconcile(t, e.st, e.ns, "db")

	assert.Equal(t, res.State, engine.StateDeleted, res.Message)
	instAssertBrokerHolds(t, e.b)
	assert.Assert(t, is.Len(e.b.Violations(), 0))
}

// TestProvision_RedirectedPut_IsMitigatedNotTakenForSuccess: a provision answered with a
// 301 to the catalog is a failure handled like a 5xx: the broker may hold the instance
// (here it provisioned before redirecting, or not at all), so it is deprovisioned
// (orphan mitigation, without the user's identity) and provisioned again.
func TestProvision_RedirectedPut_IsMitigatedNotTakenForSuccess(t *testing.T) {
	t.Parallel()
	for _, when := range []broker.When{broker.Before, broker.After} {
		t.Run("redirected "+string(when)+" the broker acted", func(t *testing.T) {
			t.Parallel()
			e := instSetupCatalog(t, nil)
			catalogs := len(e.b.RequestsFor(broker.OpCatalog))
			_, err := e.b.InjectFault(broker.Fault{Op: broker.OpProvision, When: when, Action: broker.ActionRedirect})
			assert.NilError(t, err)

			r := instRun(t, e.ns, nil, "provision", "db", "--class", "postgresql", "--plan", "hobby",
				"--wait", "--timeout", "60s", "--interval", "200ms")

			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			inst, err := e.st.Instances().Get(context.Background(), e.ns, "db")
			assert.NilError(t, err)
			assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
			assert.Assert(t, inst.Status.OrphanMitigation == nil)
			puts := e.b.RequestsFor(broker.OpProvision)
			assert.Assert(t, is.Len(puts, 2), "the redirected PUT, then the PUT after mitigation")
			assert.Equal(t, puts[0].Status, http.StatusMovedPermanently)
			_, mitigation := instDeletes(e.b, inst.Spec.ExternalID)
			assert.Equal(t, mitigation, 1, "orphan mitigation sent a DELETE")
			dels := e.b.RequestsFor(broker.OpDeprovision)
			assert.Assert(t, dels[0].Time.After(puts[0].Time) && dels[0].Time.Before(puts[1].Time), "mitigated before provisioning again")
			assert.Equal(t, len(e.b.RequestsFor(broker.OpCatalog)), catalogs, "no redirect was followed")
			assert.Assert(t, inst.CurrentExternalID() != inst.Spec.ExternalID, "the provision after mitigation uses a new id")
			instAssertBrokerHolds(t, e.b, inst.CurrentExternalID())
			assert.Assert(t, is.Len(e.b.Violations(), 0))
		})
	}
}
