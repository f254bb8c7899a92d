package cmdutil

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// The Event recorder of an engine the factory built holds back the repeats of its
// last interval; FlushEvents (which Execute calls when the command is done) writes
// them, once.
func TestFactory_FlushEvents_WritesTheRepeatsTheEnginesRecorderHeldBack(t *testing.T) {
	c := storetest.NewCluster()
	f := NewFactory(NewTestIOStreams(nil, nil, nil))
	f.UseClients(c.Core, c.Metadata)
	f.Getenv = func(string) string { return "" }
	_, err := f.Engine(EngineOptions{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(f.events, 1), "the eng's recorder is kept for FlushEvents")
	agg, ok := f.events[0].(*engine.Aggregator)
	assert.Assert(t, ok, "%T", f.events[0])
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	agg.Now = func() time.Time { return now }
	ctx := context.Background()
	ev := engine.NewEvent(storetest.UserNamespace, "catalog-instance.db", engine.EventWarning, "ProvisionFailed", "Provision", "the broker answered 500")
	count := func() int32 {
		t.Helper()
		list, err := c.Core.EventsV1().Events(storetest.UserNamespace).List(ctx, metav1.ListOptions{})
		assert.NilError(t, err)
		assert.Assert(t, is.Len(list.Items, 1))
		if list.Items[0].Series == nil {
			return 1
		}
		return list.Items[0].Series.Count
	}
	for range 3 {
		agg.Record(ctx, ev)
		now = now.Add(time.Second)
	}
	// The first is written in the background.
	drain, ok := agg.Sink.(interface{ Drain(context.Context) })
	assert.Assert(t, ok, "%T writes in the background", agg.Sink)
	drain.Drain(ctx)
	assert.Equal(t, count(), int32(1), "the repeats are held back")

	f.FlushEvents(ctx)
	assert.Equal(t, count(), int32(3))
	assert.Assert(t, is.Len(f.events, 0), "flushed once")
}
