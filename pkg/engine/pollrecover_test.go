package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// failingBrokers fails every read of a broker's client with err: what a step reads
// before its call fails.
type failingBrokers struct{ err error }

func (b failingBrokers) ClientFor(context.Context, *v1alpha1.Broker) (osb.Client, error) {
	return nil, b.err
}

// pollCase is an asynchronous operation of one record, brought to where it is polled.
type pollCase struct {
	name    string
	binding bool
	// setup brings the record to its operation in flight, accepted (202).
	setup func(f *fixture)
	// op is the operation polled; phase and reason what the record shows while it goes on.
	op     v1alpha1.OperationType
	phase  v1alpha1.Phase
	reason string
}

func pollCases() []pollCase {
	deleteInstance := func(f *fixture) {
		assert.NilError(f.t, f.st.Instances().Delete(context.Background(), ns, "db"))
	}
	deleteBinding := func(f *fixture) {
		assert.NilError(f.t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	}
	return []pollCase{
		{name: "provision", op: v1alpha1.OperationProvision, phase: v1alpha1.PhaseProvisioning, reason: ReasonProvisionInProgress,
			setup: func(f *fixture) {
				provisionReturns(f, 202, nil)
				f.create("db", planSmall, "")
			}},
		{name: "update", op: v1alpha1.OperationUpdate, phase: v1alpha1.PhaseUpdating, reason: ReasonUpdateInProgress,
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, "")
				f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "uop-1"}, nil)
				setSpec(f.t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
			}},
		{name: "deprovision", op: v1alpha1.OperationDeprovision, phase: v1alpha1.PhaseDeprovisioning, reason: ReasonDeprovisionInProgress,
			setup: func(f *fixture) {
				f.provisioned("db", planSmall, "")
				f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 202, Async: true, Operation: "dop-1"}, nil)
				deleteInstance(f)
			}},
		{name: "deprovision of orphan mitigation", op: v1alpha1.OperationDeprovision, phase: v1alpha1.PhaseOrphanMitigation, reason: ReasonOrphanMitigationInProgress,
			setup: func(f *fixture) {
				provisionReturns(f, 202, nil)
				f.create("db", planSmall, "")
				f.broker.SetPollSequence("op-1", fakePoll(osb.StateFailed), fakePoll(osb.StateSucceeded))
				f.broker.DeprovisionReturns(&osb.DeprovisionResponse{StatusCode: 202, Async: true, Operation: "dop-1"}, nil)
			}},
		{name: "bind", binding: true, op: v1alpha1.OperationBind, phase: v1alpha1.PhaseBinding, reason: ReasonBindInProgress,
			setup: func(f *fixture) {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
				f.createBinding("app", nil)
			}},
		{name: "unbind of orphan mitigation", binding: true, op: v1alpha1.OperationUnbind, phase: v1alpha1.PhaseOrphanMitigation, reason: ReasonOrphanMitigationInProgress,
			setup: func(f *fixture) {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
				f.broker.SetBindingPollSequence("bop-1", fakePoll(osb.StateFailed), fakePoll(osb.StateSucceeded))
				f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 202, Async: true, Operation: "ubop-1"}, nil)
				f.createBinding("app", nil)
			}},
		{name: "unbind", binding: true, op: v1alpha1.OperationUnbind, phase: v1alpha1.PhaseUnbinding, reason: ReasonUnbindInProgress,
			setup: func(f *fixture) {
				f.createBinding("app", nil)
				assert.Equal(f.t, f.driveBinding("app").State, StateSettled)
				f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 202, Async: true, Operation: "ubop-1"}, nil)
				deleteBinding(f)
			}},
	}
}

// fakePoll is a poll answered with state.
func fakePoll(state osb.LastOperationState) fake.PollStep {
	return fake.PollStep{Response: &osb.LastOperationResponse{State: state}}
}

// pollRig drives one record of a pollCase.
type pollRig struct {
	f  *fixture
	c  pollCase
	t  *testing.T
	st osb.LastOperationState // what the broker's polls answer from now on
}

