package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// refuseFirstOutcomeWrite makes the write of the first broker call's outcome fail, as an
// API server that timed out and did not apply it: the step then stores only a retry in a
// second write (outcomeNotStored).
func refuseFirstOutcomeWrite(f *fixture) {
	armed, done := false, false
	f.cluster.Core.PrependReactor("update", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !armed {
			return false, nil, nil
		}
		armed = false
		return true, nil, apierrors.NewTimeoutError("sim: the request timed out", 1)
	})
	f.hook = func(p HookPoint, _ *v1alpha1.Operation) {
		if p == HookAfterBrokerCall && !done {
			armed, done = true, true
		}
	}
}

// A call that got no answer, whose outcome could not be stored (the API server refused
// the write), may still be under way at the broker as much as one whose outcome was
// stored: the retry stored in its place keeps the grace for the broker's work, so no
// other request for the id (the re-send, orphan mitigation, the deletion's DELETE)
// reaches the broker before the grace has passed, for every call of instances and
// bindings.
func TestStep_UnansweredCallWhoseOutcomeWasNotStored_NoOtherRequestForTheIdWhileTheBrokerMayWork(t *testing.T) {
	const work = 5 * time.Minute // under the grace, over the client's timeout
	for _, tc := range []struct {
		name    string
		binding bool
		method  string
		setup   func(f *fixture)
		want    State
	}{
		{name: "provision", method: fake.MethodProvision,
			setup: func(f *fixture) { f.create("db", planSmall, "") }, want: StateSettled},
		{name: "update", method: fake.MethodUpdate,
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, "")
				setSpec(f.t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
			}, want: StateSettled},
		{name: "deprovision", method: fake.MethodDeprovision,
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, "")
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
			}, want: StateDeleted},
		{name: "bind", binding: true, method: fake.MethodBind,
			setup: func(f *fixture) { f.createBinding("app", nil) }, want: StateSettled},
		{name: "unbind", binding: true, method: fake.MethodUnbind,
			setup: func(f *fixture) {
				f.createBinding("app", nil)
				assert.Equal(f.t, f.driveBinding("app").State, StateSettled)
				assert.NilError(f.t, f.st.Bindings().Delete(context.Background(), ns, "app"))
			}, want: StateDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, name := recordFixture(t, tc.binding)
			tc.setup(f)
			b := newBusyBroker(f, work)
			b.noAnswer = map[string]int{tc.method: 1}
			refuseFirstOutcomeWrite(f)

			// The call without an answer, its outcome's write refused: the step fails.
			var err error
			if tc.binding {
				_, err = f.engine.StepBinding(context.Background(), f.getBinding(name))
			} else {
				_, err = f.engine.StepInstance(context.Background(), f.get(name))
			}
			assert.Assert(t, apierrors.IsTimeout(err), "%v", err)
			st := f.opStatus(tc.binding, name)
			assert.Assert(t, st.InFlight != nil && st.Retry != nil, "the call stays in flight with a retry: %+v", st)
			f.advance(time.Second)
			res := f.driveBusy(tc.binding, name)

			assert.Equal(t, res.State, tc.want, res.Message)
			assert.Assert(t, is.Len(b.overlaps, 0), "%v", b.overlaps)
		})
	}
}

// opStatus is the operation status of the instance or binding named.
func (f *fixture) opStatus(binding bool, name string) *v1alpha1.OperationStatus {
	f.t.Helper()
	if binding {
		b, err := f.st.Bindings().Get(context.Background(), ns, name)
		assert.NilError(f.t, err)
		return &b.Status.OperationStatus
	}
	inst, err := f.st.Instances().Get(context.Background(), ns, name)
	assert.NilError(f.t, err)
	return &inst.Status.OperationStatus
}
