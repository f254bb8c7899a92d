package kube

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
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
	r := EventRecorder(cs, "")
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
	r := EventRecorder(cs, "")
	ctx := context.Background()
	r.Record(ctx, engine.NewEvent("ns", "catalog-instance.db", engine.EventNormal, "ProvisionRequested", "Provision", "sent"))
	r.(interface{ Flush(context.Context) }).Flush(ctx)
	for _, reason := range []string{"ProvisionSucceeded", "RetryScheduled"} {
		r.Record(ctx, engine.NewEvent("ns", "catalog-instance.db", engine.EventNormal, reason, "Provision", "x"))
	}
	r.(interface{ Flush(context.Context) }).Flush(ctx)
	assert.Equal(t, creates.Load(), int32(1))
}
