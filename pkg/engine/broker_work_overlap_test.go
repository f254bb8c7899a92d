package engine

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// busyBroker works on every request for work after it arrives, whatever its client
// does, and gives no answer (the client's timeout) to the first requests of the
// methods in noAnswer (a count each). It notes every request for an id that arrives
// while the broker still works on an earlier one for that id: two requests in flight
// for one id, which the engine never makes.
type busyBroker struct {
	f        *fixture
	work     time.Duration
	noAnswer map[string]int
	busy     map[string]time.Time
	overlaps []string
	arrived  map[string][]time.Time
	start    time.Time
}

func newBusyBroker(f *fixture, work time.Duration) *busyBroker {
	b := &busyBroker{f: f, work: work, noAnswer: map[string]int{}, busy: map[string]time.Time{}, arrived: map[string][]time.Time{}, start: f.now}
	f.broker.OnProvision(func(_ context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		if err := b.arrive(fake.MethodProvision, r.InstanceID); err != nil {
			return nil, err
		}
		return &osb.ProvisionResponse{StatusCode: 201}, nil
	})
	f.broker.OnUpdate(func(_ context.Context, r *osb.UpdateRequest) (*osb.UpdateResponse, error) {
		if err := b.arrive(fake.MethodUpdate, r.InstanceID); err != nil {
			return nil, err
		}
		return &osb.UpdateResponse{StatusCode: 200}, nil
	})
	f.broker.OnDeprovision(func(_ context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
		if err := b.arrive(fake.MethodDeprovision, r.InstanceID); err != nil {
			return nil, err
		}
		return &osb.DeprovisionResponse{StatusCode: 200}, nil
	})
	f.broker.OnBind(func(_ context.Context, r *osb.BindRequest) (*osb.BindResponse, error) {
		if err := b.arrive(fake.MethodBind, r.BindingID); err != nil {
			return nil, err
		}
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil
	})
	f.broker.OnUnbind(func(_ context.Context, r *osb.UnbindRequest) (*osb.UnbindResponse, error) {
		if err := b.arrive(fake.MethodUnbind, r.BindingID); err != nil {
			return nil, err
		}
		return &osb.UnbindResponse{StatusCode: 200}, nil
	})
	return b
}

func (b *busyBroker) arrive(method, id string) error {
	now := b.f.now
	if until, ok := b.busy[id]; ok && now.Before(until) {
		b.overlaps = append(b.overlaps, fmt.Sprintf("%s %s arrived at +%s while the broker still works on the last request for it (until +%s)",
			method, id, now.Sub(b.start), until.Sub(b.start)))
	}
	b.busy[id] = now.Add(b.work)
	b.arrived[method] = append(b.arrived[method], now)
	if b.noAnswer[method] > 0 {
		b.noAnswer[method]--
		return fake.Timeout()
	}
	return nil
}

// driveBusy steps the record named until it settles or is gone, moving the clock to
// each time the step asks to be called again.
func (f *fixture) driveBusy(binding bool, name string) Result {
	f.t.Helper()
	for range 60 {
		var res Result
		var err error
		if binding {
			b, gerr := f.st.Bindings().Get(context.Background(), ns, name)
			if store.IsNotFound(gerr) {
				return Result{State: StateDeleted}
			}
			assert.NilError(f.t, gerr)
			res, err = f.engine.StepBinding(context.Background(), b)
		} else {
			inst, gerr := f.st.Instances().Get(context.Background(), ns, name)
			if store.IsNotFound(gerr) {
				return Result{State: StateDeleted}
			}
			assert.NilError(f.t, gerr)
			res, err = f.engine.StepInstance(context.Background(), inst)
		}
		assert.NilError(f.t, err)
		if res.State == StateSettled || res.State == StateNeedsUser || res.State == StateDeleted {
			return res
		}
		f.advance(max(res.RequeueAfter, time.Second))
	}
	f.t.Fatalf("%s did not settle", name)
	return Result{}
}

