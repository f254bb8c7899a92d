package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// refusals are answers to a re-sent provision or bind that clear the call in flight
// without saying whether the first send created anything.
var refusals = []struct {
	name string
	err  error
}{
	{name: "401 after a password rotation", err: fake.HTTPError("PUT", 401, "", "bad credentials")},
	{name: "408", err: fake.HTTPError("PUT", 408, "", "")},
	{name: "422", err: fake.HTTPError("PUT", 422, "", "unprocessable")},
	{name: "422 ConcurrencyError", err: fake.HTTPError("PUT", 422, "ConcurrencyError", "busy")},
	{name: "409", err: fake.HTTPError("PUT", 409, "", "exists with other attributes")},
	{name: "400", err: fake.HTTPError("PUT", 400, "", "bad parameter")},
}

// driveInstance steps the instance until it is deleted or settles, advancing the clock
// past every wait.
func (f *fixture) driveInstance(name string) Result {
	f.t.Helper()
	for range 20 {
		inst, err := f.st.Instances().Get(context.Background(), ns, name)
		if store.IsNotFound(err) {
			return Result{State: StateDeleted}
		}
		assert.NilError(f.t, err)
		res, err := f.engine.StepInstance(context.Background(), inst)
		assert.NilError(f.t, err)
		if res.Done() {
			return res
		}
		f.advance(max(res.RequeueAfter, time.Second))
	}
	f.t.Fatalf("instance %s did not settle", name)
	return Result{}
}

func TestStepInstance_RefusedResendAfterACrash_DeletionStillDeprovisions(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.create("db", planSmall, "")
			ctx, cancel := context.WithCancel(context.Background())
			f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
				cancel() // the broker created the instance; the command died before storing it
				return nil, &osb.TransportError{Canceled: true, Err: context.Canceled}
			})
			_, err := f.engine.StepInstance(ctx, f.get("db"))
			assert.ErrorIs(t, err, context.Canceled)
			provisionReturns(f, 0, tc.err)
			// Past the grace for the broker's work on the call no one saw answered.
			f.advance(DefaultMitigationGrace)
			f.step("db") // the re-send is refused
			assert.Assert(t, f.get("db").Status.InFlight == nil)

			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 200}, nil)
			res := f.driveInstance("db")

			assert.Equal(t, res.State, StateDeleted, res.Message)
			dep := f.broker.CallsTo(fake.MethodDeprovision)
			assert.Assert(t, is.Len(dep, 1), "the first send may have created the instance: it is deleted before the record goes")
			assert.Equal(t, dep[0].Request.(osb.DeprovisionRequest).InstanceID, instanceOSB)
		})
	}
}

func TestStepInstance_RefusedFirstRequest_DeletionNeedsNoBroker(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.create("db", planSmall, "")
			provisionReturns(f, 0, tc.err)
			f.step("db")
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))

			res := f.driveInstance("db")

			assert.Equal(t, res.State, StateDeleted, res.Message)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0), "a refused first request left nothing at the broker")
		})
	}
}

