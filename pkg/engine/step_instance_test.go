package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestStepInstance_SyncProvision_SendsSpecCompliantRequestAndSettles(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, `{"size": 3}`)

	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	calls := f.broker.CallsTo(fake.MethodProvision)
	assert.Assert(t, is.Len(calls, 1))
	req := calls[0].Request.(osb.ProvisionRequest)
	assert.Equal(t, req.InstanceID, instanceOSB)
	assert.Assert(t, req.AcceptsIncomplete)
	assert.Equal(t, req.ServiceID, classID)
	assert.Equal(t, req.PlanID, planSmall)
	assert.DeepEqual(t, req.Context, &osb.KubernetesContext{Platform: "kubernetes", Namespace: ns, ClusterID: "cluster-1", InstanceName: "db"})
	assert.Equal(t, req.OrganizationGUID, "cluster-1")
	assert.Equal(t, req.SpaceGUID, "uid-"+ns)
	assert.Equal(t, string(req.Parameters), `{"size":3}`)
	assert.DeepEqual(t, req.MaintenanceInfo, &osb.MaintenanceInfo{Version: "1.0.0"})
	assert.DeepEqual(t, req.OriginatingIdentity, testUser)
	assert.Assert(t, req.RequestIdentity != "")

	inst := f.get("db")
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Equal(t, inst.Status.Provisioned.PlanID, planSmall)
	assert.Equal(t, inst.Status.Provisioned.MaintenanceInfoVersion, "1.0.0")
	assert.Assert(t, inst.Status.InFlight == nil)
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Reason, ReasonProvisioned)
	_, claimed := store.LeaseOf(inst)
	assert.Assert(t, !claimed, "the claim is released once settled")
	assert.Assert(t, !inst.HasPendingWork())
}

func TestStepInstance_WriteAheadIsStoredBeforeTheBrokerCall(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	var seen *v1alpha1.ServiceInstance
	f.broker.OnProvision(func(ctx context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		seen = f.get("db")
		return &osb.ProvisionResponse{StatusCode: 201}, nil
	})

	f.step("db")

	assert.Assert(t, seen != nil && seen.Status.InFlight != nil, "inFlight must be stored before the call")
	assert.Equal(t, seen.Status.InFlight.Type, v1alpha1.OperationProvision)
	assert.Equal(t, seen.Status.InFlight.InstanceID, instanceOSB)
	lease, ok := store.LeaseOf(seen)
	assert.Assert(t, ok)
	assert.Equal(t, lease.Holder, "test")
	calls := f.broker.CallsTo(fake.MethodProvision)
	assert.Equal(t, calls[0].Request.(osb.ProvisionRequest).RequestIdentity, seen.Status.InFlight.RequestID)
}

func TestStepInstance_ConflictOnWriteAhead_MakesNoBrokerCall(t *testing.T) {
	f := newFixture(t)
	stale := f.create("db", planSmall, "")
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		i.Annotations = map[string]string{"touched": "yes"}
		return nil
	})
	assert.NilError(t, err)

	res, err := f.engine.StepInstance(context.Background(), stale)

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
	assert.Assert(t, f.get("db").Status.InFlight == nil)
}

func TestStepInstance_LiveClaimOfSomeoneElse_MakesNoBrokerCall(t *testing.T) {
	f := newFixture(t)
	inst := f.create("db", planSmall, "")
	_, err := f.st.Instances().Claim(context.Background(), inst, "reconcile@other", time.Minute)
	assert.NilError(t, err)

	res := f.step("db")

	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, res.RequeueAfter > 0)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestStepInstance_InterruptedAfterTheCall_ResendsTheIdenticalRequest(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, `{"a":1}`)
	ctx, cancel := context.WithCancel(context.Background())
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		cancel() // the CLI dies after the broker acted, before the outcome is stored
		return nil, &osb.TransportError{Canceled: true, Err: context.Canceled}
	})
	_, err := f.engine.StepInstance(ctx, f.get("db"))
	assert.ErrorIs(t, err, context.Canceled)
	pending := f.get("db")
	assert.Assert(t, pending.Status.InFlight != nil && !pending.Status.InFlight.Async)
	assert.Assert(t, pending.HasPendingWork())
	assert.Assert(t, pending.Status.OrphanMitigation == nil, "an interruption is not a client timeout: re-send, no mitigation")

	provisionReturns(f, 200, nil)
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	calls := f.broker.CallsTo(fake.MethodProvision)
	assert.Assert(t, is.Len(calls, 2))
	first, second := calls[0].Request.(osb.ProvisionRequest), calls[1].Request.(osb.ProvisionRequest)
	assert.DeepEqual(t, first, second)
}

