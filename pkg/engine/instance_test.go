package engine

import (
	"context"
	"encoding/json"
	"strings"
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
	f.advance(3 * time.Minute) // the dead CLI's claim has expired
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
		{name: "client timeout", err: fake.Timeout(), wantState: StateWaiting, wantOM: true, wantReason: ReasonProvisionCallFailed, wantRetry: true},
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
	provisionReturns(f, 0, fake.Timeout())
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
	f.advance(3 * time.Minute)

	res := f.step("db")

	assert.Equal(t, res.State, StateDeleted)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 1))
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 1))
}

func setSpec(t *testing.T, f *fixture, name string, mutate func(*v1alpha1.ServiceInstance)) {
	t.Helper()
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, name, func(i *v1alpha1.ServiceInstance) error {
		mutate(i)
		return nil
	})
	assert.NilError(t, err)
}

func TestStepInstance_Update_SendsOnlyChangesAndPreviousValues(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1,"b":"x"}`)
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) {
		i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large"
		i.Spec.Parameters.Raw = []byte(`{"a":1,"b":"y","c":true}`)
	})
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "up-1"}, nil)
	f.broker.SetPollSequence("up-1", fake.Succeeded())

	f.step("db")
	f.advance(2 * time.Second)
	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	req := f.broker.CallsTo(fake.MethodUpdate)[0].Request.(osb.UpdateRequest)
	assert.Equal(t, req.PlanID, planLarge)
	assert.Equal(t, string(req.Parameters), `{"b":"y","c":true}`)
	assert.DeepEqual(t, req.PreviousValues, &osb.PreviousValues{PlanID: planSmall, MaintenanceInfo: &osb.MaintenanceInfo{Version: "1.0.0"}})
	assert.Assert(t, req.AcceptsIncomplete)
	poll := f.broker.CallsTo(fake.MethodLastOperation)[0].Request.(osb.LastOperationRequest)
	assert.Equal(t, poll.PlanID, planSmall, "poll with the plan before the update")
	inst := f.get("db")
	assert.Equal(t, inst.Status.Provisioned.PlanID, planLarge)
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Reason, ReasonUpdated)
}

func TestStepInstance_FailedUpdate_KeepsProvisionedAndHonoursBrokerFlags(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name       string
		err        error
		wantState  State
		wantReason string
	}{
		{name: "retriable", err: fake.HTTPError("PATCH", 500, "", "boom"), wantState: StateWaiting, wantReason: ReasonUpdateCallFailed},
		{name: "update_repeatable false", err: &osb.HTTPStatusError{StatusCode: 422, InstanceUsable: &no, UpdateRepeatable: &no}, wantState: StateNeedsUser, wantReason: ReasonUpdateNotRepeatable},
		{name: "ConcurrencyError", err: fake.HTTPError("PATCH", 422, "ConcurrencyError", ""), wantState: StateWaiting, wantReason: ReasonUpdateBlockedByConcurrentOperation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1}`)
			before := f.get("db").Status.Provisioned.DeepCopy()
			setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2}`) })
			f.broker.UpdateReturns(nil, tc.err)

			res := f.step("db")

			inst := f.get("db")
			assert.Equal(t, res.State, tc.wantState, res.Message)
			assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Reason, tc.wantReason)
			assert.DeepEqual(t, inst.Status.Provisioned, before)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0), "a failed update never triggers orphan mitigation")
			if tc.name == "update_repeatable false" {
				assert.Equal(t, *inst.Status.Usable, false)
				assert.Equal(t, *inst.Status.UpdateRepeatable, false)
				f.advance(time.Hour)
				f.step("db")
				assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUpdate), 1), "the same update is not repeated")
			}
		})
	}
}

func TestStepInstance_AsyncUpdateFailed_RecordsInstanceUsable(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2}`) })
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "up"}, nil)
	no := false
	f.broker.SetPollSequence("up", fake.PollStep{Response: &osb.LastOperationResponse{State: osb.StateFailed, Description: "disk full", InstanceUsable: &no}})
	f.step("db")
	f.advance(2 * time.Second)

	f.step("db")

	inst := f.get("db")
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Reason, ReasonUpdateFailed)
	assert.Equal(t, *inst.Status.Usable, false)
	assert.Assert(t, is.Contains(inst.Status.Retry.LastError, "disk full"))
	assert.Equal(t, inst.Status.Provisioned.PlanID, planSmall)
}

