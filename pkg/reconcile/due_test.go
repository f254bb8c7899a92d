package reconcile

import (
	"context"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// callTimes writes down the run's (virtual) time of each call the fake broker gets.
type callTimes struct {
	mu    sync.Mutex
	times map[string][]time.Time
}

func (c *callTimes) add(method string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.times == nil {
		c.times = map[string][]time.Time{}
	}
	c.times[method] = append(c.times[method], at)
}

func (c *callTimes) of(method string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.times[method]
}

// pollLater leaves instance "db" with its asynchronous provision accepted, its next
// poll due in (the engine's poll interval), as a "provision" stopped with Ctrl-C
// leaves it; and returns when that poll is due, as the record says.
func (f *fixture) pollLater(calls *callTimes) time.Time {
	f.t.Helper()
	ctx := context.Background()
	f.broker.OnProvision(func(_ context.Context, req *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		return &osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil
	})
	f.broker.OnLastOperation(func(context.Context, *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
		calls.add(fake.MethodLastOperation, f.clock.Now())
		return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
	})
	f.instance("db")
	inst, err := f.st.Instances().Get(ctx, ns, "db")
	assert.NilError(f.t, err)
	res, err := f.rec.Engine.StepInstance(ctx, inst)
	assert.NilError(f.t, err)
	assert.NilError(f.t, f.rec.Engine.Release(ctx, res.Instance))
	inst, err = f.st.Instances().Get(ctx, ns, "db")
	assert.NilError(f.t, err)
	op := inst.Status.InFlight
	assert.Assert(f.t, op != nil && op.Async && op.NextPollAt != nil, "%+v", inst.Status)
	return op.NextPollAt.Time
}

// retryLater gives instance "db" a failed provision whose retry is due in (as the
// backoff of an earlier command would), and returns when it is due.
func (f *fixture) retryLater(in time.Duration) time.Time {
	f.t.Helper()
	f.instance("db")
	next := f.clock.Now().Add(in)
	nextAt := metav1.NewTime(next)
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		i.Status.Retry = &v1alpha1.RetryState{Attempts: 1, Reason: engine.ReasonProvisionCallFailed, LastError: "broker said 500", NextRetryAt: &nextAt}
		return nil
	})
	assert.NilError(f.t, err)
	return next
}

// A run by hand (a retry horizon) waits for a poll or a retry that was set before it
// started and is due within the horizon, and takes it up no sooner than the record
// says; one due later, or after the run's time is up, and any with no horizon (the
// CronJob's and --serve's runs, whose loop comes back when it is due) or in a dry run,
// is reported waiting at once, with no broker call.
func TestRun_ByHand_WaitsForAStepDueWithinTheHorizon(t *testing.T) {
	cases := []struct {
		name string
		// poll: an asynchronous provision's next poll is due in 3 s; else a retry of
		// the provision is due in 4 s.
		poll bool
		opts Options
		// waits: the run waits and settles the record; else it reports it waiting.
		waits bool
	}{
		{name: "poll within the horizon", poll: true, opts: Options{RetryHorizon: 10 * time.Second}, waits: true},
		{name: "retry within the horizon", opts: Options{RetryHorizon: 10 * time.Second}, waits: true},
		{name: "poll beyond the horizon", poll: true, opts: Options{RetryHorizon: 2 * time.Second}},
		{name: "retry beyond the horizon", opts: Options{RetryHorizon: 2 * time.Second}},
		{name: "poll after the run's time is up", poll: true, opts: Options{RetryHorizon: 10 * time.Second, MaxDuration: 2 * time.Second}},
		{name: "retry without a horizon", opts: Options{}},
		{name: "poll without a horizon", poll: true, opts: Options{}},
		{name: "retry in a dry run", opts: Options{RetryHorizon: 10 * time.Second, DryRun: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureWith(t, fixtureOptions{virtualClock: true, pollInterval: 3 * time.Second})
			var calls callTimes
			method := fake.MethodProvision
			var due time.Time
			if tc.poll {
				method = fake.MethodLastOperation
				due = f.pollLater(&calls)
			} else {
				f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
					calls.add(fake.MethodProvision, f.clock.Now())
					return &osb.ProvisionResponse{StatusCode: 201}, nil
				})
				due = f.retryLater(4 * time.Second)
			}
			f.broker.ResetCalls()
			start := f.clock.Now()
			assert.Assert(t, due.After(start), "the step is not due when the run starts")
			o := tc.opts
			o.Workers = 1
			if o.MaxDuration == 0 {
				o.MaxDuration = time.Minute
			}

			sum := f.run(o)
			took := f.clock.Since(start)

			it := f.item(sum, "db")
			if !tc.waits {
				assert.Equal(t, it.Outcome, Waiting, it.Detail)
				assert.Equal(t, it.OutcomeText(), "waiting until "+due.UTC().Format(time.RFC3339))
				assert.Assert(t, is.Len(f.broker.Calls(), 0))
				assert.Equal(t, took, time.Duration(0), "the run ends at once")
				return
			}
			assert.Equal(t, it.Outcome, Done, "%s: %s", it.OutcomeText(), it.Detail)
			at := calls.of(method)
			assert.Equal(t, len(at), 1, "one %s, after the wait", method)
			assert.Assert(t, !at[0].Before(due), "%s at %s, before %s, when it was due", method, at[0], due)
			assert.Assert(t, at[0].Sub(due) <= time.Second, "%s at %s: more than a second after %s", method, at[0], due)
			assert.Assert(t, took < 10*time.Second, "took %s", took)
			inst, err := f.st.Instances().Get(context.Background(), ns, "db")
			assert.NilError(t, err)
			assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
			_, claimed := store.LeaseOf(inst)
			assert.Assert(t, !claimed, "the run released its claim")
		})
	}
}

