package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// An update --rebind whose parameters (or maintenance version) are those the spec
// already holds changes no spec: the record's generation stays, no update is sent, and
// the rebind follows the generation the instance already settled. It once followed the
// next generation, which only a later, unrelated change of the spec makes: the rebind
// waited for it, and then took a binding rotating on its own meanwhile for one rotated
// after the update.
func TestUpdateRebind_WhatTheSpecAlreadyHolds_FollowsTheSettledGeneration(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   UpdateRequest
		first UpdateRequest
	}{
		{"the same parameters", UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"size=2"}}}, UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"size=2"}}}},
		{"the same parameters as a JSON object", UpdateRequest{Parameters: &ParametersInput{Object: []byte(`{"size":"2"}`)}}, UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"size=2"}}}},
		{"the same plan and parameters", UpdateRequest{Plan: "large", Parameters: &ParametersInput{Pairs: []string{"size=2"}}}, UpdateRequest{Plan: "large", Parameters: &ParametersInput{Pairs: []string{"size=2"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := rebindFixture(t)
			_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db", UpdateRequest: tc.first, Follow: Follow{Wait: true}})
			assert.NilError(t, err)
			settled := f.get("db")
			assert.Equal(t, settled.Status.ObservedGeneration, settled.Generation)
			f.broker.ResetCalls()

			var seen []*v1alpha1.RebindStatus
			f.hook = rebindAtEachBind(f, &seen)

			_, err = f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db", UpdateRequest: tc.req, Rebind: true})
			assert.NilError(t, err)
			for range 10 {
				if f.step("db").State == StateSettled {
					break
				}
			}

			after := f.get("db")
			assert.Equal(t, after.Generation, settled.Generation, "the spec did not change")
			assert.Equal(t, len(seen), 2)
			for _, rb := range seen {
				assert.Equal(t, rb.Generation, settled.Generation, "the rebind follows generation %d, which the record does not have (it is at %d)", rb.Generation, after.Generation)
				assert.Assert(t, !rb.AfterUpdate, "no update was sent")
			}
			assert.Assert(t, after.Status.Rebind == nil, "the rebind never ended: %+v", after.Status.Rebind)
			assert.DeepEqual(t, brokerLog(f), []string{"bind predecessor=", "unbind osb-a", "bind predecessor=", "unbind osb-b"})
		})
	}
}

// Asked again while a rebind is under way, with parameters the spec already holds, the
// rebind still follows the update it followed and keeps what it rotated, as with no
// change at all.
func TestUpdateRebind_AskedAgainWithWhatTheSpecAlreadyHolds_StillFollowsTheUpdateItFollowed(t *testing.T) {
	f, _ := rebindFixture(t)
	_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"size=2"}}}, Follow: Follow{Wait: true}})
	assert.NilError(t, err)
	f.broker.ResetCalls()
	var followed int64
	f.editInstance(func(i *v1alpha1.ServiceInstance) {
		followed = i.Generation
		i.Status.Rebind = &v1alpha1.RebindStatus{Generation: i.Generation, Reason: RebindOnce, AfterUpdate: true, RequestedAt: metav1.Now(),
			Rotated: []string{ns + "/a"}}
	})

	var seen []*v1alpha1.RebindStatus
	f.hook = rebindAtEachBind(f, &seen)

	_, err = f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"size=2"}}}, Rebind: true})
	assert.NilError(t, err)

	assert.Equal(t, len(seen), 1, "only b is left to rotate: %v", brokerLog(f))
	assert.Equal(t, seen[0].Generation, followed, "the rebind follows generation %d, not the update it followed (%d)", seen[0].Generation, followed)
	assert.DeepEqual(t, seen[0].Rotated, []string{ns + "/a"})
	assert.DeepEqual(t, brokerLog(f), []string{"bind predecessor=", "unbind osb-b"})
}

