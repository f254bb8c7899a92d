package engine

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// strictBroker is a broker that holds one instance on a plan and checks what a request
// says it holds: an update whose previous_values name another plan, or a deprovision
// naming another plan, is answered 400, as some brokers do. An update that asks for
// what it holds already (the identical request again) is answered 200.
type strictBroker struct {
	plan string
	// lose is how many of the next updates the broker applies (or not, apply) and
	// then answers with fail instead of 200.
	lose  int
	apply bool
	fail  error
	// async answers every applied update 202; its poll says succeeded.
	async bool
	// refusals counts the requests answered 400.
	refusals int
	deleted  bool
}

func newStrictBroker(f *fixture, plan string) *strictBroker {
	b := &strictBroker{plan: plan}
	f.broker.OnUpdate(func(_ context.Context, r *osb.UpdateRequest) (*osb.UpdateResponse, error) {
		want := b.plan
		if r.PlanID != "" {
			want = r.PlanID
		}
		if want == b.plan && r.PlanID != "" {
			return &osb.UpdateResponse{StatusCode: http.StatusOK}, nil
		}
		if r.PreviousValues == nil || r.PreviousValues.PlanID != b.plan {
			b.refusals++
			return nil, fake.HTTPError("PATCH", 400, "", fmt.Sprintf("previous_values.plan_id must be %s", b.plan))
		}
		if b.lose > 0 {
			b.lose--
			if b.apply {
				b.plan = want
			}
			return nil, b.fail
		}
		b.plan = want
		if b.async {
			return &osb.UpdateResponse{StatusCode: http.StatusAccepted, Async: true, Operation: "up"}, nil
		}
		return &osb.UpdateResponse{StatusCode: http.StatusOK}, nil
	})
	f.broker.OnDeprovision(func(_ context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
		if r.PlanID != b.plan {
			b.refusals++
			return nil, fake.HTTPError("DELETE", 400, "", fmt.Sprintf("plan_id must be %s", b.plan))
		}
		b.deleted = true
		return &osb.DeprovisionResponse{StatusCode: http.StatusOK}, nil
	})
	f.broker.OnGetInstance(func(context.Context, *osb.GetInstanceRequest) (*osb.GetInstanceResponse, error) {
		return &osb.GetInstanceResponse{ServiceID: classID, PlanID: b.plan}, nil
	})
	return b
}

// settle steps db until it settles (or needs its user), moving the clock past every
// retry and poll it waits for.
func (f *fixture) settle(name string) Result {
	f.t.Helper()
	var res Result
	for range 30 {
		res = f.step(name)
		if res.State == StateSettled || res.State == StateNeedsUser || res.State == StateDeleted {
			return res
		}
		f.advance(max(res.RequeueAfter, time.Second))
	}
	f.t.Fatalf("%s did not settle: %s", name, res.Message)
	return res
}

func TestStepInstance_UncertainUpdate_ChangeBackIsSentAndTheBrokerAgrees(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  error
		apply bool
		async bool
	}{
		{name: "500 after applying", fail: fake.HTTPError("PATCH", 500, "", "boom"), apply: true},
		{name: "500 before applying", fail: fake.HTTPError("PATCH", 500, "", "boom")},
		{name: "timeout after applying", fail: fake.Timeout(), apply: true},
		{name: "timeout after applying, async re-send", fail: fake.Timeout(), apply: true, async: true},
		{name: "timeout before applying, async re-send", fail: fake.Timeout(), async: true},
		{name: "502 after applying", fail: fake.HTTPError("PATCH", 502, "", ""), apply: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1}`)
			b := newStrictBroker(f, planSmall)
			b.lose, b.apply, b.fail, b.async = 1, tc.apply, tc.fail, tc.async
			setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })

			res := f.step("db")

			inst := f.get("db")
			assert.Equal(t, res.State, StateWaiting, res.Message)
			assert.Assert(t, inst.Status.InFlight != nil, "an update whose outcome is unknown stays in flight")
			assert.Equal(t, inst.Status.InFlight.PlanID, planLarge)
			assert.Assert(t, is.Contains(condition(inst, v1alpha1.ConditionReady).Message, "unknown"))
			_, _, err := f.engine.revertSpec(context.Background(), ns, "db")
			assert.ErrorContains(t, err, "still updating", "no revert to a plan the broker may no longer hold")

			// The user changes the spec back by other means (an edit, an apply).
			setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planSmall, "small" })
			res = f.settle("db")

			inst = f.get("db")
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Equal(t, b.plan, planSmall, "the broker holds what the spec says")
			assert.Equal(t, inst.Status.Provisioned.PlanID, b.plan, "the record says what the broker holds")
			assert.Equal(t, b.refusals, 0, "no request named a plan the broker does not hold")

			// Later calls name what the broker holds.
			setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2}`) })
			assert.Equal(t, f.settle("db").State, StateSettled)
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			assert.Equal(t, f.settle("db").State, StateDeleted)
			assert.Assert(t, b.deleted)
			assert.Equal(t, b.refusals, 0)
		})
	}
}

