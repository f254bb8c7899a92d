package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// fakeEvents records events as the engine sends them.
type fakeEvents struct {
	mu  sync.Mutex
	evs []Event
}

func (f *fakeEvents) Record(_ context.Context, ev Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evs = append(f.evs, ev)
}

func (f *fakeEvents) reasons() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.evs {
		out = append(out, e.Reason)
	}
	return out
}

// fakeSink counts the event objects an Aggregator writes.
type fakeSink struct {
	objects map[string]int // id -> count written
	writes  int
	err     error
}

func (s *fakeSink) Create(_ context.Context, ev Event, _ time.Time) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	s.writes++
	id := fmt.Sprintf("ev-%d", len(s.objects))
	s.objects[id] = 1
	return id, nil
}

func (s *fakeSink) Update(_ context.Context, id string, _ Event, count int, _ time.Time) error {
	if s.err != nil {
		return s.err
	}
	s.writes++
	s.objects[id] = count
	return nil
}

func TestEvents_SyncProvisionRecordsRequestedAndSucceeded(t *testing.T) {
	f := newFixture(t)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.create("db", planSmall, `{}`)

	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, rec.reasons(), []string{"ProvisionRequested", "ProvisionSucceeded"})
	for _, ev := range rec.evs {
		assert.Equal(t, ev.Name, "catalog-instance.db")
		assert.Equal(t, ev.Namespace, ns)
		assert.Equal(t, ev.Type, EventNormal)
	}
}

func TestEvents_FailedProvisionRecordsFailureAndRetry(t *testing.T) {
	f := newFixture(t)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	provisionReturns(f, 0, errors.New("connection refused"))
	f.create("db", planSmall, `{}`)

	f.step("db")

	reasons := rec.reasons()
	assert.Assert(t, is.Contains(reasons, "ProvisionRequested"))
	assert.Assert(t, is.Contains(reasons, "RetryScheduled"), "%v", reasons)
	for _, ev := range rec.evs {
		if ev.Reason == "RetryScheduled" {
			assert.Equal(t, ev.Type, EventWarning)
			assert.Assert(t, strings.Contains(ev.Note, "attempt 1"), ev.Note)
		}
	}
}

func TestEvents_NoRecorderRecordsNothing(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, `{}`)
	res := f.step("db") // must not panic with Config.Events nil
	assert.Equal(t, res.State, StateSettled, res.Message)
}

func TestAggregator_RecordRetried50TimesLeavesBoundedObjects(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sink := &fakeSink{objects: map[string]int{}}
	a := &Aggregator{Sink: sink, Now: func() time.Time { return now }}
	ctx := context.Background()
	for i := range 50 {
		a.Record(ctx, NewEvent("ns", "catalog-instance.db", EventNormal, "ProvisionRequested", "Provision", "provision sent to the broker"))
		a.Record(ctx, NewEvent("ns", "catalog-instance.db", EventWarning, "RetryScheduled", "Provision",
			fmt.Sprintf("ProvisionCallFailed: refused (attempt %d)", i+1)))
		now = now.Add(2 * time.Second)
	}
	assert.Equal(t, len(sink.objects), 2, "one object per distinct reason")
	// 100 s of retries, one write per 30 s interval and series.
	assert.Assert(t, sink.writes <= 2*5, "writes: %d", sink.writes)

	// A repeat after the window starts a new object; the old one is forgotten.
	now = now.Add(time.Hour)
	a.Record(ctx, NewEvent("ns", "catalog-instance.db", EventNormal, "ProvisionRequested", "Provision", "again"))
	assert.Equal(t, len(sink.objects), 3)
	assert.Equal(t, len(a.series), 1)
}

// The repeats an Aggregator holds back (seen within Interval of its last write) are
// written by Flush, so that a process that ends has counted every repeat it saw; a
// Flush with nothing held back writes nothing.
func TestAggregator_FlushWritesTheRepeatsHeldBack(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sink := &fakeSink{objects: map[string]int{}}
	a := &Aggregator{Sink: sink, Now: func() time.Time { return now }}
	ctx := context.Background()
	for range 3 {
		a.Record(ctx, NewEvent("ns", "catalog-instance.db", EventWarning, "ProvisionFailed", "Provision", "the broker answered 500"))
		now = now.Add(time.Second)
	}
	assert.DeepEqual(t, sink.objects, map[string]int{"ev-0": 1})

	a.Flush(ctx)
	assert.DeepEqual(t, sink.objects, map[string]int{"ev-0": 3})
	writes := sink.writes
	a.Flush(ctx)
	assert.Equal(t, sink.writes, writes)
}

func TestAggregator_SinkErrorIsLoggedNotRaised(t *testing.T) {
	var logged []error
	a := &Aggregator{Sink: &fakeSink{objects: map[string]int{}, err: errors.New("events.events.k8s.io is forbidden")},
		Log: func(err error) { logged = append(logged, err) }}
	a.Record(context.Background(), NewEvent("ns", "x", EventNormal, "R", "A", "n"))
	assert.Assert(t, is.Len(logged, 1))
}

func TestNewEvent_TruncatesNote(t *testing.T) {
	ev := NewEvent("ns", "x", EventWarning, "R", "A", strings.Repeat("é", 1000))
	assert.Assert(t, len(ev.Note) <= MaxEventNote, "%d", len(ev.Note))
	assert.Assert(t, strings.HasSuffix(ev.Note, "..."))
}
