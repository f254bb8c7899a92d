package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// asyncUpdateUnderWay leaves instance db with an asynchronous update in flight, as an
// update without --wait does, and makes the engine's waits move its clock on.
func asyncUpdateUnderWay(t *testing.T, f *fixture) {
	t.Helper()
	f.provisioned("db", planSmall, `{"a":1}`)
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "up"}, nil)
	f.step("db")
	assert.Assert(t, f.get("db").Status.InFlight != nil)
	f.engine.cfg.Sleep = func(_ context.Context, d time.Duration) error { f.advance(max(d, time.Second)); return nil }
}

func TestWaitOp_DrivesTheUpdateUnderWayToReady(t *testing.T) {
	f := newFixture(t)
	asyncUpdateUnderWay(t, f)
	f.broker.SetPollSequence("up", fake.InProgress("halfway"), fake.Succeeded())
	var seen []string

	res, err := f.engine.Wait(context.Background(), WaitRequest{Kind: v1alpha1.KindServiceInstance, Namespace: ns, Name: "db", For: WaitForReady,
		Follow: Follow{Progress: func(r Result) { seen = append(seen, r.Message) }}})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	inst := f.get("db")
	assert.Assert(t, inst.Status.InFlight == nil)
	assert.Equal(t, inst.Status.Provisioned.PlanID, planLarge)
	assert.Assert(t, len(f.broker.CallsTo(fake.MethodLastOperation)) >= 2, "the wait polled the broker itself")
	assert.Assert(t, len(seen) > 0, "progress is reported")
	l, held := store.LeaseOf(inst)
	assert.Assert(t, !held || l.Holder == "", "the claim is released: %+v", l)
}

func TestWaitOp_Timeout_NamesTheWaitAgain(t *testing.T) {
	f := newFixture(t)
	asyncUpdateUnderWay(t, f)
	f.engine.cfg.Sleep = nil // real waits, cut by the timeout
	f.broker.SetPollSequence("up", fake.InProgress("slow"))

	_, err := f.engine.Wait(context.Background(), WaitRequest{Kind: v1alpha1.KindServiceInstance, Namespace: ns, Name: "db", For: WaitForReady,
		Follow: Follow{Timeout: 50 * time.Millisecond}})

	var timeout *TimeoutError
	assert.Assert(t, errors.As(err, &timeout), "%v", err)
	assert.ErrorContains(t, err, `waiting for instance "db" to be ready`)
	assert.ErrorContains(t, err, `wait again with "kubectl catalog wait instance/db --for=condition=Ready -n dev"`)
}