func TestStepInstance_ProvisionOutcomes_FollowTheOrphanMitigationTable(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		err        error
		wantState  State
		wantOM     bool
		wantReason string
		wantRetry  bool
	}{
		{name: "200 ok", status: 200, wantState: StateSettled, wantReason: ReasonProvisioned},
		{name: "201 created", status: 201, wantState: StateSettled, wantReason: ReasonProvisioned},
		{name: "202 accepted", status: 202, wantState: StateWaiting, wantReason: ReasonProvisionInProgress},
		{name: "other 2xx", status: 204, wantState: StateWaiting, wantOM: true, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "malformed 201", err: fake.Malformed(201), wantState: StateWaiting, wantOM: true, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "malformed 202", err: fake.Malformed(202), wantState: StateWaiting, wantOM: true, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "malformed 200", err: fake.Malformed(200), wantState: StateWaiting, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "500", err: fake.HTTPError("PUT", 500, "", "db down"), wantState: StateWaiting, wantOM: true, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "503", err: fake.HTTPError("PUT", 503, "", ""), wantState: StateWaiting, wantOM: true, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "client timeout", err: fake.Timeout(), wantState: StateWaiting, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "504", err: fake.HTTPError("PUT", 504, "", ""), wantState: StateWaiting, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "408", err: fake.HTTPError("PUT", 408, "", ""), wantState: StateWaiting, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "401", err: fake.HTTPError("PUT", 401, "", "bad credentials"), wantState: StateWaiting, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "422 ConcurrencyError", err: fake.HTTPError("PUT", 422, "ConcurrencyError", ""), wantState: StateWaiting, wantReason: ReasonProvisionBlockedByConcurrentOperation, wantRetry: true},
		{name: "422 AsyncRequired", err: fake.HTTPError("PUT", 422, "AsyncRequired", ""), wantState: StateWaiting, wantReason: ReasonProvisionCallFailed, wantRetry: true},
		{name: "422 MaintenanceInfoConflict", err: fake.HTTPError("PUT", 422, "MaintenanceInfoConflict", ""), wantState: StateWaiting, wantReason: ReasonProvisionMaintenanceInfoConflict, wantRetry: true},
		{name: "400", err: fake.HTTPError("PUT", 400, "", "bad parameter"), wantState: StateNeedsUser, wantReason: ReasonProvisionRejected},
		{name: "409", err: fake.HTTPError("PUT", 409, "", ""), wantState: StateNeedsUser, wantReason: ReasonProvisionRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.create("db", planSmall, "")
			provisionReturns(f, tc.status, tc.err)

			res := f.step("db")

			inst := f.get("db")
			assert.Equal(t, res.State, tc.wantState, res.Message)
			assert.Equal(t, inst.Status.OrphanMitigation != nil, tc.wantOM)
			assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Reason, tc.wantReason)
			assert.Equal(t, inst.Status.Retry != nil, tc.wantRetry)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0), "nothing is deleted within the step of the failed call")
			if tc.wantState == StateNeedsUser {
				assert.Assert(t, !inst.HasPendingWork(), "a terminal failure is settled until the spec changes")
				assert.Equal(t, condition(inst, v1alpha1.ConditionFailed).Status, metav1.ConditionTrue)
				f.advance(time.Hour)
				f.step("db")
				assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 1), "not retried")
			}
		})
	}
}

