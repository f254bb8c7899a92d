package kube

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

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
