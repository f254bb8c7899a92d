package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// refuseOutcomeAfterSecretWrite makes the first write of a binding's record after its
// Secret was written fail with 413, as an API server refusing a record too large: the
// bind's outcome is not stored, while the Secret holds the answer's credentials.
func refuseOutcomeAfterSecretWrite(f *fixture) {
	refuseOutcomeAfterBindingSecretWrite(f, "")
}

// A bind whose credentials reached the binding's Secret and whose outcome could not be
// stored was answered: the call is certain. While the Secret holds that id's
// credentials, a re-send that gets no answer (or an answer without credentials) never
// turns into orphan mitigation of the id: that would leave the Secret holding
// credentials the broker no longer has (a rotation's binding stays bound under its old
// id, whose credentials the Secret no longer holds). The re-send is retried until the
// broker answers, and the binding ends bound under that id, for a first bind and a
// rotation alike.
func TestStep_BindWhoseSecretWasWrittenAndOutcomeNotStored_NeverMitigatesTheIDTheSecretHolds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rotate bool
		// lost: the re-send is answered 200 without credentials (a broker that
		// hands them out once) instead of timing out.
		lost bool
	}{
		{name: "bind, re-send times out"},
		{name: "rotation, re-send times out", rotate: true},
		{name: "bind, re-send answered without credentials", lost: true},
		{name: "rotation, re-send answered without credentials", rotate: true, lost: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			f.createBinding("app", nil)
			if tc.rotate {
				assert.Equal(t, f.driveBinding("app").State, StateSettled)
				_, err := f.engine.startRotation(context.Background(), ns, "app")
				assert.NilError(t, err)
			}
			newID := f.getBinding("app").CurrentExternalID()
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": "fresh"}}, nil)
			refuseOutcomeAfterSecretWrite(f)

			_, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))
			assert.Assert(t, err != nil, "the outcome's write is refused")
			assert.Equal(t, string(f.secretData("app")["password"]), "fresh")

			if tc.lost {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 200}, nil)
			} else {
				f.broker.BindReturns(nil, fake.Timeout())
			}
			for range 15 {
				res, _ := f.engine.StepBinding(context.Background(), f.getBinding("app"))
				for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
					assert.Assert(t, c.Request.(osb.UnbindRequest).BindingID != newID,
						"id %s unbound while the Secret holds its credentials: %s", newID, res.Message)
				}
				b := f.getBinding("app")
				if bd := b.Status.Bound; bd != nil && bd.BindingID == newID {
					break
				}
				f.advance(max(res.RequeueAfter, 10*time.Minute))
			}
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 200, Credentials: map[string]any{"password": "fresh"}}, nil)
			assert.Equal(t, f.driveBinding("app").State, StateSettled)
			b := f.getBinding("app")
			assert.Assert(t, b.Status.Bound != nil && b.Status.Bound.BindingID == newID, "%+v", b.Status.Bound)
			assert.Equal(t, string(f.secretData("app")["password"]), "fresh")
			for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
				assert.Assert(t, c.Request.(osb.UnbindRequest).BindingID != newID)
			}
		})
	}
}

// The same for an asynchronous bind: its credentials fetched (GET binding) and written
// to the Secret, its outcome's write refused, the polls that follow get no answer until
// the operation's polling deadline has passed; the id is not unbound, and the binding
// ends bound under it once the broker answers, for a first bind and a rotation.
func TestStep_AsyncBindWhoseSecretWasWrittenAndOutcomeNotStored_NeverMitigatesTheIDTheSecretHolds(t *testing.T) {
	for _, rotate := range []bool{false, true} {
		t.Run(map[bool]string{false: "bind", true: "rotation"}[rotate], func(t *testing.T) {
			f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = true })
			f.createBinding("app", nil)
			if rotate {
				assert.Equal(t, f.driveBinding("app").State, StateSettled)
				_, err := f.engine.startRotation(context.Background(), ns, "app")
				assert.NilError(t, err)
			}
			newID := f.getBinding("app").CurrentExternalID()
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Operation: "op-1"}, nil)
			poll := func() (*osb.LastOperationResponse, error) {
				return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
			}
			f.broker.OnBindingLastOperation(func(context.Context, *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
				return poll()
			})
			f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": "fresh"}}, nil)
			f.stepBinding("app")
			op := f.getBinding("app").Status.InFlight
			assert.Assert(t, op != nil && op.Async, "%+v", op)
			f.advance(time.Minute)
			refuseOutcomeAfterSecretWrite(f)

			_, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))
			assert.Assert(t, err != nil, "the outcome's write is refused")
			assert.Equal(t, string(f.secretData("app")["password"]), "fresh")

			poll = func() (*osb.LastOperationResponse, error) { return nil, fake.Timeout() }
			for range 30 {
				res, _ := f.engine.StepBinding(context.Background(), f.getBinding("app"))
				for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
					assert.Assert(t, c.Request.(osb.UnbindRequest).BindingID != newID,
						"id %s unbound while the Secret holds its credentials: %s", newID, res.Message)
				}
				f.advance(max(res.RequeueAfter, 2*time.Hour))
			}
			poll = func() (*osb.LastOperationResponse, error) {
				return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
			}
			assert.Equal(t, f.driveBinding("app").State, StateSettled)
			b := f.getBinding("app")
			assert.Assert(t, b.Status.Bound != nil && b.Status.Bound.BindingID == newID, "%+v", b.Status.Bound)
			assert.Equal(t, string(f.secretData("app")["password"]), "fresh")
			for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
				assert.Assert(t, c.Request.(osb.UnbindRequest).BindingID != newID)
			}
		})
	}
}