func newPollRig(t *testing.T, c pollCase) *pollRig {
	var f *fixture
	if c.binding {
		f, _ = bindingFixture(t, nil)
	} else {
		f = newFixture(t)
	}
	r := &pollRig{f: f, c: c, t: t, st: osb.StateInProgress}
	c.setup(f)
	// Brought to the operation accepted, polled once "in progress".
	for range 20 {
		if op := r.status().InFlight; op != nil && op.Async && op.Type == c.op {
			break
		}
		res, err := r.step(context.Background())
		assert.NilError(t, err)
		f.advance(max(res.RequeueAfter, time.Second))
	}
	op := r.status().InFlight
	assert.Assert(t, op != nil && op.Async && op.Type == c.op, "no %s in flight: %+v", c.op, r.status())
	answer := func() (*osb.LastOperationResponse, error) {
		return &osb.LastOperationResponse{State: r.st, Description: "working"}, nil
	}
	f.broker.OnLastOperation(func(context.Context, *osb.LastOperationRequest) (*osb.LastOperationResponse, error) { return answer() })
	f.broker.OnBindingLastOperation(func(context.Context, *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
		return answer()
	})
	f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": secretValue}}, nil)
	return r
}

func (r *pollRig) record() opRecord {
	if r.c.binding {
		return r.f.getBinding("app")
	}
	return r.f.get("db")
}

func (r *pollRig) status() *v1alpha1.OperationStatus { return r.record().OpStatus() }

// step steps the stored record once with ctx.
func (r *pollRig) step(ctx context.Context) (Result, error) {
	if r.c.binding {
		return r.f.engine.StepBinding(ctx, r.f.getBinding("app"))
	}
	return r.f.engine.StepInstance(ctx, r.f.get("db"))
}

// toNextPoll moves the clock to the record's next poll.
// failWith makes the step's read of the broker fail with readErr, and its poll (of an
// instance or a binding) with callErr, each when not nil.
func (r *pollRig) failWith(readErr, callErr error) {
	if readErr != nil {
		r.f.engine.cfg.Brokers = failingBrokers{readErr}
	}
	if callErr != nil {
		fail := func() (*osb.LastOperationResponse, error) { return nil, callErr }
		r.f.broker.OnLastOperation(func(context.Context, *osb.LastOperationRequest) (*osb.LastOperationResponse, error) { return fail() })
		r.f.broker.OnBindingLastOperation(func(context.Context, *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
			return fail()
		})
	}
}

func (r *pollRig) toNextPoll() {
	if op := r.status().InFlight; op != nil && op.NextPollAt != nil && op.NextPollAt.After(r.f.now) {
		r.f.now = op.NextPollAt.Time
	}
}

// A poll that fails before its call (the broker record could not be read: an API
// timeout under load) is recorded as a failure with a retry, while the operation goes
// on at the broker. The next poll the broker answers "in progress" shows the operation
// again, in the record as stored: its phase, no retry, its Ready condition in progress,
// whatever quiet polls skip; the operation then ends as usual. Each asynchronous
// operation of each record kind.
func TestPoll_InProgressAfterAFailureBeforeThePoll_ShowsTheOperationAgain(t *testing.T) {
	for _, c := range pollCases() {
		t.Run(c.name, func(t *testing.T) {
			r := newPollRig(t, c)
			f := r.f
			ctx := context.Background()

			// The poll's reads fail: a failure, recorded, with a retry.
			brokers := f.engine.cfg.Brokers
			f.engine.cfg.Brokers = failingBrokers{errors.New("the API server did not answer in time")}
			r.toNextPoll()
			_, err := r.step(ctx)
			assert.NilError(t, err)
			st := r.status()
			assert.Equal(t, st.Phase, v1alpha1.PhaseFailed)
			assert.Assert(t, st.Retry != nil)
			assert.Assert(t, st.InFlight != nil && st.InFlight.Type == c.op)

			// The next poll is answered "in progress": the record shows the operation.
			f.engine.cfg.Brokers = brokers
			r.toNextPoll()
			updates := countUpdates(f)
			res, err := r.step(ctx)
			assert.NilError(t, err)
			assert.Equal(t, res.State, StateWaiting, res.Message)
			assert.Assert(t, updates.Load() >= 1, "the poll that shows the operation again wrote nothing")
			st = r.status()
			assert.Equal(t, st.Phase, c.phase)
			assert.Assert(t, st.Retry == nil, "retry kept: %+v", st.Retry)
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			assert.Assert(t, ready != nil)
			assert.Equal(t, ready.Reason, c.reason, ready.Message)
			assert.Assert(t, st.InFlight != nil && st.InFlight.Type == c.op)

			// The operation ends as usual.
			r.st = osb.StateSucceeded
			var end Result
			if c.binding {
				end = f.driveWith(f.engine, true, "app")
			} else {
				end = f.driveWith(f.engine, false, "db")
			}
			assert.Assert(t, end.State == StateSettled || end.State == StateDeleted, "%s: %s", end.State, end.Message)
		})
	}
}