// The observer hears that a record whose step is not due yet is waited for: it is
// queued, scheduled for when it is due, then stepped.
func TestRun_ByHand_ObserverHearsTheWaitForAStepSetBeforeTheRun(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{virtualClock: true, pollInterval: 3 * time.Second})
	var calls callTimes
	f.pollLater(&calls)
	rec := newRecorder()

	sum := f.run(Options{Workers: 1, MaxDuration: time.Minute, RetryHorizon: 10 * time.Second, Observer: rec})

	assert.Equal(t, f.item(sum, "db").Outcome, Done)
	assert.DeepEqual(t, rec.of("db"), []string{"queued", "scheduled", "step " + engine.NextPoll, "finished done"})
}

// A record waited for is reported as what it waits for when the run's time runs out
// first: its next poll, not "not reached".
func TestRun_ByHand_AStepWaitedForIsReportedWhenTheRunIsInterrupted(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{virtualClock: true, pollInterval: 3 * time.Second})
	var calls callTimes
	due := f.pollLater(&calls)
	interrupt := make(chan struct{})
	f.broker.ResetCalls()
	obs := &closeOnSchedule{recorder: newRecorder(), ch: interrupt}

	sum, err := f.rec.Run(context.Background(), Options{Workers: 1, RetryHorizon: 10 * time.Second, Interrupt: interrupt, Observer: obs})

	assert.NilError(t, err)
	assert.Assert(t, sum.Interrupted)
	assert.Equal(t, sum.Left, 1)
	it := f.item(sum, "db")
	assert.Equal(t, it.Outcome, InProgress, it.Detail)
	assert.Assert(t, is.Contains(it.Detail, "interrupted; next: "+engine.NextPoll))
	assert.Assert(t, it.Until != nil && it.Until.Equal(due), "%v", it.Until)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

// closeOnSchedule closes ch the first time a record is scheduled for a later step.
type closeOnSchedule struct {
	*recorder
	ch   chan struct{}
	once sync.Once
}

func (c *closeOnSchedule) StepScheduled(ref Ref, at time.Time, why string) {
	c.recorder.StepScheduled(ref, at, why)
	c.once.Do(func() { close(c.ch) })
}

// deletedWithFailedUnbind leaves instance "db" being deleted, as "deprovision" leaves it
// when the broker answered 500 to the unbind of its binding "app": the binding is marked
// for deletion with its retry due after the backoff (retryIn), and the instance waits
// for it. The broker then answers unbinds again.
func (f *fixture) deletedWithFailedUnbind() (retryAt time.Time) {
	f.t.Helper()
	ctx := context.Background()
	f.provisioned("db")
	f.bindAnswers("s3cret", time.Time{})
	f.bound("app")
	f.broker.UnbindReturns(nil, &osb.HTTPStatusError{Method: "DELETE", Path: "/v2/service_instances/x/service_bindings/y", StatusCode: 500})
	assert.NilError(f.t, f.st.Instances().Delete(ctx, ns, "db"))
	inst, err := f.st.Instances().Get(ctx, ns, "db")
	assert.NilError(f.t, err)
	res, err := f.rec.Engine.StepInstance(ctx, inst)
	assert.NilError(f.t, err)
	assert.Assert(f.t, is.Contains(res.Message, "waiting for its bindings (app)"))
	b, err := f.st.Bindings().Get(ctx, ns, "app")
	assert.NilError(f.t, err)
	assert.Assert(f.t, b.DeletionTimestamp != nil)
	bres, err := f.rec.Engine.StepBinding(ctx, b)
	assert.NilError(f.t, err)
	b = bres.Binding
	assert.Assert(f.t, b.Status.Retry != nil && b.Status.Retry.NextRetryAt != nil, "%+v", b.Status)
	assert.NilError(f.t, f.rec.Engine.ReleaseBinding(ctx, b))
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	f.broker.ResetCalls()
	return b.Status.Retry.NextRetryAt.Time
}