func TestStepInstance_UncertainUpdate_DeletedMeanwhile_DeletesWithThePlanTheBrokerHolds(t *testing.T) {
	for _, apply := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", apply), func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1}`)
			b := newStrictBroker(f, planSmall)
			b.lose, b.apply, b.fail = 1, apply, fake.HTTPError("PATCH", 503, "", "busy")
			setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
			f.step("db")

			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			res := f.settle("db")

			assert.Equal(t, res.State, StateDeleted, res.Message)
			assert.Assert(t, b.deleted)
			assert.Equal(t, b.refusals, 0, "the DELETE named the plan the broker holds")
		})
	}
}

func TestStepInstance_UncertainUpdate_ResendRefused_ReadsTheInstanceWhereTheBrokerServesIt(t *testing.T) {
	for _, tc := range []struct {
		name        string
		retrievable bool
		wantPlan    string
		wantState   State
	}{
		// The broker holds the new plan and refuses the re-send for its stale
		// previous_values: GET instance says which plan it holds.
		{name: "instances_retrievable", retrievable: true, wantPlan: planLarge, wantState: StateSettled},
		// Without GET instance the refusal of the identical request is the broker's word.
		{name: "not retrievable", wantPlan: planSmall, wantState: StateNeedsUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1}`)
			if tc.retrievable {
				c := f.class()
				c.Spec.InstancesRetrievable = true
				_, err := f.st.Classes().Update(context.Background(), c)
				assert.NilError(t, err)
			}
			held := planLarge
			f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 500, "", "boom"))
			f.broker.GetInstanceReturns(&osb.GetInstanceResponse{ServiceID: classID, PlanID: held}, nil)
			setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
			f.step("db")
			f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 400, "", "previous_values.plan_id must be "+held))

			res := f.settle("db")

			inst := f.get("db")
			assert.Equal(t, res.State, tc.wantState, res.Message)
			assert.Equal(t, inst.Status.Provisioned.PlanID, tc.wantPlan)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodGetInstance)) > 0, tc.retrievable)
		})
	}
}

func TestStepInstance_UncertainParametersUpdate_ResendRefused_SendsEveryParameterNext(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1,"b":1}`)
	f.broker.UpdateReturns(nil, fake.Timeout())
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2,"b":1}`) })
	f.step("db")
	f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 400, "", "no"))
	assert.Equal(t, f.settle("db").State, StateNeedsUser)
	f.broker.ResetCalls()
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 200}, nil)

	// Back to what the broker held before: it may hold a=2, so that is sent.
	_, _, err := f.engine.revertSpec(context.Background(), ns, "db")
	assert.NilError(t, err)
	res := f.settle("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	calls := f.broker.CallsTo(fake.MethodUpdate)
	assert.Assert(t, is.Len(calls, 1), "a change back is sent, never settled locally")
	assert.Equal(t, string(calls[0].Request.(osb.UpdateRequest).Parameters), `{"a":1,"b":1}`)
}

func TestStepInstance_UpdateAnswered5xxNotRepeatable_IsRefusedNotSentAgain(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	no := false
	f.broker.UpdateReturns(nil, &osb.HTTPStatusError{StatusCode: 500, UpdateRepeatable: &no})
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2}`) })

	res := f.step("db")

	assert.Equal(t, res.State, StateNeedsUser, res.Message)
	assert.Assert(t, f.get("db").Status.InFlight == nil)
	f.advance(time.Hour)
	f.step("db")
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUpdate), 1), "the same update is not repeated")
}