// deadlinePassed is a context whose deadline has passed while it does not say so yet:
// a request's context, derived from it, may report the end first.
type deadlinePassed struct {
	context.Context
	at time.Time
}

func (c deadlinePassed) Deadline() (time.Time, bool) { return c.at, true }

// A poll whose read or call fails because of the step's own context (the deadline of a
// "wait --timeout", passed or too close for client-go's rate limiter to start a request;
// a cancellation) is an interruption: nothing is written, the error says so. A broker's
// own timeout is a failure of the poll, recorded as before.
func TestPoll_FailureFromTheStepsOwnDeadline_IsAnInterruption_NothingWritten(t *testing.T) {
	rateLimited := errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	timedOut := fmt.Errorf("reading broker %q: %w", brokerName, context.DeadlineExceeded)
	cancelled := fmt.Errorf("reading broker %q: %w", brokerName, context.Canceled)
	for _, kind := range []struct {
		name string
		c    pollCase
	}{{"instance", pollCases()[0]}, {"binding", pollCases()[4]}} { // provision, bind
		for _, tc := range []struct {
			name string
			// ctx is the step's context; readErr fails the read before the poll, callErr
			// the poll itself.
			ctx              func() (context.Context, context.CancelFunc)
			readErr, callErr error
			interrupted      bool
		}{
			{name: "read refused by the rate limiter near the deadline", readErr: rateLimited, interrupted: true,
				ctx: func() (context.Context, context.CancelFunc) {
					return context.WithTimeout(context.Background(), time.Hour)
				}},
			{name: "read timed out at the deadline", readErr: timedOut, interrupted: true,
				ctx: func() (context.Context, context.CancelFunc) {
					return deadlinePassed{context.Background(), time.Now().Add(-time.Millisecond)}, func() {}
				}},
			{name: "read cancelled", readErr: cancelled, interrupted: true,
				ctx: func() (context.Context, context.CancelFunc) {
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					return ctx, cancel
				}},
			{name: "poll timed out at the deadline", interrupted: true,
				callErr: &osb.TransportError{Method: "GET", Path: "/v2", Timeout: true, Err: context.DeadlineExceeded},
				ctx: func() (context.Context, context.CancelFunc) {
					return deadlinePassed{context.Background(), time.Now().Add(-time.Millisecond)}, func() {}
				}},
			{name: "poll refused by the rate limiter near the deadline", callErr: rateLimited, interrupted: true,
				ctx: func() (context.Context, context.CancelFunc) {
					return context.WithTimeout(context.Background(), time.Hour)
				}},
			{name: "the broker's own timeout, no deadline", interrupted: false,
				callErr: &osb.TransportError{Method: "GET", Path: "/v2", Timeout: true, Err: context.DeadlineExceeded},
				ctx:     func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
			{name: "the broker's own timeout, well before the deadline", interrupted: false,
				callErr: &osb.TransportError{Method: "GET", Path: "/v2", Timeout: true, Err: context.DeadlineExceeded},
				ctx: func() (context.Context, context.CancelFunc) {
					return context.WithTimeout(context.Background(), time.Hour)
				}},
			{name: "a read failure, well before the deadline", readErr: errors.New("the API server did not answer in time"), interrupted: false,
				ctx: func() (context.Context, context.CancelFunc) {
					return context.WithTimeout(context.Background(), time.Hour)
				}},
		} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				r := newPollRig(t, kind.c)
				f := r.f
				r.failWith(tc.readErr, tc.callErr)
				r.toNextPoll()
				before := r.record()
				updates := countUpdates(f)
				ctx, cancel := tc.ctx()
				defer cancel()
				res, err := r.step(ctx)
				after := r.record()
				if !tc.interrupted {
					assert.NilError(t, err)
					assert.Assert(t, after.GetResourceVersion() != before.GetResourceVersion(), "the failure was not recorded")
					return
				}
				assert.Assert(t, err != nil, "no error for an interrupted step")
				assert.Equal(t, res.State, StateWaiting, res.Message)
				// A claim taken for the poll may be written; nothing else.
				assert.Equal(t, after.OpStatus().Phase, before.OpStatus().Phase)
				assert.Assert(t, after.OpStatus().Retry == nil, "a failure was recorded: %+v", after.OpStatus().Retry)
				assert.DeepEqual(t, meta.FindStatusCondition(after.OpStatus().Conditions, v1alpha1.ConditionReady),
					meta.FindStatusCondition(before.OpStatus().Conditions, v1alpha1.ConditionReady))
				if tc.readErr != nil {
					assert.Equal(t, int(updates.Load()), 0, "record writes")
				}
			})
		}
	}
}

