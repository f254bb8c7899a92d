package reconcile

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
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

// recorder is an Observer that writes down every call, per record.
type recorder struct {
	mu     sync.Mutex
	events map[Ref][]string
	items  map[Ref]Item
}

func newRecorder() *recorder { return &recorder{events: map[Ref][]string{}, items: map[Ref]Item{}} }

func (r *recorder) add(ref Ref, ev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[ref] = append(r.events[ref], ev)
}

func (r *recorder) RecordQueued(ref Ref) { r.add(ref, "queued") }
func (r *recorder) StepStarted(ref Ref, action string) {
	r.add(ref, "step "+action)
}
func (r *recorder) StepScheduled(ref Ref, at time.Time, why string) {
	ev := "scheduled"
	if at.IsZero() {
		ev += " (no time)"
	}
	r.add(ref, ev)
}
func (r *recorder) RecordFinished(it Item) {
	r.add(RefOf(it), "finished "+string(it.Outcome))
	r.mu.Lock()
	r.items[RefOf(it)] = it
	r.mu.Unlock()
}

func (r *recorder) of(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[Ref{Kind: v1alpha1.KindServiceInstance, Namespace: ns, Name: name}]
}

// failProvisions makes every provision fail with a broker that cannot be reached: a
// retry is scheduled, with backoff, each time.
func (f *fixture) failProvisions() {
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		return nil, &osb.TransportError{Method: "PUT", Path: "/v2/service_instances/x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	})
}

// The observer hears, for each record, that it was queued, each step as it starts,
// each wait between steps, and its final line, which is the summary's.
func TestRun_Observer_HearsEachRecordQueuedStepsWaitsAndFinish(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{realClock: true, pollInterval: 50 * time.Millisecond})
	f.asyncBroker(2, time.Millisecond) // accepted, then "succeeded" at the second poll
	f.instance("db")
	f.instance("claimed")
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "claimed", func(i *v1alpha1.ServiceInstance) error {
		return store.SetClaim(i, "alice@laptop/1", time.Minute, time.Now())
	})
	assert.NilError(t, err)
	rec := newRecorder()

	sum := f.run(Options{Workers: 2, MaxDuration: time.Minute, Observer: rec})

	assert.Equal(t, f.item(sum, "db").Outcome, Done)
	assert.DeepEqual(t, rec.of("db"), []string{
		"queued",
		"step " + engine.NextProvision, "scheduled",
		"step " + engine.NextPoll, "scheduled",
		"step " + engine.NextPoll,
		"finished done",
	})
	// A record someone else holds is never stepped: queued and finished.
	assert.DeepEqual(t, rec.of("claimed"), []string{"queued", "finished " + string(Skipped)})
	assert.Equal(t, len(rec.items), len(sum.Items))
	for _, it := range sum.Items {
		assert.DeepEqual(t, rec.items[RefOf(it)], it)
	}
}

// A run with a retry horizon does not wait for a retry due later than the horizon: it
// ends, and reports the record as waiting until its next attempt, with the attempt
// count and the last failure. Without a horizon, the run goes on retrying until
// MaxDuration runs out.
func TestRun_RetryHorizon_EndsTheRunInsteadOfWaitingForALaterRetry(t *testing.T) {
	// Backoffs of 1 s, 2 s, 4 s... (the fixture's jitter is nil), in virtual time.
	f := newFixtureWith(t, fixtureOptions{virtualClock: true, retryBase: time.Second})
	f.failProvisions()
	f.instance("db")
	rec := newRecorder()

	start := f.clock.Now()
	sum := f.run(Options{Workers: 1, MaxDuration: time.Minute, RetryHorizon: 2500 * time.Millisecond, Observer: rec})
	took := f.clock.Since(start)

	it := f.item(sum, "db")
	assert.Equal(t, it.Outcome, Waiting, it.Detail)
	assert.Assert(t, !sum.TimeUp)
	assert.Assert(t, took < 10*time.Second, "took %s: the run waited for a retry beyond the horizon", took)
	inst, err := f.st.Instances().Get(context.Background(), ns, "db")
	assert.NilError(t, err)
	// Each failed provision is followed by orphan mitigation (the broker may have
	// acted), then a provision again after the backoff: the attempts whose retry was
	// due within the horizon were made in this run.
	attempts := inst.Status.Retry.Attempts
	assert.Equal(t, attempts, int32(3), "retries after 1 s and 2 s; not after 4 s")
	assert.Assert(t, it.Steps >= int(attempts), "%d steps, %d attempts", it.Steps, attempts)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), int(attempts))
	assert.Assert(t, is.Contains(it.Detail, fmt.Sprintf("(attempt %d)", attempts)))
	assert.Assert(t, is.Contains(it.Detail, "connection refused"))
	assert.Assert(t, it.Until != nil && it.Until.After(start), "%v", it.Until)
	assert.Assert(t, strings.HasPrefix(it.OutcomeText(), "waiting until "), it.OutcomeText())
	_, claimed := store.LeaseOf(inst)
	assert.Assert(t, !claimed, "the run released its claim")
	events := rec.of("db")
	assert.Equal(t, events[0], "queued")
	assert.Equal(t, events[1], "step "+engine.NextProvision)
	assert.Equal(t, events[len(events)-1], "finished waiting")
	assert.Equal(t, len(events), 2+2*it.Steps-1, "%q: a step, then a wait, but none after the last", events)

}