// rebindAtEachBind is a hook that keeps the instance's status.rebind as each bind is
// about to be sent.
func rebindAtEachBind(f *fixture, seen *[]*v1alpha1.RebindStatus) func(HookPoint, *v1alpha1.Operation) {
	return func(p HookPoint, op *v1alpha1.Operation) {
		if p == HookBeforeBrokerCall && op.Type == v1alpha1.OperationBind {
			*seen = append(*seen, f.get("db").Status.Rebind.DeepCopy())
		}
	}
}

// A rotation a rebind recorded as failed at the limit goes on on its own (it binds once
// a place frees). A later rebind finds that binding rotating on its own, refused in a
// way only a person can lift: it takes it as its current and records it as failed
// again, rather than wait for that rotation to end for ever. Found by the simulation
// (-sim.rebind seed 377: "its rebind ("update --rebind") never ended: current <nil>,
// rotated [dev/app-0 dev/app-1]").
func TestRebind_BindingLeftRotatingAtTheLimitByAnEarlierRebind_IsRecordedAsFailedAndTheRebindEnds(t *testing.T) {
	f := keptPlaceAndTwoBindings(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	rebind := func(what string) {
		t.Helper()
		f.editInstance(func(i *v1alpha1.ServiceInstance) {
			i.Status.ObservedGeneration = i.Generation
			i.Status.Rebind = &v1alpha1.RebindStatus{Generation: i.Generation, Reason: RebindOnce, AfterUpdate: true, RequestedAt: metav1.NewTime(f.now)}
		})
		var res Result
		for range 30 {
			if f.get("db").Status.Rebind == nil {
				break
			}
			var err error
			res, err = f.engine.StepInstance(ctx, f.get("db"))
			assert.NilError(t, err)
			f.advance(max(res.RequeueAfter, time.Second))
		}
		inst := f.get("db")
		assert.Assert(t, inst.Status.Rebind == nil, "%s: the rebind waits for ever: %s", what, res.Message)
		c := meta.FindStatusCondition(inst.Status.Conditions, ConditionBindingsRebound)
		assert.Assert(t, c != nil && c.Status == metav1.ConditionFalse, "%s: %+v", what, c)
		assert.Assert(t, is.Contains(c.Message, "rotation failed, old credentials kept: dev/a, dev/b"), what)
	}
	rebind("the first rebind")
	for _, name := range []string{"a", "b"} {
		assert.Assert(t, f.getBinding(name).CurrentExternalID() != "osb-"+name, "%s's rotation goes on on its own", name)
	}
	rebind("the second rebind")

	for i, name := range []string{"a", "b"} {
		b := f.getBinding(name)
		assert.Equal(t, b.Status.Bound.BindingID, "osb-"+name)
		assert.Equal(t, string(f.secretData(name)["password"]), fmt.Sprintf("pw-%d", i+1))
	}
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodUnbind)), 0)
}

// update --rebind of an instance the broker never provisioned (its provision refused
// for good): with no change, it is refused as bad input and the record is left as it
// was; with a change (a new plan, so a new provision), the change is made and no rebind
// is recorded, since no binding of it holds credentials to rotate. A rebind recorded
// there waited, unanswered, for a provision that might never come (found by the
// simulation: -sim.aslisted=1 seed 198).
func TestUpdateRebind_AnInstanceNeverProvisioned_HasNothingToRotate(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	provisionReturns(f, 0, fake.HTTPError("PUT", 400, "", "bad parameter"))
	f.step("db")
	before := f.get("db")
	assert.Equal(t, condition(before, v1alpha1.ConditionFailed).Status, metav1.ConditionTrue)

	_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db", Rebind: true})
	assert.ErrorContains(t, err, `instance "db": --rebind rotates the credentials of its bindings, and the broker has not provisioned it`)
	after := f.get("db")
	assert.DeepEqual(t, after, before)

	var notes []string
	_, err = f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true,
		Follow: Follow{Note: func(s string) { notes = append(notes, s) }}})
	assert.NilError(t, err)
	after = f.get("db")
	assert.Equal(t, after.Generation, before.Generation+1, "the plan's change is made")
	assert.Assert(t, after.Status.Rebind == nil, "%+v", after.Status.Rebind)
	assert.Assert(t, is.Contains(fmt.Sprint(notes), "--rebind has nothing to rotate"))
}
