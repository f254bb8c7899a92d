package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

func notFound(method, path string) error {
	return &osb.HTTPStatusError{Method: method, Path: path, StatusCode: 404, Description: "instance " + instanceOSB + " does not exist"}
}

// A broker that holds no instance under a record's id (a record made again from svcat's
// objects after its instance was deprovisioned, or an instance the broker lost) answers
// 404 to the calls naming it. Each is retried with a backoff that grows, one call per
// retry and none before it is due, and the record's condition says what the 404 means
// and the command that ends it: for an update and a bind, deprovisioning the instance
// (its DELETE is answered gone) or dropping the record with --abandon; for a deletion
// (deprovision, unbind), the --abandon that drops it without the broker.
func TestStep_BrokerAnswers404_IsRetriedWithBackoffAndTheConditionSaysWhatEndsIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		// setup brings the fixture to the step whose call the broker answers 404, and
		// returns the record's stepper and its Ready condition's reader.
		setup func(f *fixture) (step func() Result, ready func() string)
		want  []string
	}{
		{
			name: "update", method: fake.MethodUpdate,
			setup: func(f *fixture) (func() Result, func() string) {
				changePlan(f, "db", planLarge)
				f.broker.UpdateReturns(nil, notFound("PATCH", "/v2/service_instances/"+instanceOSB))
				return func() Result { return f.step("db") }, func() string { return readyOf(f.get("db")) }
			},
			want: []string{"holds no instance under id " + instanceOSB, `"kubectl catalog deprovision db -n dev"`, `"kubectl catalog deprovision db --abandon -n dev"`},
		},
		{
			name: "update sent again after no answer", method: fake.MethodUpdate,
			setup: func(f *fixture) (func() Result, func() string) {
				changePlan(f, "db", planLarge)
				f.broker.UpdateReturns(nil, fake.Timeout())
				f.step("db")
				f.advance(DefaultMitigationGrace)
				f.broker.ResetCalls()
				f.broker.UpdateReturns(nil, notFound("PATCH", "/v2/service_instances/"+instanceOSB))
				return func() Result { return f.step("db") }, func() string { return readyOf(f.get("db")) }
			},
			want: []string{"holds no instance under id " + instanceOSB, `"kubectl catalog deprovision db -n dev"`, `"kubectl catalog deprovision db --abandon -n dev"`},
		},
		{
			name: "deprovision", method: fake.MethodDeprovision,
			setup: func(f *fixture) (func() Result, func() string) {
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
				f.broker.DeprovisionReturns(nil, notFound("DELETE", "/v2/service_instances/"+instanceOSB))
				return func() Result { return f.step("db") }, func() string { return readyOf(f.get("db")) }
			},
			want: []string{"may hold no instance under id " + instanceOSB, `"kubectl catalog deprovision db --abandon -n dev"`},
		},
		{
			name: "bind", method: fake.MethodBind,
			setup: func(f *fixture) (func() Result, func() string) {
				f.createBinding("app", nil)
				f.broker.BindReturns(nil, notFound("PUT", "/v2/service_instances/"+instanceOSB+"/service_bindings/"+bindingOSB))
				return func() Result { return f.stepBinding("app") }, func() string { return readyOf(f.getBinding("app")) }
			},
			want: []string{"holds no instance under id " + instanceOSB, `instance "db"`, `"kubectl catalog deprovision db -n dev"`, `"kubectl catalog unbind app --abandon -n dev"`},
		},
		{
			name: "unbind", method: fake.MethodUnbind,
			setup: func(f *fixture) (func() Result, func() string) {
				f.createBinding("app", nil)
				assert.Equal(f.t, f.driveBinding("app").State, StateSettled)
				assert.NilError(f.t, f.st.Bindings().Delete(context.Background(), ns, "app"))
				f.broker.ResetCalls()
				f.broker.UnbindReturns(nil, notFound("DELETE", "/v2/service_instances/"+instanceOSB+"/service_bindings/"+bindingOSB))
				return func() Result { return f.stepBinding("app") }, func() string { return readyOf(f.getBinding("app")) }
			},
			want: []string{"may hold no binding under id " + bindingOSB, `"kubectl catalog unbind app --abandon -n dev"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			step, ready := tc.setup(f)
			var last time.Duration
			for i := range 4 {
				res := step()
				assert.Equal(t, len(f.broker.CallsTo(tc.method)), i+1, "one call per retry: %s", res.Message)
				assert.Assert(t, res.RequeueAfter > last, "the backoff grows: %s after %s", res.RequeueAfter, last)
				last = res.RequeueAfter
				msg := ready()
				for _, w := range tc.want {
					assert.Assert(t, is.Contains(msg, w))
				}
				// Not due yet: nothing is sent.
				f.advance(res.RequeueAfter / 2)
				step()
				assert.Equal(t, len(f.broker.CallsTo(tc.method)), i+1, "nothing is sent before the retry is due")
				f.advance(res.RequeueAfter - res.RequeueAfter/2)
			}
		})
	}
}

// readyOf is the message of x's Ready condition.
func readyOf(x interface {
	OpStatus() *v1alpha1.OperationStatus
}) string {
	c := meta.FindStatusCondition(x.OpStatus().Conditions, v1alpha1.ConditionReady)
	if c == nil {
		return ""
	}
	return c.Message
}
