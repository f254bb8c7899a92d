package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// killSender makes the broker of b end the driver that sends the first request of
// method (its context ends during the call, as a killed process's would), while the
// broker goes on working on the request for b.work: the driver stores nothing.
func (b *busyBroker) killSender(method string, cancel context.CancelFunc) {
	died := func(id string) error {
		if err := b.arrive(method, id); err != nil {
			return err
		}
		cancel()
		return &osb.TransportError{Method: method, Path: "/v2", Err: context.Canceled, Canceled: true}
	}
	killed := false
	once := func(id string) (bool, error) {
		if killed {
			return false, b.arrive(method, id)
		}
		killed = true
		return true, died(id)
	}
	switch method {
	case fake.MethodProvision:
		b.f.broker.OnProvision(func(_ context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
			if k, err := once(r.InstanceID); k || err != nil {
				return nil, err
			}
			return &osb.ProvisionResponse{StatusCode: 201}, nil
		})
	case fake.MethodUpdate:
		b.f.broker.OnUpdate(func(_ context.Context, r *osb.UpdateRequest) (*osb.UpdateResponse, error) {
			if k, err := once(r.InstanceID); k || err != nil {
				return nil, err
			}
			return &osb.UpdateResponse{StatusCode: 200}, nil
		})
	case fake.MethodDeprovision:
		b.f.broker.OnDeprovision(func(_ context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
			if k, err := once(r.InstanceID); k || err != nil {
				return nil, err
			}
			return &osb.DeprovisionResponse{StatusCode: 200}, nil
		})
	case fake.MethodBind:
		b.f.broker.OnBind(func(_ context.Context, r *osb.BindRequest) (*osb.BindResponse, error) {
			if k, err := once(r.BindingID); k || err != nil {
				return nil, err
			}
			return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil
		})
	case fake.MethodUnbind:
		b.f.broker.OnUnbind(func(_ context.Context, r *osb.UnbindRequest) (*osb.UnbindResponse, error) {
			if k, err := once(r.BindingID); k || err != nil {
				return nil, err
			}
			return &osb.UnbindResponse{StatusCode: 200}, nil
		})
	}
}

// otherProcess is another driver of the fixture's cluster, a process of its own (its
// own store, so its own sight of claims and sends), whose wall clock is skew off the
// fixture's.
func (f *fixture) otherProcess(holder string, skew time.Duration) *Engine {
	cfg := f.engine.cfg
	now := func() time.Time { return f.now.Add(skew) }
	cfg.Holder, cfg.Now = holder, now
	cfg.Store = f.cluster.Store(store.WithClock(now))
	return New(cfg)
}

// driveWith steps the record named with e until it settles or is gone, moving the
// clock to each time the step asks to be called again.
func (f *fixture) driveWith(e *Engine, binding bool, name string) Result {
	f.t.Helper()
	for range 200 {
		var res Result
		var err error
		if binding {
			b, gerr := f.st.Bindings().Get(context.Background(), ns, name)
			if store.IsNotFound(gerr) {
				return Result{State: StateDeleted}
			}
			assert.NilError(f.t, gerr)
			res, err = e.StepBinding(context.Background(), b)
		} else {
			inst, gerr := f.st.Instances().Get(context.Background(), ns, name)
			if store.IsNotFound(gerr) {
				return Result{State: StateDeleted}
			}
			assert.NilError(f.t, gerr)
			res, err = e.StepInstance(context.Background(), inst)
		}
		assert.NilError(f.t, err)
		if res.State == StateSettled || res.State == StateNeedsUser || res.State == StateDeleted {
			return res
		}
		f.advance(min(max(res.RequeueAfter, time.Second), time.Minute))
	}
	f.t.Fatalf("%s did not settle", name)
	return Result{}
}

