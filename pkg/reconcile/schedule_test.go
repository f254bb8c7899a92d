package reconcile

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// asyncBroker makes the fake broker accept provisions asynchronously and answer each
// poll after pollTime, "succeeded" at the polls-th poll of an instance (never when
// polls is 0). It counts the polls and the most broker calls seen at once.
type asyncBroker struct {
	mu       sync.Mutex
	polls    map[string]int
	total    atomic.Int32
	running  atomic.Int32
	peak     atomic.Int32
	onPoll   func(instanceID string, n int)
	pollTime time.Duration
	// provisionTime is how long a provision takes; none by default.
	provisionTime time.Duration
	onProvision   func()
}

func (f *fixture) asyncBroker(polls int, pollTime time.Duration) *asyncBroker {
	a := &asyncBroker{polls: map[string]int{}, pollTime: pollTime}
	enter := func() func() {
		n := a.running.Add(1)
		for p := a.peak.Load(); n > p && !a.peak.CompareAndSwap(p, n); p = a.peak.Load() {
		}
		return func() { a.running.Add(-1) }
	}
	f.broker.OnProvision(func(_ context.Context, req *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		defer enter()()
		if a.provisionTime > 0 {
			f.clock.Sleep(a.provisionTime)
		}
		if a.onProvision != nil {
			a.onProvision()
		}
		return &osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op-" + req.InstanceID}, nil
	})
	f.broker.OnLastOperation(func(ctx context.Context, req *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
		defer enter()()
		select {
		case <-f.clock.After(a.pollTime):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		a.mu.Lock()
		a.polls[req.InstanceID]++
		n := a.polls[req.InstanceID]
		a.mu.Unlock()
		a.total.Add(1)
		if a.onPoll != nil {
			a.onPoll(req.InstanceID, n)
		}
		if polls > 0 && n >= polls {
			return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
		}
		return &osb.LastOperationResponse{State: osb.StateInProgress, Description: fmt.Sprintf("poll %d", n)}, nil
	})
	return a
}

// One worker keeps 50 operations in flight: while a record waits for its next poll,
// the worker polls the others. The run takes about the broker's time (polls x poll
// time), not the sum of the records' waits, as it would if a worker waited on each.
// The run's time is virtual: only the broker's and the queue's waits count, not how
// busy the machine is.
func TestRun_OneWorkerDrivesManyAsyncRecordsBetweenTheirPolls(t *testing.T) {
	const (
		records  = 50
		polls    = 3
		pollTime = 20 * time.Millisecond
		interval = time.Second // the engine's wait between two polls
	)
	f := newFixtureWith(t, fixtureOptions{virtualClock: true, pollInterval: interval})
	a := f.asyncBroker(polls, pollTime)
	for i := range records {
		f.instance(fmt.Sprintf("db-%02d", i))
	}

	sum := f.run(Options{Workers: 1, MaxDuration: time.Minute})

	took, err := time.ParseDuration(sum.Took)
	assert.NilError(t, err)
	floor := time.Duration(records*polls) * pollTime
	// Records keep times to the second: a wait of an interval is at least half of it
	// on average.
	waits := time.Duration(records*polls) * (pollTime + interval/2)
	t.Logf("%d records x %d polls of %s on 1 worker: %s (broker time %s; a worker waiting on each record: about %s)",
		records, polls, pollTime, took, floor, waits)
	assert.Equal(t, sum.Counts[Done], records, "%+v", sum.Counts)
	for _, it := range sum.Items {
		assert.Equal(t, it.Steps, 1+polls, "%s: a provision, then %d polls", it.Name, polls)
	}
	assert.Equal(t, int(a.total.Load()), records*polls)
	assert.Equal(t, a.peak.Load(), int32(1), "one worker: one broker call at a time")
	assert.Assert(t, took < 2*floor+interval, "took %s: the worker waited on records instead of polling others (floor %s)", took, floor)
}

func TestRun_TimeUp_ReportsWhatIsLeft(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{virtualClock: true, pollInterval: 50 * time.Millisecond})
	a := f.asyncBroker(0, 150*time.Millisecond) // polls never finish
	a.provisionTime = a.pollTime
	for i := range 6 {
		f.instance(fmt.Sprintf("db-%d", i))
	}

	sum := f.run(Options{Workers: 1, MaxDuration: 600 * time.Millisecond})

	assert.Assert(t, sum.TimeUp)
	var inProgress, notReached int
	for _, it := range sum.Items {
		assert.Equal(t, it.Outcome, InProgress, "%s: %s", it.Name, it.Detail)
		if it.Steps == 0 {
			notReached++
			assert.Equal(t, it.Detail, "not reached: --max-duration ran out first")
			continue
		}
		inProgress++
		assert.Assert(t, it.Until != nil, "%s: the next poll is shown", it.Name)
		inst, err := f.st.Instances().Get(context.Background(), ns, it.Name)
		assert.NilError(t, err)
		assert.Assert(t, inst.Status.InFlight != nil && inst.Status.InFlight.Async, "%s is left pending", it.Name)
		_, claimed := store.LeaseOf(inst)
		assert.Assert(t, !claimed, "%s: the run released its claim", it.Name)
	}
	assert.Assert(t, inProgress > 0 && notReached > 0, "in progress %d, not reached %d", inProgress, notReached)
}

