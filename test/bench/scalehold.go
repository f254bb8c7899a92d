package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/test/bench/reconcilebench"
)

// holdScale seeds o.Records instance records (o.Pending of them pending) on a control
// plane of their own, as the large run of the scale figures has them, and keeps it until
// interrupted, so that reconcile can be run and profiled on it again and again without
// seeding 100,000 records each time. Each SIGUSR1 seeds o.Pending more pending records
// (the earlier ones are finished by the runs); the command line of a run, as the scale
// figures time it, is printed and written beside the kubeconfig.
func holdScale(o scaleOptions) error {
	bins, plugin, dir, err := setup()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	e, err := startScaleEnv(bins, plugin, dir)
	if err != nil {
		return err
	}
	defer e.close()
	b := reconcilebench.NewBroker(reconcilebench.Config{PollTime: o.PollTime, Polls: o.Polls})
	srv := httptest.NewServer(b)
	defer srv.Close()
	if err := e.seed(ctx, []string{reconcilebench.CatalogNamespace}, 0, 0); err != nil {
		return err
	}
	if err := reconcilebench.SeedBroker(ctx, e.st, srv.URL); err != nil {
		return err
	}
	namespaces := make([]string, 10)
	for j := range namespaces {
		namespaces[j] = fmt.Sprintf("bench-1-%02d", j)
	}
	start := time.Now()
	if err := e.seed(ctx, namespaces, o.Pending, o.Records-o.Pending); err != nil {
		return err
	}
	args := []string{e.plugin, "reconcile", "-A", "--catalog-namespace", reconcilebench.CatalogNamespace,
		"--trust-namespace-writers", "--workers", fmt.Sprint(o.Workers), "--interval", "1ms",
		"--retry-horizon", "0", "--max-duration", "10m", "-o", "json"}
	line := "KUBECONFIG=" + e.kc + " " + strings.Join(args, " ")
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte(line+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "seeded %d records (%d pending) in %s; pid %d holds the control plane (SIGUSR1: %d more pending; SIGINT: stop)\n%s\n",
		o.Records, o.Pending, time.Since(start).Round(time.Second), os.Getpid(), o.Pending, line)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGINT, syscall.SIGTERM)
	for round := 1; ; round++ {
		if s := <-sig; s != syscall.SIGUSR1 {
			return nil
		}
		if err := e.seedNamed(ctx, namespaces, o.Pending, 0, fmt.Sprintf("again-%d-", round)); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "seeded %d more pending records\n", o.Pending)
	}
}
