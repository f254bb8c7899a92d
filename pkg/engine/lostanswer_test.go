package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// landOutcomeWriteLoseAnswer makes the first update of a ConfigMap after the broker call
// land while its writer gets a timeout (the answer lost on the way back): the write of
// the call's outcome is stored, and the engine is told it may not be.
func landOutcomeWriteLoseAnswer(f *fixture) {
	armed := false
	f.cluster.Core.PrependReactor("update", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !armed {
			return false, nil, nil
		}
		armed = false
		obj := a.(clienttesting.UpdateAction).GetObject().DeepCopyObject()
		m, err := meta.Accessor(obj)
		assert.NilError(f.t, err)
		cur, err := f.cluster.Core.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName())
		assert.NilError(f.t, err)
		c, err := meta.Accessor(cur)
		assert.NilError(f.t, err)
		assert.Equal(f.t, m.GetResourceVersion(), c.GetResourceVersion(), "the outcome is written over the record as read")
		m.SetUID(c.GetUID())
		m.SetCreationTimestamp(c.GetCreationTimestamp())
		m.SetResourceVersion("900001") // newer than any the cluster gave
		assert.NilError(f.t, f.cluster.Core.Tracker().Update(a.GetResource(), obj, a.GetNamespace()))
		return true, nil, apierrors.NewTimeoutError("the answer was lost", 0)
	})
	f.hook = func(p HookPoint, _ *v1alpha1.Operation) {
		if p == HookAfterBrokerCall {
			armed = true
		}
	}
}

// An outcome whose write landed while its answer was lost is the outcome recorded: the
// step reads the record back (on that error only) and, finding its own outcome there,
// records the Events it stands for, as if the answer had come. Without that, a terminal
// failure's record was left with "ProvisionRequested" as the last word about it (no
// step follows a settled failure), and a success got an "OutcomeNotRecorded" Warning
// for an outcome that was recorded. Each case runs twice, the write answered and the
// answer lost, and must end the same: the same Events, the same status, the same state.
func TestFinish_OutcomeWriteLandedItsAnswerLost_IsTheOutcomeRecorded(t *testing.T) {
	badRequest := fake.HTTPError(http.MethodPut, http.StatusBadRequest, "BadRequest", "no such parameter")
	tests := []struct {
		name string
		// setup readies f and sets the broker's answer; step steps the record once,
		// returning the step's result, its error and the record's status as stored.
		setup func(f *fixture)
		step  func(f *fixture) (Result, error, any)
	}{
		{name: "provision answered 400 (terminal)", setup: func(f *fixture) {
			f.broker.ProvisionReturns(nil, badRequest)
			f.create("db", planSmall, "")
		}, step: stepInstanceOnce},
		{name: "provision answered 500 (retried)", setup: func(f *fixture) {
			f.broker.ProvisionReturns(nil, fake.HTTPError(http.MethodPut, http.StatusInternalServerError, "", "boom"))
			f.create("db", planSmall, "")
		}, step: stepInstanceOnce},
		{name: "provision answered 201", setup: func(f *fixture) {
			provisionReturns(f, 201, nil)
			f.create("db", planSmall, "")
		}, step: stepInstanceOnce},
		{name: "provision answered 202 (asynchronous)", setup: func(f *fixture) {
			provisionReturns(f, 202, nil)
			f.create("db", planSmall, "")
		}, step: stepInstanceOnce},
		{name: "update answered 400 (terminal)", setup: func(f *fixture) {
			f.provisioned("db", planSmall, "")
			f.broker.UpdateReturns(nil, fake.HTTPError(http.MethodPatch, http.StatusBadRequest, "BadRequest", "no"))
			changePlan(f, "db", planLarge)
		}, step: stepInstanceOnce},
		{name: "update answered 200", setup: func(f *fixture) {
			f.provisioned("db", planSmall, "")
			f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 200}, nil)
			changePlan(f, "db", planLarge)
		}, step: stepInstanceOnce},
		{name: "bind answered 400 (terminal)", setup: func(f *fixture) {
			f.broker.BindReturns(nil, fake.HTTPError(http.MethodPut, http.StatusBadRequest, "BadRequest", "no"))
			f.createBinding("app", nil)
		}, step: stepBindingOnce},
		{name: "bind answered 201", setup: func(f *fixture) {
			f.createBinding("app", nil)
		}, step: stepBindingOnce},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answered, lost := bindingFixtureOrNot(t, tc.name), bindingFixtureOrNot(t, tc.name)
			recA, recL := &fakeEvents{}, &fakeEvents{}
			tc.setup(answered)
			tc.setup(lost)
			resA, errA, stA := tc.step(withEvents(answered, recA, false))
			resL, errL, stL := tc.step(withEvents(lost, recL, true))

			assert.NilError(t, errA)
			assert.NilError(t, errL, "the outcome was stored: the step did what it set out to do")
			assert.DeepEqual(t, recL.reasons(), recA.reasons())
			assert.Equal(t, resL.State, resA.State)
			assert.Equal(t, jsonOf(t, stL), jsonOf(t, stA))
		})
	}
}

// bindingFixtureOrNot is a fixture with a provisioned instance and a binding's answer
// for the bind cases, a bare one otherwise; the Events of its set-up are not recorded.
func bindingFixtureOrNot(t *testing.T, name string) *fixture {
	if len(name) > 4 && name[:4] == "bind" {
		f, _ := bindingFixture(t, nil)
		return f
	}
	return newFixture(t)
}

func withEvents(f *fixture, rec *fakeEvents, loseAnswer bool) *fixture {
	f.engine.cfg.Events = rec
	if loseAnswer {
		landOutcomeWriteLoseAnswer(f)
	}
	return f
}

func stepInstanceOnce(f *fixture) (Result, error, any) {
	f.t.Helper()
	res, err := f.engine.StepInstance(context.Background(), f.get("db"))
	return res, err, f.get("db").Status
}

func stepBindingOnce(f *fixture) (Result, error, any) {
	f.t.Helper()
	res, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))
	return res, err, f.getBinding("app").Status
}

func changePlan(f *fixture, name, plan string) {
	f.t.Helper()
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, name, func(x *v1alpha1.ServiceInstance) error {
		x.Spec.PlanID, x.Spec.PlanExternalName = plan, plan
		return nil
	})
	assert.NilError(f.t, err)
}

// jsonOf is v as JSON, its request ids (random) left out.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	assert.NilError(t, err)
	return requestIDs.ReplaceAllString(string(b), `"requestID":""`)
}

var requestIDs = regexp.MustCompile(`"requestID":"[^"]*"`)