func TestRun_Interrupted_LeavesRecordsPendingAndReleased(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{realClock: true, pollInterval: 20 * time.Millisecond})
	a := f.asyncBroker(0, 10*time.Millisecond)
	for i := range 4 {
		f.instance(fmt.Sprintf("db-%d", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.onPoll = func(_ string, n int) {
		if n == 3 {
			cancel()
		}
	}

	sum, err := f.rec.Run(ctx, Options{Workers: 2})

	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, len(sum.Items), 4)
	for _, it := range sum.Items {
		assert.Equal(t, it.Outcome, InProgress, "%s: %s", it.Name, it.Detail)
		inst, err := f.st.Instances().Get(context.Background(), ns, it.Name)
		assert.NilError(t, err)
		assert.Assert(t, inst.HasPendingWork(), "%s is left pending", it.Name)
		_, claimed := store.LeaseOf(inst)
		assert.Assert(t, !claimed, "%s: the run released its claim", it.Name)
	}
}

// Between two steps (a provision accepted, its first poll) a record keeps the run's claim when the next poll is near, so no
// other reconcile takes it over; when it is far, the claim is released meanwhile.
func TestRun_ClaimWhileARecordWaitsForItsNextPoll(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hold      time.Duration
		wantClaim bool
	}{
		{name: "next poll soon: kept", hold: 0, wantClaim: true},
		{name: "next poll later than the hold: released", hold: 100 * time.Millisecond, wantClaim: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The next poll comes 2 s after the provision.
			f := newFixtureWith(t, fixtureOptions{virtualClock: true, pollInterval: 2 * time.Second})
			f.rec.holdClaimFor = tc.hold
			f.asyncBroker(1, time.Millisecond)
			f.instance("db")
			var between []string // the claim's holder each time the record waits for its next step
			obs := &onScheduled{recorder: newRecorder(), do: func(Ref) {
				inst, err := f.st.Instances().Get(context.Background(), ns, "db")
				assert.Check(t, err)
				l, _ := store.LeaseOf(inst)
				between = append(between, l.Holder)
			}}

			sum := f.run(Options{Workers: 1, MaxDuration: 10 * time.Second, Observer: obs})

			assert.Equal(t, f.item(sum, "db").Outcome, Done)
			want := ""
			if tc.wantClaim {
				want = "reconcile-test"
			}
			assert.DeepEqual(t, between, []string{want})
		})
	}
}

// onScheduled is a recorder that also calls do, in the run's own goroutine, each time
// a record is queued for its next step: after the step, before the next one.
type onScheduled struct {
	*recorder
	do func(Ref)
}

func (o *onScheduled) StepScheduled(ref Ref, at time.Time, why string) {
	o.do(ref)
	o.recorder.StepScheduled(ref, at, why)
}

func TestRun_Drain_StartsNoNewRecordAndLeavesThemPending(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		f.instance(fmt.Sprintf("db-%d", i))
	}
	drain := make(chan struct{})
	close(drain)

	sum := f.run(Options{Workers: 1, Drain: drain})

	assert.Assert(t, sum.TimeUp)
	for _, it := range sum.Items {
		assert.Equal(t, it.Outcome, InProgress, "%s: %s", it.Name, it.Detail)
		assert.Equal(t, it.Steps, 0, it.Name)
	}
	assert.Assert(t, is.Len(f.broker.Calls(), 0), "no broker call after the drain")
}