// A record whose retry is not due when the run starts is reported waiting until then,
// with the attempt count and the last failure.
func TestRun_RetryNotDue_SaysAttemptAndLastError(t *testing.T) {
	f := newFixture(t)
	f.instance("db")
	next := f.now.Add(time.Hour)
	nextAt := metav1.NewTime(next)
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		i.Status.Retry = &v1alpha1.RetryState{Attempts: 4, Reason: engine.ReasonProvisionCallFailed, LastError: "broker said 500", NextRetryAt: &nextAt}
		return nil
	})
	assert.NilError(t, err)

	sum := f.run(Options{RetryHorizon: 10 * time.Second})

	it := f.item(sum, "db")
	assert.Equal(t, it.Outcome, Waiting)
	assert.Equal(t, it.Detail, engine.ReasonProvisionCallFailed+" (attempt 4): broker said 500; next: "+engine.NextProvision)
	assert.Equal(t, it.OutcomeText(), "waiting until "+next.Format(time.RFC3339))
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

// An interruption (Ctrl-C) lets the broker call under way finish and its outcome be
// recorded, starts nothing new, releases the claims and says what was left.
func TestRun_Interrupt_FinishesTheCallUnderWayAndSaysWhatIsLeft(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{virtualClock: true, pollInterval: 20 * time.Millisecond})
	a := f.asyncBroker(0, 200*time.Millisecond) // polls never finish
	for i := range 3 {
		f.instance(fmt.Sprintf("db-%d", i))
	}
	interrupt := make(chan struct{})
	var once sync.Once
	var pollsBefore int
	a.onPoll = func(_ string, n int) {
		once.Do(func() {
			pollsBefore = int(a.total.Load())
			close(interrupt)
		})
	}
	// The first poll closes interrupt after it has waited its 200 ms: the poll that
	// closes it, and those under way then, still finish and are recorded.
	sum, err := f.rec.Run(context.Background(), Options{Workers: 1, Interrupt: interrupt})

	assert.NilError(t, err)
	assert.Assert(t, sum.Interrupted)
	assert.Assert(t, !sum.TimeUp)
	assert.Equal(t, sum.Left, 3, "%+v", sum.Items)
	assert.Equal(t, int(a.total.Load()), pollsBefore, "no poll started after the interruption")
	var reached int
	for _, it := range sum.Items {
		assert.Equal(t, it.Outcome, InProgress, "%s: %s", it.Name, it.Detail)
		assert.Assert(t, strings.Contains(it.Detail, "interrupted"), "%s: %s", it.Name, it.Detail)
		inst, err := f.st.Instances().Get(context.Background(), ns, it.Name)
		assert.NilError(t, err)
		_, claimed := store.LeaseOf(inst)
		assert.Assert(t, !claimed, "%s: the run released its claim", it.Name)
		if it.Steps == 0 {
			continue
		}
		reached++
		// The call was not cut: its outcome (the operation runs at the broker) is
		// recorded, for the next run to poll.
		assert.Assert(t, inst.Status.InFlight != nil && inst.Status.InFlight.Async, "%s", it.Name)
	}
	assert.Assert(t, reached >= 1)
}

// An interruption before the run starts its work starts nothing.
func TestRun_InterruptedAtOnce_CallsNothing(t *testing.T) {
	f := newFixture(t)
	f.instance("db")
	interrupt := make(chan struct{})
	close(interrupt)

	sum, err := f.rec.Run(context.Background(), Options{Interrupt: interrupt})

	assert.Assert(t, sum.Interrupted)
	if err != nil {
		// The listing itself was stopped.
		assert.ErrorIs(t, err, context.Canceled)
		assert.Assert(t, sum.Items == nil)
	} else {
		assert.Equal(t, f.item(sum, "db").Detail, "not reached: interrupted")
		assert.Equal(t, sum.Left, 1)
	}
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}
