package reconcilebench

import (
	"context"
	"testing"
	"time"
)

// A small run, for "go test": every record finishes, near the broker's floor.
func TestRun_Small(t *testing.T) {
	res, err := Run(context.Background(), Config{Records: 40, Workers: 4, PollTime: 10 * time.Millisecond, Polls: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records, %d polls: %s, floor %s (%.2fx), %d steps, API requests per record: %.2f (%s); fake API server alone: %s",
		res.Records, res.TotalPolls, res.Took, res.Floor, res.Ratio(), res.Steps, res.RequestsPerRecord(), res.RequestsLine(), res.APITime)
	if res.TotalPolls != res.Records*res.Polls {
		t.Errorf("the broker answered %d polls, want %d", res.TotalPolls, res.Records*res.Polls)
	}
}

// BenchmarkReconcile_1000AsyncInstances is "make bench"'s figure: 1,000 instances
// waiting on an asynchronous provision, polled twice at 50 ms each, on 16 workers.
func BenchmarkReconcile_1000AsyncInstances(b *testing.B) {
	for b.Loop() {
		res, err := Run(context.Background(), Default)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Took.Seconds(), "run-s")
		b.ReportMetric(res.Floor.Seconds(), "floor-s")
		b.ReportMetric(res.Ratio(), "x-floor")
		b.ReportMetric(res.RequestsPerRecord(), "api-req/record")
		b.ReportMetric(res.APITime.Seconds(), "fake-api-s")
	}
}

// BenchmarkReconcile_1000AsyncInstances64Workers is the same on 64 workers, where what
// reconcile serializes shows most.
func BenchmarkReconcile_1000AsyncInstances64Workers(b *testing.B) {
	cfg := Default
	cfg.Workers = 64
	for b.Loop() {
		res, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Took.Seconds(), "run-s")
		b.ReportMetric(res.Floor.Seconds(), "floor-s")
		b.ReportMetric(res.Ratio(), "x-floor")
		b.ReportMetric(res.RequestsPerRecord(), "api-req/record")
	}
}
