package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
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

// reasonsOf lists the reasons recorded about one record's ConfigMap, in order.
func (f *fakeEvents) reasonsOf(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.evs {
		if e.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

func TestEvents_BindingLifecycleOnEveryPath(t *testing.T) {
	f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.Plans[0].BindingRotatable = true })
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("app", nil)
	f.broker.BindReturns(nil, fake.HTTPError("PUT", 500, "", "boom"))
	f.stepBinding("app") // 500: orphan mitigation
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	f.stepBinding("app") // the mitigating unbind
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil)
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	_, err := f.engine.RotateScheduled(context.Background(), ns, "app")
	assert.NilError(t, err)
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	assert.Equal(t, f.driveBinding("app").State, StateDeleted)

	assert.DeepEqual(t, rec.reasonsOf("catalog-binding.app"), []string{
		"BindRequested", "OrphanMitigationStarted", "BindFailed", "RetryScheduled",
		"OrphanMitigationRequested", "OrphanMitigationFinished", "RetryScheduled",
		"BindRequested", "BindSucceeded",
		"RotationRequested", "BindRequested", "BindSucceeded", "UnbindRequested", "RotationFinished",
		"UnbindRequested", "UnbindSucceeded",
	})
	for _, e := range rec.evs {
		assert.Assert(t, !strings.Contains(e.Note, secretValue), "%s: %s", e.Reason, e.Note)
	}
}

func TestEvents_FailedBindRecordsBindFailed(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("bad", nil)
	f.broker.BindReturns(nil, fake.HTTPError("PUT", 400, "BadRequest", "nope"))
	f.driveBinding("bad")

	assert.DeepEqual(t, rec.reasonsOf("catalog-binding.bad"), []string{"BindRequested", "BindFailed"})
	ev := rec.evs[len(rec.evs)-1]
	assert.Equal(t, ev.Type, EventWarning)
	assert.Assert(t, is.Contains(ev.Note, "nope"))
}

func TestEvents_OrphanMitigationThatSucceededIsNoFailure(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("app", nil)
	f.broker.BindReturns(nil, fake.HTTPError("PUT", 500, "", "boom"))
	f.stepBinding("app")
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	f.stepBinding("app")
	reasons := rec.reasonsOf("catalog-binding.app")
	assert.Assert(t, !slices.Contains(reasons, "OrphanMitigationFailed"), "a mitigation that succeeded is no failure: %v", reasons)
	assert.Assert(t, slices.Contains(reasons, "OrphanMitigationFinished"), "%v", reasons)
}

func TestEvents_DeprovisionRecordsSucceededOnRelease(t *testing.T) {
	f := newFixture(t)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.provisioned("db", planSmall, `{}`)
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	for range 5 {
		if f.step("db").State == StateDeleted {
			break
		}
	}
	reasons := rec.reasonsOf("catalog-instance.db")
	assert.Assert(t, len(reasons) >= 2, "%v", reasons)
	assert.DeepEqual(t, reasons[len(reasons)-2:], []string{"DeprovisionRequested", "DeprovisionSucceeded"})
}

func TestEvents_DeletionWithNothingAtTheBrokerRecordsReleased(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("app", nil)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	assert.Equal(t, f.driveBinding("app").State, StateDeleted)
	assert.DeepEqual(t, rec.reasonsOf("catalog-binding.app"), []string{"Released"})
}

// whenRecorded is an EventRecorder that also calls at with each event as it is recorded.
type whenRecorded struct {
	fakeEvents
	at func(Event)
}

func (w *whenRecorded) Record(ctx context.Context, ev Event) {
	w.at(ev)
	w.fakeEvents.Record(ctx, ev)
}

// The Event of what the broker answered goes out with the write of the outcome, not
// after it: when it is recorded, the record still holds the call in flight.
func TestEvents_SucceededIsRecordedWithTheOutcomeWriteNotAfterIt(t *testing.T) {
	f := newFixture(t)
	inFlightWhenRecorded := map[string]bool{}
	rec := &whenRecorded{}
	rec.at = func(ev Event) { inFlightWhenRecorded[ev.Reason] = f.get("db").Status.InFlight != nil }
	f.engine.cfg.Events = rec
	f.create("db", planSmall, `{}`)

	assert.Equal(t, f.step("db").State, StateSettled)

	assert.DeepEqual(t, rec.reasons(), []string{"ProvisionRequested", "ProvisionSucceeded"})
	assert.Assert(t, inFlightWhenRecorded["ProvisionSucceeded"], "recorded only once the outcome was stored")
	assert.Equal(t, rec.evs[1].Note, "the broker answered that the provision succeeded")
}

