package main

import (
	"context"
	"fmt"
	"os"

	"github.com/kubectl-catalog/kubectl-catalog/test/bench/reconcilebench"
)

// reconcileFigures runs reconcile on 1,000 instances waiting on asynchronous
// provisions, against a broker answering each poll in 50 ms, on 16 and on 64 workers.
// The floor is the broker's time over the workers, measured in the same run; the notes
// say the API requests per record and how long the fake API server alone takes.
func reconcileFigures() ([]figure, []string, error) {
	var figures []figure
	var notes []string
	for _, workers := range []int{16, 64} {
		cfg := reconcilebench.Default
		cfg.Workers = workers
		fmt.Fprintf(os.Stderr, "reconcile: %d async instances, %d polls of %s each, %d workers...\n", cfg.Records, cfg.Polls, cfg.PollTime, cfg.Workers)
		res, err := reconcilebench.Run(context.Background(), cfg)
		if err != nil {
			return nil, nil, err
		}
		figures = append(figures, figure{
			Name:  fmt.Sprintf("reconcile, %d async instances, %d workers: wall time", cfg.Records, cfg.Workers),
			Value: res.Took, Floor: res.Floor,
			What: fmt.Sprintf("broker time / workers (%d polls x %s)", res.TotalPolls, cfg.PollTime),
			// Reported, not targeted: on the fake cluster the API server's own CPU
			// (see the notes) weighs in as much as reconcile's scheduling.
		})
		notes = append(notes, fmt.Sprintf("reconcile, %d workers: %d steps; API requests per record %.2f (%s); the fake API server alone serves them in %s",
			cfg.Workers, res.Steps, res.RequestsPerRecord(), res.RequestsLine(), res.APITime.Round(10_000_000)))
	}
	return figures, notes, nil
}