// A request that got no answer may still be under way at the broker for the grace:
// whatever comes next for its id (the identical re-send, orphan mitigation's DELETE, a
// deletion, the retry of a DELETE or PATCH) waits until then, for instances and
// bindings alike.
func TestStep_UnansweredCall_NoOtherRequestForTheIdWhileTheBrokerMayWork(t *testing.T) {
	const work = 5 * time.Minute // under the grace, over the client's timeout
	for _, tc := range []struct {
		name     string
		binding  bool
		noAnswer map[string]int
		// setup brings the record to where the call is made; then is what the user does
		// after the first step (a deletion, say).
		setup func(f *fixture)
		then  func(f *fixture)
		want  State
	}{
		{name: "provision, re-sent", noAnswer: map[string]int{fake.MethodProvision: 1},
			setup: func(f *fixture) { f.create("db", planSmall, "") }, want: StateSettled},
		{name: "provision, re-sent without an answer either, then orphan mitigation", noAnswer: map[string]int{fake.MethodProvision: 2},
			setup: func(f *fixture) { f.create("db", planSmall, "") }, want: StateSettled},
		{name: "provision, then a deletion", noAnswer: map[string]int{fake.MethodProvision: 1},
			setup: func(f *fixture) { f.create("db", planSmall, "") },
			then: func(f *fixture) {
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
			}, want: StateDeleted},
		{name: "update", noAnswer: map[string]int{fake.MethodUpdate: 1},
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, "")
				setSpec(f.t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
			}, want: StateSettled},
		{name: "update, then a deletion", noAnswer: map[string]int{fake.MethodUpdate: 1},
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, `{"a":1}`)
				setSpec(f.t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2}`) })
			},
			then: func(f *fixture) {
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
			}, want: StateDeleted},
		{name: "deprovision", noAnswer: map[string]int{fake.MethodDeprovision: 1},
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, "")
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
			}, want: StateDeleted},
		{name: "bind, re-sent", binding: true, noAnswer: map[string]int{fake.MethodBind: 1},
			setup: func(f *fixture) { f.createBinding("app", nil) }, want: StateSettled},
		{name: "bind, re-sent without an answer either, then orphan mitigation", binding: true, noAnswer: map[string]int{fake.MethodBind: 2},
			setup: func(f *fixture) { f.createBinding("app", nil) }, want: StateSettled},
		{name: "bind, then a deletion", binding: true, noAnswer: map[string]int{fake.MethodBind: 1},
			setup: func(f *fixture) { f.createBinding("app", nil) },
			then: func(f *fixture) {
				assert.NilError(f.t, f.st.Bindings().Delete(context.Background(), ns, "app"))
			}, want: StateDeleted},
		{name: "unbind", binding: true, noAnswer: map[string]int{fake.MethodUnbind: 1},
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
			b.noAnswer = tc.noAnswer

			if tc.then != nil {
				if tc.binding {
					f.stepBinding(name)
				} else {
					f.step(name)
				}
				f.advance(10 * time.Second)
				tc.then(f)
			}
			res := f.driveBusy(tc.binding, name)

			assert.Equal(t, res.State, tc.want, res.Message)
			assert.Assert(t, is.Len(b.overlaps, 0), "%v", b.overlaps)
		})
	}
}

// A request that never reached the broker (the connection was refused, the name did not
// resolve) leaves it nothing to work on: it is retried after the backoff, as a broker
// that is down needs. One that timed out waits for the broker's work.
func TestStep_CallThatNeverReachedTheBroker_IsRetriedAfterTheBackoff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		waitWork bool
	}{
		{name: "connection refused", err: &osb.TransportError{Method: "PUT", Path: "/v2/service_instances/x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}},
		{name: "name not found", err: &osb.TransportError{Method: "PUT", Path: "/v2/service_instances/x", Err: &net.DNSError{Err: "no such host", Name: "broker.example", IsNotFound: true}}},
		{name: "client timeout", err: fake.Timeout(), waitWork: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) { return nil, tc.err })
			f.create("db", planSmall, "")

			f.step("db")

			r := f.get("db").Status.Retry
			assert.Assert(t, r != nil)
			if !tc.waitWork {
				assert.Assert(t, r.BrokerMayWorkUntil == nil)
				assert.Assert(t, r.NextRetryAt.Sub(f.now) < time.Minute, "retried after the backoff, not the grace: %s", r.NextRetryAt.Sub(f.now))
				return
			}
			assert.Assert(t, r.BrokerMayWorkUntil != nil)
			want := f.now.Add(DefaultMitigationGrace)
			assert.Assert(t, r.BrokerMayWorkUntil.Time.Equal(want), "%s", r.BrokerMayWorkUntil)
			assert.Assert(t, r.NextRetryAt.Time.Equal(want), "%s", r.NextRetryAt)
		})
	}
}

// recordFixture is a fixture for a test of an instance ("db") or, when binding, of a
// binding ("app", of a ready instance), and the record's name.
func recordFixture(t *testing.T, binding bool) (*fixture, string) {
	t.Helper()
	if binding {
		f, _ := bindingFixture(t, nil)
		return f, "app"
	}
	return newFixture(t), "db"
}
