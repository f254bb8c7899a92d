// Command bench measures kubectl-catalog against a floor measured in the same
// run, and prints every figure as a ratio to its floor. Ratios, not absolute
// times, are what the project's targets are stated in: they hold on any
// machine and are not thrown off by a busy one as much as raw times are.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// figure is one measured ratio.
type figure struct {
	Name   string
	Value  time.Duration
	Floor  time.Duration
	What   string // what the floor is
	Target float64
}

func (f figure) ratio() float64 { return float64(f.Value) / float64(f.Floor) }

func main() {
	runs := flag.Int("runs", 31, "Runs of each command; the median is reported.")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(runs int) error {
	bins, err := controlplane.EnsureBinaries(os.Stderr)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubectl-catalog-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	plugin, err := controlplane.BuildPlugin(dir)
	if err != nil {
		return err
	}

	startup, floor, err := interleavedMedians(runs,
		[]string{plugin, "version", "--client"},
		[]string{bins.Kubectl, "version", "--client"})
	if err != nil {
		return err
	}
	figures := []figure{{
		Name: "start-up: kubectl catalog version --client", Value: startup, Floor: floor,
		What: "kubectl version --client", Target: 0.5,
	}}

	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FIGURE\tMEDIAN\tFLOOR\tFLOOR MEASURES\tRATIO\tTARGET\t")
	for _, f := range figures {
		verdict := "ok"
		if f.ratio() > f.Target {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.2fx\t<= %.2fx %s\t\n", f.Name, f.Value.Round(10*time.Microsecond),
			f.Floor.Round(10*time.Microsecond), f.What, f.ratio(), f.Target, verdict)
	}
	return w.Flush()
}

// interleavedMedians runs a and b alternately, so both see the same machine
// load, and returns the median wall time of each.
func interleavedMedians(runs int, a, b []string) (time.Duration, time.Duration, error) {
	var ta, tb []time.Duration
	for i := 0; i < runs; i++ {
		d, err := timeCommand(a)
		if err != nil {
			return 0, 0, err
		}
		ta = append(ta, d)
		if d, err = timeCommand(b); err != nil {
			return 0, 0, err
		}
		tb = append(tb, d)
	}
	return median(ta), median(tb), nil
}

func timeCommand(argv []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%v: %v\n%s", argv, err, out)
	}
	return time.Since(start), nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