func TestStepInstance_PlanChangeOnNonUpdateablePlan_IsRefusedWithoutCall(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planFixed, "")
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID = planLarge })

	res := f.step("db")

	assert.Equal(t, res.State, StateNeedsUser)
	assert.Equal(t, condition(f.get("db"), v1alpha1.ConditionUpdateFailed).Reason, ReasonUpdateRejected)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestStepInstance_AsyncRequired_IsRetriedWithAcceptsIncomplete(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	provisionReturns(f, 0, fake.HTTPError("PUT", 422, "AsyncRequired", ""))
	f.step("db")
	provisionReturns(f, 202, nil)
	f.advance(2 * time.Second)

	res := f.step("db")

	assert.Equal(t, res.State, StateWaiting)
	for _, c := range f.broker.CallsTo(fake.MethodProvision) {
		assert.Assert(t, c.Request.(osb.ProvisionRequest).AcceptsIncomplete)
	}
	assert.Assert(t, f.get("db").Status.InFlight.Async)
}

func TestStepInstance_MaintenanceInfoConflict_RefreshesCatalogAndRetriesAtOnce(t *testing.T) {
	f := newFixture(t)
	refreshed := 0
	f.engine.cfg.RefreshCatalog = func(context.Context, *v1alpha1.Broker) error { refreshed++; return nil }
	f.create("db", planSmall, "")
	provisionReturns(f, 0, fake.HTTPError("PUT", 422, "MaintenanceInfoConflict", ""))

	res := f.step("db")

	assert.Equal(t, refreshed, 1)
	assert.Equal(t, res.RequeueAfter, time.Duration(0), "the first retry after a refresh is immediate")
	res = f.step("db")
	assert.Equal(t, res.RequeueAfter, 4*time.Second, "then it backs off (attempt 2), visibly")
	assert.Equal(t, f.get("db").Status.Retry.Attempts, int32(2))
}

func TestStepInstance_SecretParameters_AreMergedNeverStoredAndChecksummed(t *testing.T) {
	f := newFixture(t)
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("db-params", map[string]string{"extra": `{"password":"hunter2"}`}), metav1.CreateOptions{})
	assert.NilError(t, err)
	inst := f.create("db", planSmall, `{"a":1}`)
	inst.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-params", Key: "extra"}}}
	_, err = f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(t, err)

	f.step("db")

	req := f.broker.CallsTo(fake.MethodProvision)[0].Request.(osb.ProvisionRequest)
	var got map[string]any
	assert.NilError(t, json.Unmarshal(req.Parameters, &got))
	assert.DeepEqual(t, got, map[string]any{"a": 1.0, "password": "hunter2"})
	cm, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), store.ConfigMapName(v1alpha1.KindServiceInstance, "db"), metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Assert(t, !strings.Contains(cm.Data[store.DataKey], "hunter2"), "no secret value in the record")
	assert.Assert(t, f.get("db").Status.Provisioned.ParametersChecksum != "")
}

