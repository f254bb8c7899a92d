package engine

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// A provision the broker fails (500) 50 times over is retried 50 times, each time
// with orphan mitigation first, by short runs, each a process of its own (reconcile
// --max-duration 5s, as a CronJob runs it), with an Aggregator of its own that it
// flushes before it ends (cmd.Execute). The namespace is left with a handful of Event
// objects about the record, one per reason, whose counts are the attempts: every
// retry is counted, none makes an object of its own.
//
// This is the unit form of the e2e test TestEvents_ARecordRetriedFiftyTimes_LeavesFewEvents,
// on a fake clock, with the Events kept by seriesEvents (kube.APIEventSink's tests check
// that it keeps them so in the cluster).
func TestEvents_ARecordRetriedFiftyTimesByShortRuns_LeavesFewEventsCountingEveryAttempt(t *testing.T) {
	const (
		attempts = 50
		run      = 5 * time.Second // each run's --max-duration
	)
	f := newFixture(t)
	// Backoffs of 1 s, then 2 s: a few attempts a run, as the e2e test's runs make
	// (their backoff is shorter, their steps slower).
	f.engine.cfg.RetryBase, f.engine.cfg.RetryMax = time.Second, 2*time.Second
	f.broker.ProvisionReturns(nil, fake.HTTPError(http.MethodPut, http.StatusInternalServerError, "", "database on fire"))
	f.create("db", planSmall, `{}`)
	events := &seriesEvents{}
	ctx := context.Background()

	runs := 0
	for f.get("db").Status.Retry == nil || f.get("db").Status.Retry.Attempts < attempts {
		runs++
		agg := &Aggregator{Sink: events.sink(), Now: func() time.Time { return f.now }}
		f.engine.cfg.Events = agg
		for end := f.now.Add(run); f.now.Before(end); {
			res := f.step("db")
			assert.Equal(t, res.State, StateWaiting, res.Message)
			if inst := f.get("db"); inst.Status.Retry != nil && inst.Status.Retry.Attempts == attempts && inst.Status.OrphanMitigation == nil {
				break // retry 50 is scheduled: the e2e test stops looping here
			}
			f.advance(res.RequeueAfter)
		}
		agg.Flush(ctx)
		// The next run comes a minute later.
		f.advance(time.Minute)
	}
	made := len(f.broker.CallsTo(fake.MethodProvision))
	assert.Equal(t, made, attempts)
	assert.Assert(t, runs > 1, "the retries span several runs")

	assert.Assert(t, len(events.objects) > 0)
	assert.Assert(t, len(events.objects) <= 6, "%d Event objects for %d attempts", len(events.objects), made)
	counts := map[string]int{}
	for _, obj := range events.objects {
		assert.Equal(t, obj.ev.Namespace, ns)
		assert.Equal(t, obj.ev.Name, "catalog-instance.db")
		counts[obj.ev.Reason] += obj.count
	}
	// Each attempt is requested, fails and is mitigated once, and its retry is
	// scheduled twice: when the failure is recorded (orphan mitigation first), and
	// once mitigation is done (after the backoff).
	assert.DeepEqual(t, counts, map[string]int{
		"ProvisionRequested":        attempts,
		"ProvisionFailed":           attempts,
		"OrphanMitigationStarted":   attempts,
		"OrphanMitigationRequested": attempts,
		"OrphanMitigationFinished":  attempts,
		"RetryScheduled":            2 * attempts,
	})
}

// seriesEvents keeps event objects as the cluster keeps kube.APIEventSink's Events: one
// object per series (record, type, reason, action), which a later process (another
// sink) continues, adding the repeats it saw to the count the object had.
type seriesEvents struct {
	mu      sync.Mutex
	objects map[string]*seriesObject
}

type seriesObject struct {
	ev    Event
	count int
}

// sink is one process's sink.
func (e *seriesEvents) sink() EventSink { return &seriesSink{events: e, base: map[string]int{}} }

type seriesSink struct {
	events *seriesEvents
	base   map[string]int // the count an object had when this sink continued it, by id
}

func (s *seriesSink) Create(_ context.Context, ev Event, _ time.Time) (string, error) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	if s.events.objects == nil {
		s.events.objects = map[string]*seriesObject{}
	}
	id := ev.Namespace + "/" + ev.Name + "/" + ev.Type + "/" + ev.Reason + "/" + ev.Action
	if obj, ok := s.events.objects[id]; ok {
		s.base[id] = obj.count
		obj.ev, obj.count = ev, obj.count+1
		return id, nil
	}
	s.events.objects[id] = &seriesObject{ev: ev, count: 1}
	return id, nil
}

func (s *seriesSink) Update(_ context.Context, id string, ev Event, count int, _ time.Time) error {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	obj := s.events.objects[id]
	obj.ev, obj.count = ev, s.base[id]+count
	return nil
}
