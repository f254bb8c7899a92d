package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/test/bench/reconcilebench"
)

// reconcileFigures runs reconcile on 1,000 instances waiting on asynchronous
// provisions, against a broker answering each poll in 50 ms, on 16 and on 64 workers.
// The floor is the broker's time over the workers, measured in the same run; the notes
// say the API requests per record and how long the fake API server alone takes.
func reconcileFigures() ([]figure, []string, error) {
	var figures []figure
	var notes []string
	for _, run := range []struct {
		workers int
		latency time.Duration
	}{{16, 0}, {highWorkers, 0}, {16, apiLatency}} {
		cfg := reconcilebench.Default
		cfg.Workers, cfg.APILatency = run.workers, run.latency
		fmt.Fprintf(os.Stderr, "reconcile: %d async instances, %d polls of %s each, %d workers, %s added per ConfigMap request...\n", cfg.Records, cfg.Polls, cfg.PollTime, cfg.Workers, cfg.APILatency)
		res, err := reconcilebench.Run(context.Background(), cfg)
		if err != nil {
			return nil, nil, err
		}
		name := fmt.Sprintf("reconcile, %d async instances, %d workers: wall time", cfg.Records, cfg.Workers)
		if cfg.APILatency > 0 {
			// A loaded API server: the steps' requests must not add to the broker's time.
			name = fmt.Sprintf("reconcile, %d async instances, %d workers, %s per ConfigMap request: wall time", cfg.Records, cfg.Workers, cfg.APILatency)
		}
		figures = append(figures, figure{
			Name:  name,
			Value: res.Took, Floor: res.Floor,
			What: fmt.Sprintf("broker time / workers (%d polls x %s)", res.TotalPolls, cfg.PollTime),
			// Reported, not targeted: on the fake cluster the API server's own CPU
			// (see the notes) weighs in as much as reconcile's scheduling.
		})
		notes = append(notes, fmt.Sprintf("reconcile, %d workers, %s per ConfigMap request: %d steps; API requests per record %.2f (%s); the fake API server alone serves them in %s",
			cfg.Workers, cfg.APILatency, res.Steps, res.RequestsPerRecord(), res.RequestsLine(), res.APITime.Round(10_000_000)))
	}
	return figures, notes, nil
}

// apiLatency is what the last in-process run adds to each read and write of a
// ConfigMap: a loaded API server's few milliseconds (reconcilebench.Config.APILatency).
const apiLatency = 5 * time.Millisecond

// highWorkers is the second worker count of the reconcile figures, in-process and on the
// real API server: where what reconcile serializes shows most.
const highWorkers = 64

// Targets of reconcile -A on the real API server, in ratios to the broker's floor.
const (
	reconcileTarget16 = 1.25
	reconcileTarget64 = 1.5
)

// highWorkersRun is a reconcile -A run on the real API server with highWorkers workers,
// on o.Pending more records waiting on an asynchronous provision, written into
// namespaces of their own after the earlier runs' records (all settled by then): the
// figure of the 16-worker run of as many pending records, on 64 workers. It returns the
// figure, its note and how many records it wrote.
func (e *scaleEnv) highWorkersRun(ctx context.Context, o scaleOptions, b *reconcilebench.Broker, seeded int) ([]figure, string, int, error) {
	namespaces := make([]string, 10)
	for j := range namespaces {
		namespaces[j] = fmt.Sprintf("bench-w%d-%02d", highWorkers, j)
	}
	if err := e.seed(ctx, namespaces, o.Pending, 0); err != nil {
		return nil, "", 0, err
	}
	ho := o
	ho.Workers = highWorkers
	fmt.Fprintf(os.Stderr, "seeded %d records (%d pending); reconcile on %d records, %d workers...\n", o.Pending, o.Pending, seeded+o.Pending, ho.Workers)
	var prof *profiles
	if profileDir != "" {
		plugin, err := profiledPlugin(e.dir)
		if err != nil {
			return nil, "", 0, err
		}
		defer func(p string) { e.plugin = p }(e.plugin)
		e.plugin = plugin
		prof = e.startProfiles(ctx)
	}
	cpuFrom := readRunCPU(e.cp.Dir)
	r, err := e.runReconcile(ctx, ho, b, seeded+o.Pending)
	cpuNote := runCPUNote(fmt.Sprintf("reconcile -A on %d records, %d workers", seeded+o.Pending, ho.Workers), cpuFrom, readRunCPU(e.cp.Dir), o.Pending)
	if prof != nil {
		if perr := prof.wait(); perr != nil && err == nil {
			err = perr
		}
		fmt.Fprintf(os.Stderr, "profiles of the %d-worker run: %s\n", ho.Workers, profileDir)
	}
	if err != nil {
		return nil, "", 0, err
	}
	fmt.Fprintf(os.Stderr, "reconcile on %d records, %d workers: %s (floor %s)\n", r.Total, ho.Workers, r.Took.Round(time.Millisecond), r.Floor.Round(time.Millisecond))
	f := figure{Name: fmt.Sprintf("reconcile -A, %d records (%d pending), %d workers: wall time", r.Total, r.Pending, ho.Workers),
		Value: r.Took, Floor: r.Floor, Target: reconcileTarget(ho.Workers),
		What: fmt.Sprintf("broker time / workers (%d polls x %s / %d) + kubectl LIST of the pending", r.Polls, o.PollTime, ho.Workers)}
	note := fmt.Sprintf("reconcile -A on %d records, %d workers: floor = %s broker + %s LIST; API requests per polled record %.2f (%s); answered with an error: %s",
		r.Total, ho.Workers, r.BrokerShare.Round(time.Millisecond), r.List.Round(time.Millisecond),
		float64(r.Requests.Total())/float64(r.Pending), r.Requests.Line(r.Pending), cmp.Or(r.Failed.Line(1), "none"))
	api, err := e.apiWriteFigure(ctx, namespaces, o.Pending, ho.Workers, r.Took)
	if err != nil {
		return nil, "", 0, err
	}
	return []figure{f, api}, note + "\n" + cpuNote, o.Pending, nil
}

// reconcileTarget is the target of a reconcile -A run on the real API server with
// workers workers; 0 (reported) for a count without one.
func reconcileTarget(workers int) float64 {
	switch workers {
	case 16:
		return reconcileTarget16
	case highWorkers:
		return reconcileTarget64
	}
	return 0
}
