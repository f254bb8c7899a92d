package e2e

import (
	"context"
	"sync/atomic"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// instOMCase is one row of the spec's orphan-mitigation and polling tables.
type instOMCase struct {
	name string
	// plan is the demo plan of postgresql: hobby (sync) or standard (async).
	plan    string
	catalog func(t *testing.T, c *broker.Catalog)
	// deprovision: the faults strike the deprovision of a provisioned instance.
	deprovision bool
	// update: the faults strike an update (of storage_gb) of a provisioned instance.
	update bool
	faults []broker.Fault
	// wait runs the faulted command with --wait.
	wait bool
	// env is extra environment of the faulted command.
	env []string

	// After the faulted command: exit code, phase, and "Status/Reason" of the Ready and
	// OrphanMitigation conditions ("" for absent), the retry reason ("" for none).
	exit        int
	phase       v1alpha1.Phase
	ready, om   string
	retryReason string

	// mitigation: a DELETE without originating identity reached the broker (provision
	// rows; false means no DELETE at all). minDeletes: the deprovision rows' DELETEs.
	mitigation bool
	minDeletes int
	// final is the state the engine's step (reconcile) leaves the record in.
	final engine.State
}

func instFault(op broker.Op, when broker.When, action broker.Action, status int) broker.Fault {
	return broker.Fault{Op: op, When: when, Action: action, Status: status}
}

var instTrue, instFalse = true, false

func instOMCases() []instOMCase {
	cases := instOMProvisionCases()
	cases = append(cases, instOMUpdateCases()...)
	return append(cases, instOMDeprovisionCases()...)
}

// instRespond is a fault that answers op with status and error code.
func instRespond(op broker.Op, when broker.When, status int, code string) []broker.Fault {
	f := instFault(op, when, broker.ActionRespond, status)
	f.Error, f.Description = code, "injected by the e2e test"
	return []broker.Fault{f}
}

func instOMProvisionCases() []instOMCase {
	const (
		p, lo  = broker.OpProvision, broker.OpLastOperation
		before = broker.Before
		after  = broker.After
	)
	omDone := "False/" + engine.ReasonOrphanMitigationSucceeded
	retryProvision := "False/" + engine.ReasonProvisionCallFailed
	return []instOMCase{
		// Provision, synchronous plan.
		{name: "provision 201 malformed body: mitigate", plan: "hobby", faults: []broker.Fault{instFault(p, after, broker.ActionMalformed, 0)},
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, om: omDone, retryReason: engine.ReasonProvisionCallFailed,
			mitigation: true, final: engine.StateSettled},
		{name: "provision 200 malformed body: failure without mitigation", plan: "hobby", faults: []broker.Fault{instFault(p, before, broker.ActionMalformed, 200)},
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, retryReason: engine.ReasonProvisionCallFailed,
			final: engine.StateSettled},
		{name: "provision other 2xx (204): mitigate", plan: "hobby", faults: instRespond(p, after, 204, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, om: omDone, retryReason: engine.ReasonProvisionCallFailed,
			mitigation: true, final: engine.StateSettled},
		{name: "provision 408: retry without mitigation", plan: "hobby", faults: instRespond(p, before, 408, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, retryReason: engine.ReasonProvisionCallFailed,
			final: engine.StateSettled},
		{name: "provision 403: retry without mitigation", plan: "hobby", faults: instRespond(p, before, 403, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, retryReason: engine.ReasonProvisionCallFailed,
			final: engine.StateSettled},
		{name: "provision 422 ConcurrencyError: retry without mitigation", plan: "hobby", faults: instRespond(p, before, 422, "ConcurrencyError"),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonProvisionBlockedByConcurrentOperation,
			retryReason: engine.ReasonProvisionBlockedByConcurrentOperation, final: engine.StateSettled},
		{name: "provision 422 AsyncRequired: retry without mitigation", plan: "hobby", faults: instRespond(p, before, 422, "AsyncRequired"),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, retryReason: engine.ReasonProvisionCallFailed,
			final: engine.StateSettled},
		{name: "provision 400: rejected, nothing to mitigate", plan: "hobby", faults: instRespond(p, before, 400, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonProvisionRejected,
			final: engine.StateNeedsUser},
		{name: "provision 409: rejected, nothing to mitigate", plan: "hobby", faults: instRespond(p, before, 409, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonProvisionRejected,
			final: engine.StateNeedsUser},
		{name: "provision 500 before acting: mitigate", plan: "hobby", faults: instRespond(p, before, 500, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, om: omDone, retryReason: engine.ReasonProvisionCallFailed,
			mitigation: true, final: engine.StateSettled},
		{name: "provision 503 after acting: mitigate", plan: "hobby", faults: instRespond(p, after, 503, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, om: omDone, retryReason: engine.ReasonProvisionCallFailed,
			mitigation: true, final: engine.StateSettled},
		// No answer: the broker may still be working, so the identical request is sent
		// again (once the grace for the broker's work has passed, 3s here) instead of a
		// DELETE.
		{name: "provision client timeout (hang): sent again, not mitigated", plan: "hobby", faults: []broker.Fault{instFault(p, after, broker.ActionHang, 0)},
			env:  []string{cmdutil.TestBrokerTimeoutEnv + "=2s", cmdutil.TestMitigationGraceEnv + "=3s"},
			exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, retryReason: engine.ReasonProvisionCallFailed,
			final: engine.StateSettled},
		{name: "provision connection closed: sent again, not mitigated", plan: "hobby", faults: []broker.Fault{instFault(p, after, broker.ActionClose, 0)},
			env: []string{cmdutil.TestMitigationGraceEnv + "=3s"}, exit: 1, phase: v1alpha1.PhaseFailed, ready: retryProvision, retryReason: engine.ReasonProvisionCallFailed,
			final: engine.StateSettled},
		// Provision, asynchronous plan.
		{name: "provision 202 malformed body: mitigate", plan: "standard", faults: []broker.Fault{instFault(p, after, broker.ActionMalformed, 0)},
			wait: true, exit: 0, phase: v1alpha1.PhaseReady, ready: "True/" + engine.ReasonProvisioned,
			mitigation: true, final: engine.StateSettled},
		{name: "last_operation failed: mitigate", plan: "standard",
			faults: []broker.Fault{{Op: p, Action: broker.ActionFailOperation, Description: "out of capacity"}},
			wait:   true, exit: 0, phase: v1alpha1.PhaseReady, ready: "True/" + engine.ReasonProvisioned,
			mitigation: true, final: engine.StateSettled},
		{name: "maximum_polling_duration expired: mitigate", plan: "standard",
			catalog: func(t *testing.T, c *broker.Catalog) {
				instSetMaxPolling(t, c, broker.DemoPostgresStandardPlanID, 2)
			},
			faults: []broker.Fault{{Op: p, Action: broker.ActionStickOperation}},
			wait:   true, exit: 0, phase: v1alpha1.PhaseReady, ready: "True/" + engine.ReasonProvisioned,
			mitigation: true, final: engine.StateSettled},
		{name: "410 while polling a provision: keep polling", plan: "standard",
			faults: []broker.Fault{{Op: lo, Action: broker.ActionGone, Times: 2}},
			wait:   true, exit: 0, phase: v1alpha1.PhaseReady, ready: "True/" + engine.ReasonProvisioned,
			final: engine.StateSettled},
	}
}

func instOMUpdateCases() []instOMCase {
	const (
		u      = broker.OpUpdate
		before = broker.Before
		after  = broker.After
	)
	return []instOMCase{
		// Update: a failed update never triggers orphan mitigation and never loses what
		// the broker holds.
		{name: "update 500: retried without mitigation", plan: "hobby", update: true, faults: instRespond(u, before, 500, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonUpdateCallFailed,
			retryReason: engine.ReasonUpdateCallFailed, final: engine.StateSettled},
		{name: "update other 2xx (204): retried without mitigation", plan: "hobby", update: true, faults: instRespond(u, after, 204, ""),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonUpdateCallFailed,
			retryReason: engine.ReasonUpdateCallFailed, final: engine.StateSettled},
		{name: "update client timeout (hang): retried without mitigation", plan: "hobby", update: true,
			faults: []broker.Fault{instFault(u, after, broker.ActionHang, 0)}, env: []string{cmdutil.TestBrokerTimeoutEnv + "=2s", cmdutil.TestMitigationGraceEnv + "=3s"},
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonUpdateCallFailed,
			retryReason: engine.ReasonUpdateCallFailed, final: engine.StateSettled},
		{name: "update 422 ConcurrencyError: retried", plan: "hobby", update: true, faults: instRespond(u, before, 422, "ConcurrencyError"),
			exit: 1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonUpdateBlockedByConcurrentOperation,
			retryReason: engine.ReasonUpdateBlockedByConcurrentOperation, final: engine.StateSettled},
		{name: "update 400: rejected until the spec changes, the instance stays Ready as the broker holds it", plan: "hobby", update: true, faults: instRespond(u, before, 400, ""),
			exit: 1, phase: v1alpha1.PhaseReady, ready: "True/" + engine.ReasonProvisioned, final: engine.StateSettled},
		{name: "update last_operation failed: retried, what the broker holds is kept", plan: "standard", update: true,
			faults: []broker.Fault{{Op: u, Action: broker.ActionFailOperation, Description: "resize refused", InstanceUsable: &instTrue}},
			wait:   true, exit: 0, phase: v1alpha1.PhaseReady, ready: "True/" + engine.ReasonUpdated, final: engine.StateSettled},
	}
}

func instOMDeprovisionCases() []instOMCase {
	const (
		d, lo  = broker.OpDeprovision, broker.OpLastOperation
		before = broker.Before
		after  = broker.After
	)
	return []instOMCase{
		// Deprovision.
		{name: "deprovision 410: done", plan: "hobby", deprovision: true,
			faults: []broker.Fault{instFault(d, before, broker.ActionDropState, 0)},
			exit:   0, minDeletes: 1, final: engine.StateDeleted},
		{name: "deprovision 500 then recovery: retried, record kept meanwhile", plan: "hobby", deprovision: true,
			faults: []broker.Fault{{Op: d, Action: broker.ActionRespond, Status: 500, Times: 2}},
			exit:   1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonDeprovisionCallFailed,
			retryReason: engine.ReasonDeprovisionCallFailed, minDeletes: 3, final: engine.StateDeleted},
		{name: "deprovision other 2xx (204) after acting: retried, then 410", plan: "hobby", deprovision: true,
			faults: instRespond(d, after, 204, ""),
			exit:   1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonDeprovisionCallFailed,
			retryReason: engine.ReasonDeprovisionCallFailed, minDeletes: 2, final: engine.StateDeleted},
		{name: "deprovision 422 ConcurrencyError: retried", plan: "hobby", deprovision: true,
			faults: instRespond(d, before, 422, "ConcurrencyError"),
			exit:   1, phase: v1alpha1.PhaseFailed, ready: "False/" + engine.ReasonDeprovisionBlockedByConcurrentOperation,
			retryReason: engine.ReasonDeprovisionBlockedByConcurrentOperation, minDeletes: 2, final: engine.StateDeleted},
		{name: "410 while polling a deprovision: done", plan: "standard", deprovision: true,
			faults: []broker.Fault{{Op: lo, Action: broker.ActionGone}},
			wait:   true, exit: 0, minDeletes: 1, final: engine.StateDeleted},
		{name: "deprovision last_operation failed: retried", plan: "standard", deprovision: true,
			faults: []broker.Fault{{Op: d, Action: broker.ActionFailOperation, Description: "volume busy", InstanceUsable: &instTrue}},
			wait:   true, exit: 0, minDeletes: 2, final: engine.StateDeleted},
	}
}

// TestInstance_OrphanMitigationAndPollingTable drives one record per row of the spec's
// orphan-mitigation and polling tables through the CLI, with the test broker's faults,
// then finishes it with "kubectl catalog reconcile", and checks the record, the
// DELETEs the broker saw and that the broker is left with no orphan.
func TestInstance_OrphanMitigationAndPollingTable(t *testing.T) {
	t.Parallel()
	cases := instOMCases()
	var ran atomic.Int32
	t.Cleanup(func() { t.Logf("%d of %d orphan-mitigation and polling cases ran to the end", ran.Load(), len(cases)) })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var edit func(*broker.Catalog)
			if tc.catalog != nil {
				edit = func(c *broker.Catalog) { tc.catalog(t, c) }
			}
			e := instSetupCatalog(t, edit)
			ctx := context.Background()
			waitArgs := []string{"--wait", "--timeout", "60s", "--interval", "200ms"}
			if tc.deprovision || tc.update {
				r := instCatalog(t, e.ns, append([]string{"provision", "db", "--class", "postgresql", "--plan", tc.plan}, waitArgs...)...)
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
			}
			for _, f := range tc.faults {
				_, err := e.b.InjectFault(f)
				assert.NilError(t, err)
			}
			args := []string{"provision", "db", "--class", "postgresql", "--plan", tc.plan}
			switch {
			case tc.deprovision:
				args = []string{"deprovision", "db", "--yes"}
			case tc.update:
				size := "storage_gb=2"
				if tc.plan == "standard" {
					size = "storage_gb=40"
				}
				args = []string{"update", "db", "-p", size}
			}
			if tc.wait {
				args = append(args, waitArgs...)
			}
			r := instRun(t, e.ns, tc.env, args...)
			assert.Equal(t, r.ExitCode, tc.exit, r.Stderr)

			inst, err := e.st.Instances().Get(ctx, e.ns, "db")
			if tc.exit == 0 && tc.final == engine.StateDeleted {
				assert.Assert(t, store.IsNotFound(err), "the record is gone")
			} else {
				assert.NilError(t, err)
				assert.Equal(t, inst.Status.Phase, tc.phase)
				assert.Equal(t, instConditionReason(inst, v1alpha1.ConditionReady), tc.ready)
				assert.Equal(t, instConditionReason(inst, v1alpha1.ConditionOrphanMitigation), tc.om)
				retry := ""
				if inst.Status.Retry != nil {
					retry = inst.Status.Retry.Reason
					assert.Assert(t, inst.Status.Retry.LastError != "", "the failure is shown")
				}
				assert.Equal(t, retry, tc.retryReason)
			}
			res := instReconcile(t, e.st, e.ns, "db")
			// The faults have all struck.
			assert.Assert(t, is.Len(e.b.Faults(), 0))
			assert.Equal(t, res.State, tc.final, res.Message)
			id := ""
			if inst != nil {
				id = inst.Spec.ExternalID
			} else if ds := e.b.RequestsFor(broker.OpDeprovision); len(ds) > 0 {
				id = ds[0].InstanceID
			}
			all, mitigation := instDeletes(e.b, id)
			switch {
			case tc.deprovision:
				assert.Assert(t, all >= tc.minDeletes, "want at least %d DELETEs, got %d", tc.minDeletes, all)
				assert.Equal(t, mitigation, 0, "a user's deprovision carries the identity")
			case tc.mitigation:
				assert.Assert(t, mitigation >= 1, "orphan mitigation should have sent a DELETE")
			default:
				assert.Equal(t, all, 0, "no DELETE may reach the broker")
			}
			switch {
			case tc.final == engine.StateSettled:
				assert.Equal(t, res.Instance.Status.Phase, v1alpha1.PhaseReady)
				assert.Assert(t, res.Instance.Status.OrphanMitigation == nil)
				assert.Assert(t, !res.Instance.HasPendingWork())
				// After orphan mitigation the instance is provisioned again under a new id.
				instAssertBrokerHolds(t, e.b, res.Instance.CurrentExternalID())
				if tc.mitigation {
					assert.Assert(t, res.Instance.CurrentExternalID() != id, "an id deleted by orphan mitigation is not reused")
				}
			case tc.final == engine.StateNeedsUser && tc.update:
				assert.Equal(t, instConditionReason(res.Instance, v1alpha1.ConditionFailed), "True/"+engine.ReasonUpdateRejected)
				assert.Assert(t, res.Instance.Status.Provisioned != nil, "a rejected update keeps what the broker holds")
				instAssertBrokerHolds(t, e.b, id)
			case tc.final == engine.StateNeedsUser:
				assert.Equal(t, instConditionReason(res.Instance, v1alpha1.ConditionFailed), "True/"+engine.ReasonProvisionRejected)
				instAssertBrokerHolds(t, e.b)
			case tc.final == engine.StateDeleted:
				_, err := e.st.Instances().Get(ctx, e.ns, "db")
				assert.Assert(t, store.IsNotFound(err), "the finalizer is gone, so is the record")
				instAssertBrokerHolds(t, e.b)
			}
			assert.Assert(t, is.Len(e.b.Violations(), 0))
			ran.Add(1)
		})
	}
}