// An instance being deleted whose binding's unbind failed before the run: a run by hand
// waits for the binding's retry, unbinds it, then deprovisions the instance, stepping
// the instance only when the binding is done, not every poll interval.
func TestRun_ByHand_UnbindsAFailedBindingThenDeprovisions(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{virtualClock: true, retryBase: 2 * time.Second, pollInterval: time.Second})
	retryAt := f.deletedWithFailedUnbind()
	start := f.clock.Now()

	sum := f.run(Options{Workers: 1, MaxDuration: 5 * time.Minute, RetryHorizon: 10 * time.Second})
	took := f.clock.Since(start)

	assert.Equal(t, f.bindingItem(sum, "app").Outcome, Done, "%+v", sum.Items)
	it := f.item(sum, "db")
	assert.Equal(t, it.Outcome, Done, "%+v", sum.Items)
	assert.DeepEqual(t, f.broker.MethodNames(), []string{fake.MethodUnbind, fake.MethodDeprovision})
	assert.Assert(t, it.Steps <= 2, "the instance was stepped %d times: it waits for its binding, not for a timer", it.Steps)
	assert.Assert(t, took >= retryAt.Sub(start) && took < 5*time.Second, "took %s", took)
	assert.Assert(t, !sum.TimeUp)
	_, err := f.st.Instances().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err))
}

// When the binding an instance being deleted waits for cannot progress in this run (its
// retry is due beyond the horizon), the run ends at once: the instance is reported
// waiting for it, stepped once, and not every poll interval until --max-duration.
func TestRun_AnInstanceWaitingForABindingThatCannotProgressEndsTheRun(t *testing.T) {
	for _, horizon := range []time.Duration{time.Second, 0} {
		t.Run("horizon "+horizon.String(), func(t *testing.T) {
			f := newFixtureWith(t, fixtureOptions{virtualClock: true, retryBase: 20 * time.Second, pollInterval: time.Second})
			retryAt := f.deletedWithFailedUnbind()
			start := f.clock.Now()

			sum := f.run(Options{Workers: 1, MaxDuration: 5 * time.Minute, RetryHorizon: horizon})
			took := f.clock.Since(start)

			b := f.bindingItem(sum, "app")
			assert.Equal(t, b.OutcomeText(), "waiting until "+retryAt.UTC().Format(time.RFC3339), b.Detail)
			it := f.item(sum, "db")
			assert.Equal(t, it.OutcomeText(), string(Waiting), it.Detail)
			assert.Assert(t, is.Contains(it.Detail, "waiting for its bindings (app) to be unbound first"))
			assert.Equal(t, it.Steps, 1)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
			assert.Equal(t, took, time.Duration(0))
			assert.Assert(t, !sum.TimeUp)
		})
	}
}

// An instance being deleted that waits for its bindings with a synchronous call still
// in flight (a DELETE written ahead whose answer was lost, and a binding made before it)
// is parked as one with nothing in flight: a run by hand steps the binding when it is
// due and does not step the instance every poll interval meanwhile.
func TestRun_ByHand_AnInstanceWaitingForItsBindingsWithASyncCallInFlightIsParked(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{virtualClock: true, retryBase: 2 * time.Second, pollInterval: time.Second})
	retryAt := f.deletedWithFailedUnbind()
	ctx := context.Background()
	_, err := f.st.Instances().UpdateWithRetry(ctx, ns, "db", func(inst *v1alpha1.ServiceInstance) error {
		inst.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationDeprovision, InstanceID: inst.Spec.ExternalID,
			PlanID: inst.Status.Provisioned.PlanID, StartedAt: metav1.NewTime(f.clock.Now())}
		return nil
	})
	assert.NilError(t, err)
	inst, err := f.st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	res, err := f.rec.Engine.StepInstance(ctx, inst)
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(res.Message, "waiting for its bindings (app)"))
	f.broker.ResetCalls()
	start := f.clock.Now()

	sum := f.run(Options{Workers: 1, MaxDuration: 5 * time.Minute, RetryHorizon: 10 * time.Second})
	took := f.clock.Since(start)

	assert.Equal(t, f.bindingItem(sum, "app").Outcome, Done, "%+v", sum.Items)
	it := f.item(sum, "db")
	assert.Equal(t, it.Outcome, Done, "%+v", sum.Items)
	assert.Assert(t, it.Steps <= 2, "the instance was stepped %d times: it waits for its binding, not for a timer", it.Steps)
	assert.Assert(t, took >= retryAt.Sub(start) && took < 5*time.Second, "took %s", took)
	assert.Assert(t, !sum.TimeUp)
}