func TestStepInstance_OrphanMitigation_DeletesWithoutIdentityThenProvisionsAgain(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	provisionReturns(f, 0, fake.HTTPError("PUT", 500, "", "oops"))
	f.step("db")
	assert.Equal(t, condition(f.get("db"), v1alpha1.ConditionOrphanMitigation).Reason, ReasonOrphanMitigationInProgress)

	res := f.step("db") // mitigation is due at once

	dep := f.broker.CallsTo(fake.MethodDeprovision)
	assert.Assert(t, is.Len(dep, 1))
	req := dep[0].Request.(osb.DeprovisionRequest)
	assert.Equal(t, req.InstanceID, instanceOSB)
	assert.Equal(t, req.PlanID, planSmall)
	assert.Assert(t, req.AcceptsIncomplete)
	assert.Assert(t, req.OmitOriginatingIdentity && req.OriginatingIdentity == nil, "orphan mitigation is not user-initiated")
	inst := f.get("db")
	assert.Assert(t, inst.Status.OrphanMitigation == nil)
	assert.Equal(t, inst.Status.Retry.Reason, ReasonProvisionCallFailed)
	assert.Equal(t, res.RequeueAfter, 2*time.Second)
	assert.Assert(t, inst.DeletionTimestamp == nil)

	f.step("db")
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 1), "the retry waits for its backoff")

	provisionReturns(f, 201, nil)
	f.advance(2 * time.Second)
	res = f.step("db")
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 2))
	assert.Equal(t, f.get("db").Status.Provisioned.PlanID, planSmall)
}

func TestStepInstance_OrphanMitigationAnswered410_CountsAsDone(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	provisionReturns(f, 0, fake.HTTPError("PUT", 500, "", ""))
	f.step("db")
	f.broker.DeprovisionReturns(nil, fake.Gone())

	f.step("db")

	inst := f.get("db")
	assert.Assert(t, inst.Status.OrphanMitigation == nil)
	assert.Equal(t, condition(inst, v1alpha1.ConditionOrphanMitigation).Reason, ReasonOrphanMitigationSucceeded)
}

func TestStepInstance_AsyncProvisionPolls_RoundTripKeyAndHonourRetryAfter(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	f.broker.ProvisionReturns(&osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op key/1 +%", DashboardURL: "https://dash/1"}, nil)
	f.broker.SetPollSequence("op key/1 +%",
		fake.PollStep{Response: &osb.LastOperationResponse{State: osb.StateInProgress, Description: "creating", RetryAfter: 7 * time.Second}},
		fake.PollError(fake.HTTPError("GET", 410, "", "")), // invalid while creating: keep polling
		fake.Succeeded())

	res := f.step("db")
	assert.Equal(t, res.State, StateWaiting)
	assert.Equal(t, res.RequeueAfter, 2*time.Second)
	inst := f.get("db")
	assert.Assert(t, inst.Status.InFlight.Async)
	assert.Equal(t, inst.Status.InFlight.OperationKey, "op key/1 +%")
	assert.Assert(t, inst.Status.InFlight.PollDeadline.Time.Equal(f.now.Add(10*time.Minute)), "the plan's maximum_polling_duration")

	f.step("db")
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodLastOperation), 0), "not polled before it is due")

	f.advance(2 * time.Second)
	res = f.step("db")
	assert.Equal(t, res.RequeueAfter, 7*time.Second, "Retry-After")
	assert.Equal(t, res.Message, "creating")

	f.advance(7 * time.Second)
	res = f.step("db")
	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, f.get("db").Status.InFlight != nil, "410 while provisioning is not success")

	f.advance(time.Minute)
	res = f.step("db")
	assert.Equal(t, res.State, StateSettled, res.Message)
	polls := f.broker.CallsTo(fake.MethodLastOperation)
	assert.Assert(t, is.Len(polls, 3))
	for _, p := range polls {
		r := p.Request.(osb.LastOperationRequest)
		assert.Equal(t, r.OperationKey, "op key/1 +%")
		assert.Equal(t, r.PlanID, planSmall)
		assert.Equal(t, r.ServiceID, classID)
	}
	assert.Equal(t, f.get("db").Status.Provisioned.DashboardURL, "https://dash/1", "the dashboard URL of the 202 is kept")
}

