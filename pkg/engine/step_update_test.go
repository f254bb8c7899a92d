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