// A driver ended during a synchronous call (killed, interrupted) stores nothing: the
// request may still be at the broker after its claim has run out. Another driver, a
// process of its own whatever its clock says, sends nothing for the id (the re-send, a
// deletion's DELETE, orphan mitigation) until the grace for the broker's work has
// passed since the send; for instances and bindings, every call.
func TestStep_SenderKilledDuringTheCall_NoOtherRequestForTheIdWhileTheBrokerMayWork(t *testing.T) {
	const work = 5 * time.Minute // over the claim, under the grace
	for _, tc := range []struct {
		name    string
		binding bool
		method  string
		// setup brings the record to where the call is made; then is what the user
		// does once the sender is gone (a deletion, say).
		setup func(f *fixture)
		then  func(f *fixture)
		want  State
	}{
		{name: "provision", method: fake.MethodProvision,
			setup: func(f *fixture) { f.create("db", planSmall, "") }, want: StateSettled},
		{name: "provision, then a deletion", method: fake.MethodProvision,
			setup: func(f *fixture) { f.create("db", planSmall, "") },
			then: func(f *fixture) {
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
			}, want: StateDeleted},
		{name: "update", method: fake.MethodUpdate,
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, "")
				setSpec(f.t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
			}, want: StateSettled},
		{name: "update, then a deletion", method: fake.MethodUpdate,
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, `{"a":1}`)
				setSpec(f.t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2}`) })
			},
			then: func(f *fixture) {
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
			}, want: StateDeleted},
		{name: "deprovision", method: fake.MethodDeprovision,
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, "")
				assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
			}, want: StateDeleted},
		{name: "bind", binding: true, method: fake.MethodBind,
			setup: func(f *fixture) { f.createBinding("app", nil) }, want: StateSettled},
		{name: "bind, then a deletion", binding: true, method: fake.MethodBind,
			setup: func(f *fixture) { f.createBinding("app", nil) },
			then: func(f *fixture) {
				assert.NilError(f.t, f.st.Bindings().Delete(context.Background(), ns, "app"))
			}, want: StateDeleted},
		{name: "unbind", binding: true, method: fake.MethodUnbind,
			setup: func(f *fixture) {
				f.createBinding("app", nil)
				assert.Equal(f.t, f.driveBinding("app").State, StateSettled)
				assert.NilError(f.t, f.st.Bindings().Delete(context.Background(), ns, "app"))
			}, want: StateDeleted},
	} {
		for _, skew := range []time.Duration{0, store.MaxClockSkew / 2, -store.MaxClockSkew / 2} {
			t.Run(fmt.Sprintf("%s, the other driver's clock %s off", tc.name, skew), func(t *testing.T) {
				f, name := recordFixture(t, tc.binding)
				tc.setup(f)
				b := newBusyBroker(f, work)
				ctx, cancel := context.WithCancel(context.Background())
				b.killSender(tc.method, cancel)

				var err error
				if tc.binding {
					_, err = f.engine.StepBinding(ctx, f.getBinding(name))
				} else {
					_, err = f.engine.StepInstance(ctx, f.get(name))
				}
				assert.ErrorIs(t, err, context.Canceled)
				sent := f.now
				assert.Assert(t, is.Len(b.arrived[tc.method], 1))
				if tc.then != nil {
					f.advance(10 * time.Second)
					tc.then(f)
				}

				res := f.driveWith(f.otherProcess("reconcile@other/1", skew), tc.binding, name)

				assert.Equal(t, res.State, tc.want, res.Message)
				assert.Assert(t, is.Len(b.overlaps, 0), "%v", b.overlaps)
				var next []time.Time
				for _, at := range b.arrived {
					next = append(next, at...)
				}
				assert.Assert(t, len(next) > 1, "the other driver sent something for the id")
				for _, at := range next {
					if at.Equal(sent) {
						continue
					}
					assert.Assert(t, !at.Before(sent.Add(DefaultMitigationGrace)),
						"a request for the id was sent %s after the killed driver's, within the grace (%s)", at.Sub(sent), DefaultMitigationGrace)
				}
			})
		}
	}
}

// A request that got no answer records until when the broker may work on it
// (status.retry.brokerMayWorkUntil) by its driver's clock. Another driver whose clock is
// minutes ahead (within store.MaxClockSkew of the first) does not take that time as
// passed before it has waited the grace itself: nothing is sent for the id while the
// broker may still work.
func TestStep_UnansweredCall_OtherDriverWithAClockAhead_SendsNothingWhileTheBrokerMayWork(t *testing.T) {
	const work = 5 * time.Minute
	for _, tc := range []struct {
		name    string
		binding bool
		method  string
		setup   func(f *fixture)
	}{
		{name: "provision", method: fake.MethodProvision, setup: func(f *fixture) { f.create("db", planSmall, "") }},
		{name: "deprovision", method: fake.MethodDeprovision, setup: func(f *fixture) {
			f.provisioned("db", planSmall, "")
			assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
		}},
		{name: "bind", binding: true, method: fake.MethodBind, setup: func(f *fixture) { f.createBinding("app", nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, name := recordFixture(t, tc.binding)
			tc.setup(f)
			b := newBusyBroker(f, work)
			b.noAnswer = map[string]int{tc.method: 1}
			if tc.binding {
				f.stepBinding(name)
			} else {
				f.step(name)
			}
			assert.Assert(t, is.Len(b.arrived[tc.method], 1))

			res := f.driveWith(f.otherProcess("reconcile@other/1", 9*time.Minute), tc.binding, name)

			assert.Assert(t, res.State == StateSettled || res.State == StateDeleted, res.Message)
			assert.Assert(t, is.Len(b.overlaps, 0), "%v", b.overlaps)
		})
	}
}
