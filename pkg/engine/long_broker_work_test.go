package engine

import (
	"context"
	"net/http"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// slowBroker creates what a create asks for work after the request arrived, whether or
// not its client still waits, and answers nothing before the client's timeout (the first
// timeouts requests). A create sent again once the resource exists is answered as done
// (201, or async 202 then succeeded); a DELETE of a resource not created (yet) is
// answered 410 Gone.
type slowBroker struct {
	f       *fixture
	work    time.Duration
	timeout int
	async   bool
	gateway bool // a gateway answers 504 instead of the client timing out
	// created holds each id the broker created, with when it appears.
	created map[string]time.Time
	deleted map[string]time.Time
}

func newSlowBroker(f *fixture, work time.Duration, timeouts int) *slowBroker {
	return &slowBroker{f: f, work: work, timeout: timeouts, created: map[string]time.Time{}, deleted: map[string]time.Time{}}
}

// create is the broker's side of a create of id at the fixture's now.
func (b *slowBroker) create(id string) (status int, err error) {
	now := b.f.now
	if _, ok := b.created[id]; !ok {
		if _, gone := b.deleted[id]; !gone {
			b.created[id] = now.Add(b.work)
		}
	}
	if b.timeout > 0 {
		b.timeout--
		if b.gateway {
			return 0, fake.HTTPError("PUT", http.StatusGatewayTimeout, "", "")
		}
		return 0, fake.Timeout()
	}
	if b.async {
		return http.StatusAccepted, nil
	}
	return http.StatusCreated, nil
}

// remove is the broker's side of a DELETE of id.
func (b *slowBroker) remove(id string) error {
	at, ok := b.created[id]
	if !ok || b.f.now.Before(at) {
		return fake.Gone() // nothing there yet: the create lands later
	}
	delete(b.created, id)
	b.deleted[id] = b.f.now
	return nil
}

// holds is every id the broker holds once all its work is done.
func (b *slowBroker) holds() []string {
	var ids []string
	for id := range b.created {
		ids = append(ids, id)
	}
	return ids
}

func (b *slowBroker) serveInstances() {
	b.f.broker.OnProvision(func(_ context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		status, err := b.create(r.InstanceID)
		if err != nil {
			return nil, err
		}
		return &osb.ProvisionResponse{StatusCode: status, Async: status == 202, Operation: "op"}, nil
	})
	b.f.broker.OnDeprovision(func(_ context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
		if err := b.remove(r.InstanceID); err != nil {
			return nil, err
		}
		return &osb.DeprovisionResponse{StatusCode: 200}, nil
	})
}

func (b *slowBroker) serveBindings() {
	b.f.broker.OnBind(func(_ context.Context, r *osb.BindRequest) (*osb.BindResponse, error) {
		status, err := b.create(r.BindingID)
		if err != nil {
			return nil, err
		}
		return &osb.BindResponse{StatusCode: status, Credentials: map[string]any{"password": secretValue}}, nil
	})
	b.f.broker.OnUnbind(func(_ context.Context, r *osb.UnbindRequest) (*osb.UnbindResponse, error) {
		if err := b.remove(r.BindingID); err != nil {
			return nil, err
		}
		return &osb.UnbindResponse{StatusCode: 200}, nil
	})
}

func TestStepInstance_ProvisionUnanswered_IsSentAgainNotMitigatedWhileTheBrokerWorks(t *testing.T) {
	for _, tc := range []struct {
		name           string
		async, gateway bool
	}{
		{name: "sync"},
		{name: "async", async: true},
		{name: "504 from a gateway", gateway: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			b := newSlowBroker(f, 90*time.Second, 1)
			b.async, b.gateway = tc.async, tc.gateway
			b.serveInstances()
			f.create("db", planSmall, `{"a":1}`)

			res := f.step("db")

			inst := f.get("db")
			assert.Equal(t, res.State, StateWaiting, res.Message)
			assert.Assert(t, inst.Status.OrphanMitigation == nil, "no mitigation while the broker may still work")
			assert.Assert(t, inst.Status.InFlight != nil, "the call stays in flight")
			assert.Assert(t, is.Contains(inst.Status.Retry.LastError, "the identical request is sent again"))

			res = f.settle("db")

			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0))
			puts := f.broker.CallsTo(fake.MethodProvision)
			assert.Assert(t, is.Len(puts, 2))
			assert.DeepEqual(t, puts[0].Request, puts[1].Request)
			f.advance(time.Hour)
			assert.DeepEqual(t, b.holds(), []string{f.get("db").CurrentExternalID()})
		})
	}
}