func TestStepInstance_MissingParametersSecret_IsRetriedVisibly(t *testing.T) {
	f := newFixture(t)
	inst := f.create("db", planSmall, "")
	inst.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "missing"}}}
	_, err := f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(t, err)

	res := f.step("db")

	assert.Equal(t, res.State, StateWaiting)
	assert.Equal(t, f.get("db").Status.Retry.Reason, ReasonParametersUnavailable)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestTouch_ResendsEveryParameter(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1,"b":2}`)

	_, err := f.engine.markTouched(store.WithIntent(context.Background()), ns, "db")
	assert.NilError(t, err)
	assert.Assert(t, f.get("db").HasPendingWork())
	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	req := f.broker.CallsTo(fake.MethodUpdate)[0].Request.(osb.UpdateRequest)
	assert.Equal(t, string(req.Parameters), `{"a":1,"b":2}`)
	assert.Equal(t, req.PlanID, "")
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

func TestBackoff_IsExponentialCappedAndJittered(t *testing.T) {
	e := New(Config{RetryBase: time.Second, RetryMax: 10 * time.Second, Jitter: func() float64 { return 0.5 }})
	assert.Equal(t, e.backoff(1), time.Second)
	assert.Equal(t, e.backoff(3), 4*time.Second)
	assert.Equal(t, e.backoff(10), 10*time.Second)
	e.cfg.Jitter = func() float64 { return 0 }
	assert.Equal(t, e.backoff(1), 800*time.Millisecond)
}

func TestTargetCache_OneReadOfTheBrokerForManyRecords(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Minute} {
		f := newFixture(t)
		f.engine.cfg.TargetCacheTTL = ttl
		for _, n := range []string{"a", "b", "c"} {
			f.create(n, planSmall, "")
		}
		f.cluster.Core.ClearActions()

		for _, n := range []string{"a", "b", "c"} {
			assert.Equal(t, f.step(n).State, StateSettled)
		}

		brokerGets := 0
		for _, a := range f.cluster.Core.Actions() {
			if g, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "get" && g.GetName() == store.ConfigMapName(v1alpha1.KindBroker, brokerName) {
				brokerGets++
			}
		}
		if ttl == 0 {
			assert.Equal(t, brokerGets, 3, "without the cache every step reads the broker")
		} else {
			assert.Equal(t, brokerGets, 1, "with the cache one read serves every step")
		}
	}
}

func TestStepInstance_ParametersChecksum_IsKeyedWithASaltKeptInTheRecord(t *testing.T) {
	f := newFixture(t)
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("db-params", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	inst := f.create("db", planSmall, "")
	inst.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-params"}}}
	_, err = f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(t, err)

	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	st := f.get("db").Status
	unkeyed := unkeyedChecksum(Parameters{All: map[string]json.RawMessage{"password": json.RawMessage(`"hunter2"`)}})
	assert.Assert(t, st.ParametersSalt != "")
	assert.Assert(t, strings.HasPrefix(st.Provisioned.ParametersChecksum, "hmac-sha256:"), st.Provisioned.ParametersChecksum)
	assert.Assert(t, st.Provisioned.ParametersChecksum != unkeyed, "a guess of the secret cannot be checked with a plain SHA-256")

	f.broker.ResetCalls()
	f.advance(time.Hour)
	res = f.step("db")
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.Calls(), 0), "the salt is kept: the checksum still matches")
}

func TestStepInstance_ChecksumOfAnEarlierRelease_CausesNoUpdate(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		update bool
	}{
		{name: "same parameters", spec: `{"a":1}`},
		{name: "changed parameters", spec: `{"a":2}`, update: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1}`)
			_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
				// As an earlier release wrote it: no salt, a plain SHA-256.
				i.Status.ParametersSalt = ""
				i.Status.Provisioned.ParametersChecksum = unkeyedChecksum(Parameters{All: map[string]json.RawMessage{"a": json.RawMessage(`1`)}})
				i.Spec.Parameters.Raw = []byte(tc.spec)
				return nil
			})
			assert.NilError(t, err)

			res := f.step("db")

			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodUpdate)) == 1, tc.update)
			if tc.update {
				assert.Assert(t, strings.HasPrefix(f.get("db").Status.Provisioned.ParametersChecksum, "hmac-sha256:"))
			}
		})
	}
}
