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

// The API requests of a polled record, whatever the number of polls: one read, the
// claim taken for the first poll and the operation's outcome (an answer "in progress"
// writes nothing), and the outcome's Event; and the run's own, shared by all (its
// lists, the reads of the broker, its class and the marker of the id claims, read again
// when their cache ages on a slow machine). A request more per record fails: 24 more
// than the slack allows.
func TestRun_RequestsPerPolledRecord(t *testing.T) {
	const runReads = 8
	for _, polls := range []int{2, 4} {
		for _, workers := range []int{1, 8} {
			res, err := Run(context.Background(), Config{Records: 24, Workers: workers, PollTime: time.Millisecond, Polls: polls})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d polls, %d workers: %.2f requests per record (%s)", polls, workers, res.RequestsPerRecord(), res.RequestsLine())
			n := res.Records
			if r := res.Requests; r["get"] > n+runReads || r["update"] > 2*n || r["create"] > 0 || r["delete"] > 0 || r["list"] > runReads || r["event"] > n {
				t.Errorf("%d polls, %d workers: API requests per record: %s; want at most get 1, update 2 (the claim, the outcome), event 1 and the run's lists", polls, workers, res.RequestsLine())
			}
		}
	}
}

// BenchmarkReconcile_1000AsyncInstances is "make bench"'s figure: 1,000 instances
// waiting on an asynchronous provision, polled twice at 50 ms each, on 16 workers.
func BenchmarkReconcile_1000AsyncInstances(b *testing.B) {
	benchmarkRun(b, Default)
}

// BenchmarkReconcile_1000AsyncInstances64Workers is the same on 64 workers, where what
// reconcile serializes shows most.
func BenchmarkReconcile_1000AsyncInstances64Workers(b *testing.B) {
	cfg := Default
	cfg.Workers = 64
	benchmarkRun(b, cfg)
}

// benchmarkRun reports a run of cfg: its time beside its floor, and its API requests.
func benchmarkRun(b *testing.B, cfg Config) {
	for b.Loop() {
		res, err := Run(context.Background(), cfg)
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