func TestStepInstance_OrphanMitigation_ProvisionsAgainUnderANewIDUsedByEveryLaterCall(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	provisionReturns(f, 0, fake.HTTPError("PUT", 500, "", "oops"))
	f.step("db") // 500: orphan mitigation
	f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 200}, nil)
	f.step("db") // the mitigating DELETE
	provisionReturns(f, 201, nil)

	res := f.driveInstance("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	prov := f.broker.CallsTo(fake.MethodProvision)
	assert.Assert(t, is.Len(prov, 2))
	first, again := prov[0].Request.(osb.ProvisionRequest).InstanceID, prov[1].Request.(osb.ProvisionRequest).InstanceID
	assert.Equal(t, first, instanceOSB)
	assert.Assert(t, again != first, "an id deleted by orphan mitigation is not provisioned again")
	assert.Equal(t, f.broker.CallsTo(fake.MethodDeprovision)[0].Request.(osb.DeprovisionRequest).InstanceID, first)
	inst := f.get("db")
	assert.Equal(t, inst.Spec.ExternalID, instanceOSB, "the engine never changes the spec")

	// Every later call is about the id the broker holds: an update, a binding, the
	// deprovision.
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{"a":2}`)} })
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 200}, nil)
	assert.Equal(t, f.driveInstance("db").State, StateSettled)
	assert.Equal(t, f.broker.CallsTo(fake.MethodUpdate)[0].Request.(osb.UpdateRequest).InstanceID, again)

	p := &recordingProjector{projected: map[string]bool{}}
	f.engine.cfg.Projector = p
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil)
	f.createBinding("app", nil)
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	assert.Equal(t, f.broker.CallsTo(fake.MethodBind)[0].Request.(osb.BindRequest).InstanceID, again)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	assert.Equal(t, f.driveBinding("app").State, StateDeleted)
	assert.Equal(t, f.broker.CallsTo(fake.MethodUnbind)[0].Request.(osb.UnbindRequest).InstanceID, again)

	f.broker.ResetCalls()
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	assert.Equal(t, f.driveInstance("db").State, StateDeleted)
	dep := f.broker.CallsTo(fake.MethodDeprovision)
	assert.Assert(t, is.Len(dep, 1), "the mitigated id was confirmed gone: only the one in use is deleted")
	assert.Equal(t, dep[0].Request.(osb.DeprovisionRequest).InstanceID, again)
}

func TestStepInstance_AsyncProvisionFailed_MitigatesThenPollsTheNewID(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	f.broker.ProvisionReturns(&osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil)
	f.broker.SetPollSequence("op-1", fake.Failed("no capacity"))
	f.step("db")
	f.advance(time.Minute)
	f.step("db") // failed: orphan mitigation
	f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 200}, nil)
	f.step("db")
	f.broker.ProvisionReturns(&osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op-2"}, nil)
	f.broker.SetPollSequence("op-2", fake.Succeeded())

	res := f.driveInstance("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	polls := f.broker.CallsTo(fake.MethodLastOperation)
	last := polls[len(polls)-1].Request.(osb.LastOperationRequest)
	assert.Equal(t, last.OperationKey, "op-2")
	assert.Assert(t, last.InstanceID != instanceOSB, "the new attempt is polled under its own id")
	prov := f.broker.CallsTo(fake.MethodProvision)
	assert.Equal(t, last.InstanceID, prov[len(prov)-1].Request.(osb.ProvisionRequest).InstanceID)
}

func TestStepBinding_RefusedResendAfterACrash_DeletionStillUnbinds(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			f.createBinding("app", nil)
			ctx, cancel := context.WithCancel(context.Background())
			f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
				cancel() // the broker created the binding; the command died before storing it
				return nil, &osb.TransportError{Canceled: true, Err: context.Canceled}
			})
			_, err := f.engine.StepBinding(ctx, f.getBinding("app"))
			assert.ErrorIs(t, err, context.Canceled)
			f.broker.BindReturns(nil, tc.err)
			// Past the grace for the broker's work on the call no one saw answered.
			f.advance(DefaultMitigationGrace)
			f.stepBinding("app") // the re-send is refused
			assert.Assert(t, f.getBinding("app").Status.InFlight == nil)

			assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
			f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
			res := f.driveBinding("app")

			assert.Equal(t, res.State, StateDeleted, res.Message)
			unbinds := f.broker.CallsTo(fake.MethodUnbind)
			assert.Assert(t, is.Len(unbinds, 1), "the first send may have created the binding: it is unbound before the record goes")
			assert.Equal(t, unbinds[0].Request.(osb.UnbindRequest).BindingID, bindingOSB)
		})
	}
}

func TestStepBinding_RefusedFirstRequest_DeletionNeedsNoBroker(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			f.createBinding("app", nil)
			f.broker.BindReturns(nil, tc.err)
			f.stepBinding("app")
			assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))

			res := f.driveBinding("app")

			assert.Equal(t, res.State, StateDeleted, res.Message)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), 0), "a refused first request left nothing at the broker")
		})
	}
}

func TestStepBinding_DeletionDuringRotation_UnbindsBothIDs(t *testing.T) {
	tests := []struct {
		name string
		// interrupt leaves the rotation's bind of the new id uncertain.
		interrupt func(f *fixture)
	}{
		{name: "new id in flight", interrupt: func(f *fixture) {
			ctx, cancel := context.WithCancel(context.Background())
			f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
				cancel()
				return nil, &osb.TransportError{Canceled: true, Err: context.Canceled}
			})
			_, err := f.engine.StepBinding(ctx, f.getBinding("app"))
			assert.ErrorIs(f.t, err, context.Canceled)
		}},
		{name: "new id in orphan mitigation", interrupt: func(f *fixture) {
			f.broker.BindReturns(nil, fake.HTTPError("PUT", 500, "", "boom"))
			f.stepBinding("app")
			assert.Assert(f.t, f.getBinding("app").Status.OrphanMitigation != nil)
		}},
		{name: "new id's re-send refused", interrupt: func(f *fixture) {
			ctx, cancel := context.WithCancel(context.Background())
			f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
				cancel()
				return nil, &osb.TransportError{Canceled: true, Err: context.Canceled}
			})
			_, err := f.engine.StepBinding(ctx, f.getBinding("app"))
			assert.ErrorIs(f.t, err, context.Canceled)
			f.broker.BindReturns(nil, fake.HTTPError("PUT", 401, "", "bad credentials"))
			f.advance(3 * time.Minute)
			f.stepBinding("app")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			f.createBinding("app", nil)
			assert.Equal(t, f.stepBinding("app").State, StateSettled)
			_, err := f.engine.RotateScheduled(context.Background(), ns, "app")
			assert.NilError(t, err)
			tc.interrupt(f)
			binds := f.broker.CallsTo(fake.MethodBind)
			newID := binds[len(binds)-1].Request.(osb.BindRequest).BindingID
			assert.Assert(t, newID != bindingOSB)

			assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
			f.advance(3 * time.Minute)
			f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
			res := f.driveBinding("app")

			assert.Equal(t, res.State, StateDeleted, res.Message)
			var unbound []string
			for _, c := range f.broker.CallsTo(fake.MethodUnbind) {
				unbound = append(unbound, c.Request.(osb.UnbindRequest).BindingID)
			}
			assert.Assert(t, is.Contains(unbound, bindingOSB), "the old id: %v", unbound)
			assert.Assert(t, is.Contains(unbound, newID), "the new id: %v", unbound)
			assert.Equal(t, len(unbound), 2, "%v", unbound)
		})
	}
}

func TestStepBinding_OrphanMitigation_BindsAgainUnderANewID(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("app", nil)
	f.broker.BindReturns(nil, fake.HTTPError("PUT", 500, "", "boom"))
	f.stepBinding("app") // 500: orphan mitigation
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	f.stepBinding("app") // the mitigating unbind
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil)

	res := f.driveBinding("app")

	assert.Equal(t, res.State, StateSettled, res.Message)
	binds := f.broker.CallsTo(fake.MethodBind)
	assert.Assert(t, is.Len(binds, 2))
	first, again := binds[0].Request.(osb.BindRequest).BindingID, binds[1].Request.(osb.BindRequest).BindingID
	assert.Equal(t, first, bindingOSB)
	assert.Assert(t, again != first, "an id unbound by orphan mitigation is not bound again")
	assert.Equal(t, f.broker.CallsTo(fake.MethodUnbind)[0].Request.(osb.UnbindRequest).BindingID, first)
	b := f.getBinding("app")
	assert.Equal(t, b.Spec.ExternalID, bindingOSB, "the engine never changes the spec")

	f.broker.ResetCalls()
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	assert.Equal(t, f.driveBinding("app").State, StateDeleted)
	unbinds := f.broker.CallsTo(fake.MethodUnbind)
	assert.Assert(t, is.Len(unbinds, 1))
	assert.Equal(t, unbinds[0].Request.(osb.UnbindRequest).BindingID, again)
}

func TestRotate_ChangesTheStatusOnly(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("app", nil)
	assert.Equal(t, f.stepBinding("app").State, StateSettled)
	before := f.getBinding("app")

	_, err := f.engine.RotateScheduled(context.Background(), ns, "app")
	assert.NilError(t, err)

	after := f.getBinding("app")
	assert.DeepEqual(t, after.Spec, before.Spec)
	assert.Equal(t, after.Generation, before.Generation)
	assert.Assert(t, after.HasPendingWork(), "a rotation is pending work until the new id is bound")
}