func TestStepInstance_ProvisionNeverAnswered_MitigatesOnlyAfterTheGraceAndLeavesNoOrphan(t *testing.T) {
	f := newFixture(t)
	// The broker works 5 minutes on each create; every request times out until then.
	b := newSlowBroker(f, 5*time.Minute, 1000)
	b.serveInstances()
	f.create("db", planSmall, "")
	start := f.now
	var deletes []time.Time
	f.broker.OnDeprovision(func(_ context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
		deletes = append(deletes, f.now)
		if err := b.remove(r.InstanceID); err != nil {
			return nil, err
		}
		return &osb.DeprovisionResponse{StatusCode: 200}, nil
	})

	for range 40 {
		res := f.step("db")
		if len(deletes) > 0 && f.get("db").Status.OrphanMitigation == nil {
			break
		}
		f.advance(max(res.RequeueAfter, time.Second))
	}

	assert.Assert(t, len(deletes) > 0, "orphan mitigation ran")
	assert.Assert(t, !deletes[0].Before(start.Add(DefaultMitigationGrace)), "the first DELETE waits out the grace (sent at %s)", deletes[0].Sub(start))
	inst := f.get("db")
	assert.Assert(t, inst.CurrentExternalID() != instanceOSB, "provisioned again under a new id")
	f.advance(time.Hour)
	_, held := b.created[instanceOSB]
	assert.Assert(t, !held, "the first id is not left at the broker")
}

func TestStepInstance_DeletedWhileTheBrokerMayStillCreate_DeletesAfterTheGrace(t *testing.T) {
	f := newFixture(t)
	b := newSlowBroker(f, 3*time.Minute, 1)
	b.serveInstances()
	f.create("db", planSmall, "")
	start := f.now
	f.step("db")
	f.advance(10 * time.Second)

	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	res := f.step("db")

	assert.Equal(t, res.State, StateWaiting, res.Message)
	assert.Equal(t, condition(f.get("db"), "Ready").Reason, ReasonDeprovisionWaitingForBroker)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0))
	assert.Equal(t, f.now.Add(res.RequeueAfter), start.Add(DefaultMitigationGrace))

	res = f.settle("db")

	assert.Equal(t, res.State, StateDeleted, res.Message)
	f.advance(time.Hour)
	assert.Assert(t, is.Len(b.holds(), 0), "nothing is left at the broker")
	_, err := f.st.Instances().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err))
}

func TestStepBinding_BindUnanswered_IsSentAgainNotUnboundWhileTheBrokerWorks(t *testing.T) {
	for _, gateway := range []bool{false, true} {
		f, _ := bindingFixture(t, nil)
		b := newSlowBroker(f, 90*time.Second, 1)
		b.gateway = gateway
		b.serveBindings()
		f.createBinding("app", nil)

		res := f.driveBinding("app")

		assert.Equal(t, res.State, StateSettled, res.Message)
		assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), 0))
		assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 2))
		assert.DeepEqual(t, b.holds(), []string{bindingOSB})
	}
}

func TestStepBinding_DeletedWhileTheBrokerMayStillBind_UnbindsAfterTheGrace(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	b := newSlowBroker(f, 3*time.Minute, 1)
	b.serveBindings()
	f.createBinding("app", nil)
	_, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))
	assert.NilError(t, err)
	f.advance(10 * time.Second)

	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	res := f.driveBinding("app")

	assert.Equal(t, res.State, StateDeleted, res.Message)
	f.advance(time.Hour)
	assert.Assert(t, is.Len(b.holds(), 0), "nothing is left at the broker")
}
