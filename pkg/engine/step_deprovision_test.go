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