// An outcome whose write fails leaves no Normal-only trail: the Event of the broker's
// answer is followed by a Warning saying it was not recorded and what happens then.
func TestEvents_OutcomeThatCannotBeStored_IsFollowedByAWarning(t *testing.T) {
	f := newFixture(t)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	provisionReturns(f, 201, nil)
	refuseOutcomeWrite(f)
	f.create("db", planSmall, "")

	_, err := f.engine.StepInstance(context.Background(), f.get("db"))

	assert.Assert(t, err != nil)
	assert.DeepEqual(t, rec.reasons(), []string{"ProvisionRequested", "ProvisionSucceeded", ReasonOutcomeNotRecorded})
	last := rec.evs[2]
	assert.Equal(t, last.Type, EventWarning)
	assert.Equal(t, last.Action, "Provision")
	assert.Equal(t, last.Name, "catalog-instance.db")
	assert.Assert(t, is.Contains(last.Note, "the broker's answer to the provision could not be recorded"))
	assert.Assert(t, is.Contains(last.Note, "it is sent again"))
	assert.Assert(t, f.get("db").Status.InFlight != nil, "the call stays in flight, as the Warning says")
}

// A failure is recorded once it is stored: an outcome write that fails records no
// failure the record does not hold.
func TestEvents_FailureIsRecordedOnlyOnceStored(t *testing.T) {
	f := newFixture(t)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.broker.ProvisionReturns(nil, fake.HTTPError("PUT", 400, "BadRequest", "nope"))
	refuseOutcomeWrite(f)
	f.create("db", planSmall, "")

	_, err := f.engine.StepInstance(context.Background(), f.get("db"))

	assert.Assert(t, err != nil)
	assert.DeepEqual(t, rec.reasons(), []string{"ProvisionRequested"})
}

// A deletion the broker confirmed whose record cannot be released: the Event of the
// broker's answer is followed by a Warning.
func TestEvents_UnbindConfirmedButNotReleased_IsFollowedByAWarning(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("app", nil)
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), ns, "app"))
	f.broker.UnbindReturns(&osb.UnbindResponse{StatusCode: 200}, nil)
	refuse := false
	f.cluster.Core.PrependReactor("update", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !refuse {
			return false, nil, nil
		}
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	f.hook = func(p HookPoint, _ *v1alpha1.Operation) {
		if p == HookAfterBrokerCall {
			refuse = true
		}
	}

	_, err := f.engine.StepBinding(context.Background(), f.getBinding("app"))

	assert.Assert(t, err != nil)
	assert.DeepEqual(t, rec.reasonsOf("catalog-binding.app"), []string{
		"BindRequested", "BindSucceeded", "UnbindRequested", "UnbindSucceeded", ReasonOutcomeNotRecorded,
	})
	last := rec.evs[len(rec.evs)-1]
	assert.Equal(t, last.Type, EventWarning)
	assert.Equal(t, last.Action, "Unbind")
	assert.Assert(t, is.Contains(last.Note, "the record is not released yet"))
	assert.Assert(t, f.getBinding("app").Status.InFlight != nil)
}

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

// nsForbiddingSink forbids the writes of namespace forbid, and counts the others' writes.
type nsForbiddingSink struct {
	forbid string
	writes map[string]int
}

func (s *nsForbiddingSink) Create(_ context.Context, ev Event, _ time.Time) (string, error) {
	if ev.Namespace == s.forbid {
		return "", apierrors.NewForbidden(k8sschema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x", errors.New("exceeded quota: events"))
	}
	s.writes[ev.Namespace]++
	return ev.Namespace + "/" + ev.Reason, nil
}

func (s *nsForbiddingSink) Update(_ context.Context, id string, ev Event, _ int, _ time.Time) error {
	if ev.Namespace == s.forbid {
		return apierrors.NewForbidden(k8sschema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x", errors.New("exceeded quota: events"))
	}
	s.writes[ev.Namespace]++
	return nil
}

// A forbidden write pauses the Events of its namespace only, for EventsPausedFor.
func TestAggregator_AForbiddenWritePausesOnlyItsNamespace(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sink := &nsForbiddingSink{forbid: "full", writes: map[string]int{}}
	a := &Aggregator{Sink: sink, Now: func() time.Time { return now }}
	ctx := context.Background()
	a.Record(ctx, NewEvent("full", "x", EventNormal, "R0", "A", "n"))
	for _, reason := range []string{"R1", "R2", "R3"} {
		a.Record(ctx, NewEvent("other", "x", EventNormal, reason, "A", "n"))
		a.Record(ctx, NewEvent("full", "x", EventNormal, reason, "A", "n"))
	}
	assert.Equal(t, sink.writes["other"], 3)
	sink.forbid = ""
	a.Record(ctx, NewEvent("full", "x", EventNormal, "R4", "A", "n"))
	assert.Equal(t, sink.writes["full"], 0, "written while paused")
	now = now.Add(EventsPausedFor + time.Second)
	a.Record(ctx, NewEvent("full", "x", EventNormal, "R5", "A", "n"))
	assert.Equal(t, sink.writes["full"], 1, "not written after the pause")
}