func TestStepInstance_AsyncProvisionFailsOrExpires_StartsOrphanMitigation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		step   fake.PollStep
		wait   time.Duration
		reason string
	}{
		{name: "failed", step: fake.Failed("no capacity"), wait: 2 * time.Second, reason: osb.ReasonOperationFailed},
		{name: "past maximum_polling_duration", step: fake.InProgress("still going"), wait: 11 * time.Minute, reason: osb.ReasonPollingExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.create("db", planSmall, "")
			provisionReturns(f, 202, nil)
			f.broker.SetPollSequence("op-1", tc.step)
			f.step("db")
			f.advance(tc.wait)

			f.step("db")

			inst := f.get("db")
			assert.Assert(t, inst.Status.OrphanMitigation != nil)
			assert.Equal(t, inst.Status.OrphanMitigation.Reason, tc.reason)
			assert.Equal(t, inst.Status.Retry.Reason, ReasonProvisionFailed)
			assert.Assert(t, inst.Status.InFlight == nil)
		})
	}
}

func TestDriveInstance_AsyncProvision_RunsToReady(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Now = time.Now
	f.engine.cfg.PollInterval = 10 * time.Millisecond
	f.create("db", planSmall, "")
	provisionReturns(f, 202, nil)
	f.broker.SetPollSequence("op-1", fake.InProgress("one"), fake.InProgress("two"), fake.Succeeded())
	var seen []string
	res, err := f.engine.DriveInstance(context.Background(), ns, "db", DriveOptions{Tick: 5 * time.Millisecond, Progress: func(r Result) { seen = append(seen, r.Message) }})
	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled)
	assert.Assert(t, is.Contains(seen, "two"))
}

func TestStepInstance_ConcurrencyErrorOnDeprovision_WaitsWithoutMitigation(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	f.broker.DeprovisionReturns(nil, fake.HTTPError("DELETE", 422, "ConcurrencyError", "busy"))

	res := f.step("db")

	inst := f.get("db")
	assert.Equal(t, res.State, StateWaiting)
	assert.Equal(t, inst.Status.Retry.Reason, ReasonDeprovisionBlockedByConcurrentOperation)
	assert.Assert(t, inst.Status.OrphanMitigation == nil)
	assert.Assert(t, inst.Status.Provisioned != nil)
}

func TestStepInstance_Deprovision_RemovesFinalizerOnlyAfterBrokerConfirms(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{name: "200", err: nil},
		{name: "410 Gone", err: fake.Gone()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, "")
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 200}, tc.err)

			res := f.step("db")

			assert.Equal(t, res.State, StateDeleted)
			_, err := f.st.Instances().Get(context.Background(), ns, "db")
			assert.Assert(t, store.IsNotFound(err))
			req := f.broker.CallsTo(fake.MethodDeprovision)[0].Request.(osb.DeprovisionRequest)
			assert.DeepEqual(t, req.OriginatingIdentity, testUser)
		})
	}
}

func TestStepInstance_FailedDeprovision_KeepsRecordAndBacksOffVisibly(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	f.broker.DeprovisionReturns(nil, fake.HTTPError("DELETE", 500, "", "disk busy"))

	res := f.step("db")
	inst := f.get("db")
	assert.Equal(t, res.RequeueAfter, 2*time.Second)
	assert.Assert(t, is.Contains(inst.Finalizers, store.Finalizer))
	assert.Equal(t, inst.Status.Retry.Attempts, int32(1))
	assert.Equal(t, inst.Status.Retry.Reason, ReasonDeprovisionCallFailed)
	assert.Assert(t, is.Contains(inst.Status.Retry.LastError, "disk busy"))
	assert.Assert(t, inst.Status.Retry.NextRetryAt.Time.Equal(f.now.Add(2*time.Second)))
	assert.Assert(t, is.Contains(condition(inst, v1alpha1.ConditionReady).Message, "--abandon"))

	f.advance(2 * time.Second)
	res = f.step("db")
	inst = f.get("db")
	assert.Equal(t, inst.Status.Retry.Attempts, int32(2))
	assert.Equal(t, res.RequeueAfter, 4*time.Second, "exponential backoff")

	f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 202, Async: true, Operation: "del-1"}, nil)
	f.broker.SetPollSequence("del-1", fake.PollError(fake.Gone()))
	f.advance(4 * time.Second)
	f.step("db")
	f.advance(2 * time.Second)
	res = f.step("db")
	assert.Equal(t, res.State, StateDeleted, "410 while polling a deprovision is success")
}

