package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// whenRecorded is an EventRecorder that also calls at with each event as it is recorded.
type whenRecorded struct {
	fakeEvents
	at func(Event)
}

func (w *whenRecorded) Record(ctx context.Context, ev Event) {
	w.at(ev)
	w.fakeEvents.Record(ctx, ev)
}

// The Event of what the broker answered goes out with the write of the outcome, not
// after it: when it is recorded, the record still holds the call in flight.
func TestEvents_SucceededIsRecordedWithTheOutcomeWriteNotAfterIt(t *testing.T) {
	f := newFixture(t)
	inFlightWhenRecorded := map[string]bool{}
	rec := &whenRecorded{}
	rec.at = func(ev Event) { inFlightWhenRecorded[ev.Reason] = f.get("db").Status.InFlight != nil }
	f.engine.cfg.Events = rec
	f.create("db", planSmall, `{}`)

	assert.Equal(t, f.step("db").State, StateSettled)

	assert.DeepEqual(t, rec.reasons(), []string{"ProvisionRequested", "ProvisionSucceeded"})
	assert.Assert(t, inFlightWhenRecorded["ProvisionSucceeded"], "recorded only once the outcome was stored")
	assert.Equal(t, rec.evs[1].Note, "the broker answered that the provision succeeded")
}

// An outcome whose write fails leaves no Normal-only trail: the Event of the broker's
// answer is followed by a Warning saying it was not recorded and what happens then.
func TestEvents_OutcomeThatCannotBeStored_IsFollowedByAWarning(t *testing.T) {
	f := newFixture(t)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	provisionReturns(f, 201, nil)
	refuseOutcomeWrite(f)
	f.create("db", planSmall, "")

	_, err := f.engine.StepInstance(context.Background(), f.get("db"))

	assert.Assert(t, err != nil)
	assert.DeepEqual(t, rec.reasons(), []string{"ProvisionRequested", "ProvisionSucceeded", ReasonOutcomeNotRecorded})
	last := rec.evs[2]
	assert.Equal(t, last.Type, EventWarning)
	assert.Equal(t, last.Action, "Provision")
	assert.Equal(t, last.Name, "catalog-instance.db")
	assert.Assert(t, is.Contains(last.Note, "the broker's answer to the provision could not be recorded"))
	assert.Assert(t, is.Contains(last.Note, "it is sent again"))
	assert.Assert(t, f.get("db").Status.InFlight != nil, "the call stays in flight, as the Warning says")
}

// A failure is recorded once it is stored: an outcome write that fails records no
// failure the record does not hold.
func TestEvents_FailureIsRecordedOnlyOnceStored(t *testing.T) {
	f := newFixture(t)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.broker.ProvisionReturns(nil, fake.HTTPError("PUT", 400, "BadRequest", "nope"))
	refuseOutcomeWrite(f)
	f.create("db", planSmall, "")

	_, err := f.engine.StepInstance(context.Background(), f.get("db"))

	assert.Assert(t, err != nil)
	assert.DeepEqual(t, rec.reasons(), []string{"ProvisionRequested"})
}

// A deletion the broker confirmed whose record cannot be released: the Event of the
// broker's answer is followed by a Warning.
func TestEvents_UnbindConfirmedButNotReleased_IsFollowedByAWarning(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("app", nil)
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	refuse := false
	f.cluster.Core.PrependReactor("update", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !refuse {
			return false, nil, nil
		}
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	f.hook = func(p HookPoint, _ *v1alpha1.Operation) {
		if p == HookAfterBrokerCall {
			refuse = true
		}
	}

	_, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))

	assert.Assert(t, err != nil)
	assert.DeepEqual(t, rec.reasonsOf("catalog-binding.app"), []string{
		"BindRequested", "BindSucceeded", "UnbindRequested", "UnbindSucceeded", ReasonOutcomeNotRecorded,
	})
	last := rec.evs[len(rec.evs)-1]
	assert.Equal(t, last.Type, EventWarning)
	assert.Equal(t, last.Action, "Unbind")
	assert.Assert(t, is.Contains(last.Note, "the record is not released yet"))
	assert.Assert(t, f.getBinding("app").Status.InFlight != nil)
}