// A cancellation that is not the step's (a broker client or an API call that returns a
// Canceled error of its own while the step's context is live) is a failure of the poll,
// recorded like any other (a failure before the poll with a retry, a failed poll as
// the poll's outcome); only the step's own context ending is an
// interruption. The read before the poll and the poll itself, of an instance and a
// binding, under a context with and without a deadline.
func TestPoll_CancellationNotOfTheStepsContext_IsAFailure_Recorded(t *testing.T) {
	cancelled := fmt.Errorf("reading broker %q: %w", brokerName, context.Canceled)
	pollCancelled := &osb.TransportError{Method: "GET", Path: "/v2", Canceled: true, Err: context.Canceled}
	for _, kind := range []struct {
		name string
		c    pollCase
	}{{"instance", pollCases()[0]}, {"binding", pollCases()[4]}} { // provision, bind
		for _, tc := range []struct {
			name             string
			readErr, callErr error
			deadline         bool
		}{
			{name: "read cancelled, no deadline", readErr: cancelled},
			{name: "read cancelled, well before the deadline", readErr: cancelled, deadline: true},
			{name: "poll cancelled, no deadline", callErr: pollCancelled},
			{name: "poll cancelled, well before the deadline", callErr: pollCancelled, deadline: true},
		} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				r := newPollRig(t, kind.c)
				r.failWith(tc.readErr, tc.callErr)
				r.toNextPoll()
				before := r.record()
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tc.deadline {
					ctx, cancel = context.WithTimeout(ctx, time.Hour)
				}
				defer cancel()
				_, err := r.step(ctx)
				assert.NilError(t, err, "a cancellation not of the step's context was taken for an interruption")
				after := r.record()
				assert.Assert(t, after.GetResourceVersion() != before.GetResourceVersion(), "the failure was not recorded")
				st := after.OpStatus()
				if tc.readErr != nil {
					assert.Assert(t, st.Retry != nil, "no retry recorded: %+v", st)
				}
				assert.Assert(t, st.InFlight != nil && st.InFlight.Type == kind.c.op, "the operation in flight was lost: %+v", st.InFlight)
			})
		}
	}
}

// A retry kept from an earlier send of the call (its attempts count the backoff) is no
// failure shown: once the re-sent call is accepted, its polls answered "in progress"
// stay quiet, and the retry stays until the outcome.
func TestPoll_RetryOfAnEarlierSend_KeptAndPollsStayQuiet(t *testing.T) {
	f := newFixture(t)
	sent := 0
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		sent++
		if sent == 1 {
			return nil, &osb.HTTPStatusError{Method: "PUT", Path: "/v2/service_instances/" + instanceOSB, StatusCode: 500}
		}
		return &osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil
	})
	f.create("db", planSmall, "")
	res := f.step("db")
	assert.Assert(t, f.get("db").Status.Retry != nil, res.Message)
	for range 10 {
		if op := f.get("db").Status.InFlight; op != nil && op.Async {
			break
		}
		f.advance(max(res.RequeueAfter, time.Second))
		res = f.step("db")
	}
	st := f.get("db").Status
	assert.Assert(t, st.InFlight != nil && st.InFlight.Async, "not accepted: %+v", st)
	assert.Assert(t, st.Retry != nil, "the earlier send's retry is kept until the outcome")
	assert.Equal(t, st.Phase, v1alpha1.PhaseProvisioning)

	f.broker.SetPollSequence("op-1", fake.InProgress("10%"), fake.InProgress("50%"), fake.InProgress("90%"), fakePoll(osb.StateSucceeded))
	cur := f.get("db")
	updates := countUpdates(f)
	for range 4 {
		f.advance(max(res.RequeueAfter, time.Second))
		var err error
		res, err = f.engine.StepInstance(context.Background(), cur)
		assert.NilError(t, err)
		if res.Instance != nil {
			cur = res.Instance
		}
		if res.State == StateWaiting {
			assert.Equal(t, cur.Status.Phase, v1alpha1.PhaseProvisioning)
		}
	}
	assert.Equal(t, res.State, StateSettled, res.Message)
	// The claim, written before the first poll, is still fresh: only the outcome is written.
	assert.Equal(t, int(updates.Load()), 1, "record writes for 4 polls")
	assert.Assert(t, f.get("db").Status.Retry == nil)
}