func TestWaitOp_WhatThereIsNothingToDriveFor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record bool
		kind   string
		For    WaitFor
		state  State
		want   string
	}{
		{name: "a ready instance: Ready at once", record: true, kind: v1alpha1.KindServiceInstance, For: WaitForReady, state: StateSettled},
		{name: "an instance gone, for delete: done", kind: v1alpha1.KindServiceInstance, For: WaitForDelete, state: StateDeleted},
		{name: "a binding gone, for delete: done", kind: v1alpha1.KindServiceBinding, For: WaitForDelete, state: StateDeleted},
		{name: "an instance not found, for Ready", kind: v1alpha1.KindServiceInstance, For: WaitForReady,
			want: `instance "db" not found in namespace "dev": list them with "kubectl catalog get instances -n dev"`},
		{name: "a binding not found, for Ready", kind: v1alpha1.KindServiceBinding, For: WaitForReady,
			want: `binding "db" not found in namespace "dev": list them with "kubectl catalog get bindings -n dev"`},
		{name: "an instance not being deprovisioned, for delete", record: true, kind: v1alpha1.KindServiceInstance, For: WaitForDelete,
			want: `instance "db" in namespace "dev" is not being deprovisioned, so it will not go: deprovision it with "kubectl catalog deprovision db -n dev"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.record {
				f.provisioned("db", planSmall, "")
			}
			before := f.snapshot()

			res, err := f.engine.Wait(context.Background(), WaitRequest{Kind: tc.kind, Namespace: ns, Name: "db", For: tc.For})

			if tc.want != "" {
				assert.Error(t, err, tc.want)
			} else {
				assert.NilError(t, err)
				assert.Equal(t, res.State, tc.state)
			}
			f.assertUnchanged(before)
			assert.Equal(t, len(f.broker.Calls()), 0)
		})
	}
}

// TestWaitOp_RefusedWhilePolling_SaysWhyNotTheBrokersDescription: a wait on an
// asynchronous operation that the engine then refuses to poll (here the broker's record
// names credentials out of its namespace) ends with the refusal's reason, not the
// broker's last description of the operation ("halfway").
func TestWaitOp_RefusedWhilePolling_SaysWhyNotTheBrokersDescription(t *testing.T) {
	f := newFixture(t)
	asyncUpdateUnderWay(t, f)
	f.broker.SetPollSequence("up", fake.InProgress("halfway"))
	x := f.get("db")
	x.Status.InFlight.LastDescription = "halfway" // as a poll stores it
	_, err := f.st.Instances().Update(context.Background(), x)
	assert.NilError(t, err)
	_, err = f.st.Brokers().UpdateWithRetry(store.WithIntent(context.Background()), storetest.CatalogNamespace, brokerName, func(b *v1alpha1.Broker) error {
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Namespace: "elsewhere", Name: "creds"}}
		return nil
	})
	assert.NilError(t, err)
	f.advance(time.Hour)

	res, err := f.engine.Wait(context.Background(), WaitRequest{Kind: v1alpha1.KindServiceInstance, Namespace: ns, Name: "db", For: WaitForReady})

	assert.Assert(t, res.Refused, "%+v", res)
	assert.ErrorContains(t, err, `instance "db" was refused: `)
	assert.ErrorContains(t, err, `names credentials in namespace "elsewhere"`)
	assert.Assert(t, !strings.Contains(err.Error(), "halfway"), err.Error())
}

// The same for a synchronous call: a provision answered as the wait's time runs out is
// recorded (the instance is Ready), not dropped and left waiting for the grace.
func TestFollow_TimeoutOnceACallsAnswerCame_StoresItFirst(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	f.broker.OnProvision(func(ctx context.Context, _ *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		<-ctx.Done() // the answer comes as the wait's 50 ms run out
		return &osb.ProvisionResponse{StatusCode: 201}, nil
	})

	res, err := f.engine.follow(context.Background(), instanceFollowed(f.engine, nil), ns, "db", "provision", Follow{Wait: true, Timeout: 50 * time.Millisecond})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	inst := f.get("db")
	assert.Assert(t, inst.Status.InFlight == nil)
	assert.Assert(t, inst.Status.Provisioned != nil, "the provision's answer is recorded")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1)
}

// But a broker that has not answered when the time is up is not waited for: the wait
// ends on time (exit 124) and the call stays in flight, its answer unknown, as after a
// crash (reconcile finishes it once the broker's work may be over).
func TestFollow_TimeoutBeforeACallsAnswer_EndsOnTime(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	f.broker.OnProvision(func(ctx context.Context, _ *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
		}
		return &osb.ProvisionResponse{StatusCode: 201}, nil
	})

	start := time.Now()
	_, err := f.engine.follow(context.Background(), instanceFollowed(f.engine, nil), ns, "db", "provision", Follow{Wait: true, Timeout: 50 * time.Millisecond})

	var timeout *TimeoutError
	assert.Assert(t, errors.As(err, &timeout), "%v", err)
	assert.Assert(t, time.Since(start) < 30*time.Second, "the wait ended on time, not with the broker's work: %s", time.Since(start))
	inst := f.get("db")
	assert.Assert(t, inst.Status.InFlight != nil, "the call stays in flight")
	assert.Assert(t, inst.Status.Provisioned == nil)
}

// A --wait whose time runs out once a poll's answer came (here: as it came) stores
// that answer (the broker's Retry-After above all) before it says the time is up: the
// next poll, reconcile's, comes when the broker asked, not earlier. For an instance's
// poll and a binding's.
func TestWaitOp_TimeoutOnceAPollsAnswerCame_StoresItFirst(t *testing.T) {
	answer := func(ctx context.Context) (*osb.LastOperationResponse, error) {
		<-ctx.Done() // the answer comes as the wait's 50 ms run out
		return &osb.LastOperationResponse{State: osb.StateInProgress, Description: "halfway", RetryAfter: 5 * time.Second}, nil
	}
	for _, tc := range []struct {
		kind, name string
		// underWay leaves the record with an asynchronous operation in flight, and has
		// the broker answer its polls with answer after calling polled.
		underWay func(f *fixture, polled func())
		inFlight func(f *fixture) *v1alpha1.Operation
		method   string
	}{{
		kind: v1alpha1.KindServiceInstance, name: "db", method: fake.MethodLastOperation,
		underWay: func(f *fixture, polled func()) {
			asyncUpdateUnderWay(f.t, f)
			f.broker.OnLastOperation(func(ctx context.Context, _ *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
				polled()
				return answer(ctx)
			})
		},
		inFlight: func(f *fixture) *v1alpha1.Operation { return f.get("db").Status.InFlight },
	}, {
		kind: v1alpha1.KindServiceBinding, name: "app", method: fake.MethodBindingLastOperation,
		underWay: func(f *fixture, polled func()) {
			f.provisioned("db", planSmall, "")
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
			f.createBinding("app", nil)
			f.stepBinding("app")
			f.broker.OnBindingLastOperation(func(ctx context.Context, _ *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
				polled()
				return answer(ctx)
			})
		},
		inFlight: func(f *fixture) *v1alpha1.Operation { return f.getBinding("app").Status.InFlight },
	}} {
		t.Run(tc.kind, func(t *testing.T) {
			f := newFixture(t)
			var polledAt time.Time
			tc.underWay(f, func() { polledAt = f.now })
			assert.Assert(t, tc.inFlight(f) != nil)
			f.engine.cfg.Sleep = func(ctx context.Context, d time.Duration) error {
				f.advance(max(d, time.Second))
				if !polledAt.IsZero() {
					<-ctx.Done() // one poll: the drive waits for the next one until the wait ends
				}
				return ctx.Err()
			}

			_, err := f.engine.Wait(context.Background(), WaitRequest{Kind: tc.kind, Namespace: ns, Name: tc.name, For: WaitForReady,
				Follow: Follow{Timeout: 50 * time.Millisecond}})

			var timeout *TimeoutError
			assert.Assert(t, errors.As(err, &timeout), "%v", err)
			assert.Equal(t, len(f.broker.CallsTo(tc.method)), 1)
			op := tc.inFlight(f)
			assert.Assert(t, op != nil)
			assert.Equal(t, op.LastDescription, "halfway", "the poll's answer is stored")
			assert.Assert(t, op.NextPollAt != nil && !op.NextPollAt.Time.Before(polledAt.Add(5*time.Second)),
				"the next poll honours the broker's Retry-After: %v, polled at %v", op.NextPollAt, polledAt)
		})
	}
}

// The GET of an asynchronous bind's credentials, once its poll said it succeeded, is part
// of the poll: a --wait whose time runs out while the broker has not answered it ends on
// time (it used to wait for the broker client's own timeout), and the bind stays in
// flight, to be fetched again.
func TestFollow_TimeoutDuringTheCredentialsFetch_EndsOnTime(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
	f.createBinding("app", nil)
	f.stepBinding("app")
	f.advance(time.Minute) // the poll is due
	f.broker.SetBindingPollSequence("bop-1", fakePoll(osb.StateSucceeded))
	f.broker.OnGetBinding(func(ctx context.Context, _ *osb.GetBindingRequest) (*osb.GetBindingResponse, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
		}
		return &osb.GetBindingResponse{Credentials: map[string]any{"password": "late"}}, nil
	})

	start := time.Now()
	_, err := f.engine.follow(context.Background(), bindingFollowed(f.engine, nil), ns, "app", "bind", Follow{Wait: true, Timeout: 50 * time.Millisecond})

	var timeout *TimeoutError
	assert.Assert(t, errors.As(err, &timeout), "%v", err)
	assert.Assert(t, time.Since(start) < 30*time.Second, "the wait ended on time, not with the broker's work: %s", time.Since(start))
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodGetBinding)), 1)
	b := f.getBinding("app")
	assert.Assert(t, b.Status.InFlight != nil && b.Status.InFlight.Async, "the bind stays in flight: %+v", b.Status)
	assert.Assert(t, b.Status.Phase != v1alpha1.PhaseReady)
}