func TestStepInstance_DeprovisionWithBindings_MarksThemAndWaits(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	_, err := f.st.Bindings().Create(context.Background(), &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-app"},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: "db", ExternalID: "b-1", SecretName: "db-app"},
	})
	assert.NilError(t, err)
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))

	res := f.step("db")

	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
	inst := f.get("db")
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Reason, ReasonDeprovisionBlockedByExistingBindings)
	b, err := f.st.Bindings().Get(context.Background(), ns, "db-app")
	assert.NilError(t, err)
	assert.Assert(t, b.DeletionTimestamp != nil, "the binding is marked for deletion")
}

func TestStepInstance_DeletionOfNeverProvisionedInstance_NeedsNoBroker(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	provisionReturns(f, 0, fake.HTTPError("PUT", 400, "", "bad"))
	f.step("db")
	f.broker.ResetCalls()
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))

	res := f.step("db")

	assert.Equal(t, res.State, StateDeleted)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestStepInstance_DeletionDuringUncertainProvision_DeprovisionsInsteadOfResending(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	ctx, cancel := context.WithCancel(context.Background())
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		cancel()
		return nil, &osb.TransportError{Canceled: true, Err: context.Canceled}
	})
	_, _ = f.engine.StepInstance(ctx, f.get("db"))
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	f.broker.DeprovisionReturns(nil, fake.Gone())
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)

	res := f.step("db")

	assert.Equal(t, res.State, StateDeleted)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 1))
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 1))
}

func TestStepInstance_DeprovisionWithBindings_UnbindsFirst(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)
	assert.Equal(t, f.stepBinding("db").State, StateSettled)
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))

	res := f.step("db")
	assert.Equal(t, res.State, StateWaiting)
	assert.Equal(t, condition(f.get("db"), v1alpha1.ConditionReady).Reason, ReasonDeprovisionBlockedByExistingBindings)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0))
	assert.Assert(t, f.getBinding("db").DeletionTimestamp != nil)

	assert.Equal(t, f.driveBinding("db").State, StateDeleted)
	res = f.step("db")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	methods := f.broker.MethodNames()
	assert.Assert(t, indexOf(methods, fake.MethodUnbind) < indexOf(methods, fake.MethodDeprovision), "%v", methods)
}

// A rebind asked for ("update --rebind") on an instance the broker never provisioned,
// whose provision it then refused for good, ends with the refusal and says why, instead
// of staying asked for, unanswered, until the spec changes (found by the simulation:
// -sim.aslisted=1 seed 198).
func TestStepInstance_ProvisionRefusedForGood_DropsTheRebindItWasToFollow(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	ctx := context.Background()
	_, err := f.st.Instances().UpdateWithRetry(ctx, ns, "db", func(x *v1alpha1.ServiceInstance) error {
		x.Status.Rebind = &v1alpha1.RebindStatus{Generation: x.Generation, Reason: RebindOnce, AfterUpdate: true, RequestedAt: metav1.NewTime(f.now)}
		return nil
	})
	assert.NilError(t, err)
	provisionReturns(f, 0, fake.HTTPError("PUT", 400, "", "bad parameter"))

	res := f.step("db")

	assert.Equal(t, res.State, StateNeedsUser, res.Message)
	inst := f.get("db")
	assert.Assert(t, inst.Status.Rebind == nil, "%+v", inst.Status.Rebind)
	c := condition(inst, ConditionBindingsRebound)
	assert.Equal(t, c.Status, metav1.ConditionFalse)
	assert.Equal(t, c.Reason, ReasonRebindSkipped)
	assert.Assert(t, is.Contains(c.Message, "provision failed"))
	assert.Assert(t, !inst.HasPendingWork())
}
