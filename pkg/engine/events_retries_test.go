package engine

import (
	"context"
	"net/http"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

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
// on a fake clock and a fake clientset.
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
	events := k8sfake.NewClientset()
	ctx := context.Background()

	runs := 0
	for f.get("db").Status.Retry == nil || f.get("db").Status.Retry.Attempts < attempts {
		runs++
		agg := &Aggregator{Sink: &APIEventSink{Client: events, Instance: "reconcile-pod"}, Now: func() time.Time { return f.now }}
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

	list, err := events.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Assert(t, len(list.Items) > 0)
	assert.Assert(t, len(list.Items) <= 6, "%d Event objects for %d attempts", len(list.Items), made)
	counts := map[string]int32{}
	for _, ev := range list.Items {
		assert.Equal(t, ev.Regarding.Name, "catalog-instance.db")
		count := int32(1)
		if ev.Series != nil {
			count = ev.Series.Count
		}
		counts[ev.Reason] += count
	}
	// Each attempt is requested, fails and is mitigated once, and its retry is
	// scheduled twice: when the failure is recorded (orphan mitigation first), and
	// once mitigation is done (after the backoff).
	assert.DeepEqual(t, counts, map[string]int32{
		"ProvisionRequested":        attempts,
		"ProvisionFailed":           attempts,
		"OrphanMitigationStarted":   attempts,
		"OrphanMitigationRequested": attempts,
		"OrphanMitigationFinished":  attempts,
		"RetryScheduled":            2 * attempts,
	})
}
