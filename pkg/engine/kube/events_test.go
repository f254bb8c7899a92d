package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

func TestAPIEventSink_CreatesThenPatchesSeries(t *testing.T) {
	cs := k8sfake.NewClientset()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := &engine.Aggregator{Sink: &APIEventSink{Client: cs, Instance: "cli"}, Now: func() time.Time { return now }}
	ctx := context.Background()
	for range 3 {
		a.Record(ctx, engine.NewEvent("ns", "catalog-binding.b", engine.EventWarning, "BindFailed", "Bind", "the broker refused"))
		now = now.Add(time.Minute)
	}
	list, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(list.Items, 1))
	ev := list.Items[0]
	assert.Equal(t, ev.Regarding.Kind, "ConfigMap")
	assert.Equal(t, ev.Regarding.Name, "catalog-binding.b")
	assert.Equal(t, ev.ReportingController, "kubectl-catalog")
	assert.Equal(t, ev.ReportingInstance, "cli")
	assert.Equal(t, ev.Reason, "BindFailed")
	assert.Assert(t, ev.Series != nil)
	assert.Equal(t, ev.Series.Count, int32(3))
}

// A later process (another Aggregator, another sink) seeing the same event continues the
// series of the Event an earlier one made: one object, the counts added up.
func TestAPIEventSink_ALaterProcessContinuesTheSeries(t *testing.T) {
	cs := k8sfake.NewClientset()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	ev := engine.NewEvent("ns", "catalog-instance.db", engine.EventWarning, "ProvisionFailed", "Provision", "the broker answered 500")
	for run := range 3 {
		a := &engine.Aggregator{Sink: &APIEventSink{Client: cs, Instance: "cli"}, Now: func() time.Time { return now }}
		for range 2 {
			a.Record(ctx, ev)
			now = now.Add(time.Minute)
		}
		list, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
		assert.NilError(t, err)
		assert.Assert(t, is.Len(list.Items, 1), "run %d", run)
		assert.Assert(t, list.Items[0].Series != nil)
		assert.Equal(t, list.Items[0].Series.Count, int32(2*(run+1)), "run %d", run)
	}
	// Another reason is another object.
	a := &engine.Aggregator{Sink: &APIEventSink{Client: cs, Instance: "cli"}, Now: func() time.Time { return now }}
	a.Record(ctx, engine.NewEvent("ns", "catalog-instance.db", engine.EventNormal, "RetryScheduled", "Provision", "retry"))
	list, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(list.Items, 2))
}

// The recorder a command uses does not wait for the API server: Record returns while the
// Event's write is held, and Flush waits for it.
func TestEventRecorder_WritesInTheBackgroundAndFlushWaits(t *testing.T) {
	cs := k8sfake.NewClientset()
	release := make(chan struct{})
	cs.PrependReactor("create", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	r := EventRecorder(cs, "", 0)
	ctx := context.Background()
	recorded := make(chan struct{})
	go func() {
		r.Record(ctx, engine.NewEvent("ns", "catalog-instance.db", engine.EventNormal, "ProvisionRequested", "Provision", "sent"))
		close(recorded)
	}()
	<-recorded // Record came back with the write still held.
	flushed := make(chan struct{})
	go func() {
		r.(interface{ Flush(context.Context) }).Flush(ctx)
		close(flushed)
	}()
	select {
	case <-flushed:
		t.Fatal("Flush returned before the Event was written")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-flushed
	list, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(list.Items, 1))
}

// A user who may not create Events: the first refusal stops the writes, and Flush does
// not wait for more.
func TestEventRecorder_AForbiddenWriteStopsTheRest(t *testing.T) {
	cs := k8sfake.NewClientset()
	var creates atomic.Int32
	cs.PrependReactor("create", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
		creates.Add(1)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x", errors.New("no"))
	})
	r := EventRecorder(cs, "", 0)
	ctx := context.Background()
	r.Record(ctx, engine.NewEvent("ns", "catalog-instance.db", engine.EventNormal, "ProvisionRequested", "Provision", "sent"))
	r.(interface{ Flush(context.Context) }).Flush(ctx)
	for _, reason := range []string{"ProvisionSucceeded", "RetryScheduled"} {
		r.Record(ctx, engine.NewEvent("ns", "catalog-instance.db", engine.EventNormal, reason, "Provision", "x"))
	}
	r.(interface{ Flush(context.Context) }).Flush(ctx)
	assert.Equal(t, creates.Load(), int32(1))
}

// Reconcile records the Events of many records at once: those of different Events are
// written together, up to DefaultEventWriters at once, and the writes of one Event one after
// another, in order.
func TestAsyncSink_WritesDifferentEventsTogetherAndOneEventsInOrder(t *testing.T) {
	s := newAsyncSink(nil, nil, 0)
	ctx := context.Background()
	started := make(chan string, 2*DefaultEventWriters)
	release := map[string]chan struct{}{}
	write := func(name string) func(context.Context) error {
		c := make(chan struct{})
		release[name] = c
		return func(context.Context) error {
			started <- name
			<-c
			return nil
		}
	}
	waitStarted := func(want ...string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		var got []string
		for range want {
			select {
			case name := <-started:
				got = append(got, name)
			case <-deadline:
				t.Fatalf("started %v, want %v at once", got, want)
			}
		}
		assert.Assert(t, is.DeepEqual(sorted(got), sorted(want)))
	}
	// The Create of Event a, then its Update, then DefaultEventWriters-1 other Events and
	// one more.
	s.enqueue(ctx, "ns/a", write("a create"))
	s.enqueue(ctx, "ns/a", write("a update"))
	var others []string
	for i := range DefaultEventWriters - 1 {
		name := string(rune('b' + i))
		s.enqueue(ctx, "ns/"+name, write(name))
		others = append(others, name)
	}
	s.enqueue(ctx, "ns/last", write("last"))
	waitStarted(append([]string{"a create"}, others...)...)
	s.mu.Lock()
	assert.Equal(t, s.running, DefaultEventWriters)
	assert.Equal(t, len(s.queue), 2, "a's Update waits for its Create, the last write for a free writer")
	s.mu.Unlock()
	// The Create of a done, its Update goes out (before the last write, queued later).
	close(release["a create"])
	waitStarted("a update")
	close(release["b"])
	waitStarted("last")
	for name, c := range release {
		if name != "a create" && name != "b" {
			close(c)
		}
	}
	drained := make(chan struct{})
	go func() {
		s.Drain(ctx)
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("Drain did not return once every write was done")
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// The Events of several records recorded at once (reconcile's workers) are written
// together: the API server holds each write until all of them are under way.
func TestEventRecorder_WritesTheEventsOfSeveralRecordsTogether(t *testing.T) {
	const records = 4
	var inFlight, created atomic.Int32
	var timedOut atomic.Bool
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/events") {
			http.Error(w, "unexpected", http.StatusNotFound)
			return
		}
		if inFlight.Add(1) == records {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(5 * time.Second):
			timedOut.Store(true)
		}
		created.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	assert.NilError(t, err)
	r := EventRecorder(cs, "", 0)
	ctx := context.Background()
	for i := range records {
		r.Record(ctx, engine.NewEvent("ns", fmt.Sprintf("catalog-instance.db-%d", i), engine.EventNormal, "ProvisionSucceeded", "Provision", "done"))
	}
	r.(interface{ Flush(context.Context) }).Flush(ctx)
	assert.Assert(t, !timedOut.Load(), "the Events were written one after another")
	assert.Equal(t, created.Load(), int32(records))
}

// A write the API server forbids in one namespace (a Terminating namespace, an events
// quota a tenant filled) stops the Events of that namespace only: the other namespaces'
// Events are written, and the namespace's own are written again after EventsPausedFor.
func TestEventRecorder_AForbiddenWriteStopsOnlyItsNamespaceForAWhile(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"quota", apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x", errors.New(`exceeded quota: events, requested: count/events.events.k8s.io=1`))},
		{"terminating", apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x", errors.New("unable to create new content in namespace full because it is being terminated"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := k8sfake.NewClientset()
			var refuse atomic.Bool
			refuse.Store(true)
			cs.PrependReactor("create", "events", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() == "full" && refuse.Load() {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var mu sync.Mutex
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			r := eventRecorder(cs, "cli", nil, 0, clock)
			ctx := context.Background()
			flush := func() { r.(interface{ Flush(context.Context) }).Flush(ctx) }
			record := func(ns, reason string) {
				r.Record(ctx, engine.NewEvent(ns, "catalog-instance.db", engine.EventNormal, reason, "Provision", "x"))
			}
			count := func(ns string) int {
				list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
				assert.NilError(t, err)
				return len(list.Items)
			}
			record("full", "ProvisionRequested")
			flush()
			for _, reason := range []string{"ProvisionRequested", "ProvisionSucceeded", "RetryScheduled"} {
				record("other", reason)
				record("full", reason+"Again")
			}
			flush()
			assert.Equal(t, count("other"), 3, "a refusal in namespace full stopped the Events of namespace other")
			assert.Equal(t, count("full"), 0)
			// Later, with room again in namespace full, its Events are written again.
			refuse.Store(false)
			mu.Lock()
			now = now.Add(EventsPausedFor + time.Second)
			mu.Unlock()
			record("full", "ProvisionSucceeded")
			flush()
			assert.Equal(t, count("full"), 1, "namespace full's Events were not written again after the pause")
			// A repeat of an Event whose Create was dropped during the pause makes it.
			record("full", "RetryScheduledAgain")
			flush()
			assert.Equal(t, count("full"), 2, "an Event whose Create was dropped was not made on its repeat")
		})
	}
}
