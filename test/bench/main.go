// Command bench measures kubectl-catalog against a floor measured in the same
// run, and prints every figure as a ratio to its floor. Ratios, not absolute
// times, are what the project's targets are stated in: they hold on any
// machine and are not thrown off by a busy one as much as raw times are.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// figure is one measured ratio.
type figure struct {
	Name   string
	Value  time.Duration
	Floor  time.Duration
	What   string // what the floor is
	Target float64
	// Bytes: Value and Floor are peak memory in KiB, not durations.
	Bytes bool
	// Count: Value and Floor are counts (of API requests) in thousandths, not durations.
	Count bool
}

func (f figure) ratio() float64 { return float64(f.Value) / float64(f.Floor) }

func (f figure) format(d time.Duration) string {
	if f.Bytes {
		return fmt.Sprintf("%.1f MiB", float64(d)/1024)
	}
	if f.Count {
		return fmt.Sprintf("%.3g", float64(d)/1000)
	}
	return d.Round(10 * time.Microsecond).String()
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == rssHelperArg {
		os.Exit(rssHelper(os.Args[2:]))
	}
	runs := flag.Int("runs", 31, "Runs of each command; the median is reported.")
	catalogRuns := flag.Int("catalog-runs", 9, "Runs of the commands on the large catalog.")
	skipCatalog := flag.Bool("skip-catalog", false, "Skip the figures that need a control plane.")
	reconcileOnly := flag.Bool("reconcile-only", false, "Only the reconcile figures (no control plane, no kubectl).")
	bigCatalogOnly := flag.Bool("big-catalog-only", false, "Only the figures of the 60 MiB catalog (a control plane of their own).")
	scaleOnly := flag.Bool("scale-only", false, "Only the figures on the real API server: reconcile at scale, API requests per provision and per polled record, register against kubectl create (a control plane of their own).")
	skipScale := flag.Bool("skip-scale", false, "Skip the figures of -scale-only.")
	roundTripsOnly := flag.Bool("round-trips-only", false, "Only the round-trip figures: each command with and without 40 ms added to every API request (a control plane of its own).")
	skipRoundTrips := flag.Bool("skip-round-trips", false, "Skip the figures of -round-trips-only.")
	rtRuns := flag.Int("round-trip-runs", 5, "Runs of each command in the round-trip figures, at each delay.")
	holdScaleOnly := flag.Bool("hold-scale", false, "Seed -records records (-pending pending) on a control plane of their own and keep it until interrupted, to run reconcile on by hand (SIGUSR1 seeds -pending more pending records).")
	listCostsOnly := flag.Bool("list-costs-only", false, "Only what each way of listing the records costs the API server, etcd and the client, at -records records of which -pending are pending (a control plane of its own).")
	so := scaleOptions{PollTime: 50 * time.Millisecond, Polls: 2}
	flag.IntVar(&so.Records, "records", 20000, "Instance records in all in the large reconcile run of the scale figures.")
	flag.IntVar(&so.Small, "small-records", 2000, "Instance records in all in the small reconcile run the large one is compared with.")
	flag.IntVar(&so.Pending, "pending", 1000, "Records waiting on an asynchronous provision in each reconcile run of the scale figures.")
	flag.IntVar(&so.Workers, "workers", 16, "reconcile --workers in the scale figures.")
	flag.BoolVar(&so.Shard, "shard-group", true, "The figure of three reconcile --serve --shard-group replicas against one process (skipped when the build has no --shard-group).")
	flag.IntVar(&so.ShardWorkers, "shard-workers", 4, "reconcile --workers of each process in the shard group figure: few enough that one process's workers bound it, not the machine's CPUs.")
	flag.DurationVar(&so.FullPassInterval, "full-pass-interval", 0, "reconcile --full-pass-interval in the timed reconcile runs of the scale figures; the bench's timed list of every record before each run counts as its full pass (0: every run makes one).")
	flag.IntVar(&so.ListRuns, "list-runs", 3, "Runs of get instances -A, graph -A, marketplace and their kubectl floors after each reconcile run of the scale figures (0: none).")
	flag.IntVar(&so.RegisterRuns, "register-runs", 3, "Runs of register (500 x 20 catalog) and of its kubectl create floor.")
	flag.StringVar(&profileDir, "profile", "", "With -scale-only: write the CPU profiles of the API server, etcd and reconcile during the 64-worker run into this directory.")
	flag.Parse()
	var err error
	if *holdScaleOnly {
		err = holdScale(so)
	} else if *listCostsOnly {
		err = listCosts(so.Records, so.Pending, 3)
	} else if *roundTripsOnly {
		err = runRoundTrips(*rtRuns)
	} else if *scaleOnly {
		err = runScale(so)
	} else if *reconcileOnly {
		var figures []figure
		var notes []string
		if figures, notes, err = reconcileFigures(); err == nil {
			err = printFigures(figures, notes)
		}
	} else if *bigCatalogOnly {
		err = runBigCatalog()
	} else {
		rt := *rtRuns
		if *skipRoundTrips {
			rt = 0
		}
		err = run(*runs, *catalogRuns, *skipCatalog, *skipScale, rt, so)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(runs, catalogRuns int, skipCatalog, skipScale bool, rtRuns int, so scaleOptions) error {
	bins, plugin, dir, err := setup()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

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
	more, notes, err := reconcileFigures()
	if err != nil {
		return err
	}
	figures = append(figures, more...)
	if !skipCatalog {
		more, err := marketplaceFigures(bins, plugin, dir, catalogRuns)
		if err != nil {
			return err
		}
		figures = append(figures, more...)
		big, bigNotes, err := bigCatalogFigures(bins, plugin, dir)
		if err != nil {
			return err
		}
		figures, notes = append(figures, big...), append(notes, bigNotes...)
	}
	if !skipScale {
		scale, scaleNotes, err := scaleFigures(bins, plugin, dir, so)
		if err != nil {
			return err
		}
		figures, notes = append(figures, scale...), append(notes, scaleNotes...)
	}
	if rtRuns > 0 {
		rt, rtNotes, err := roundTripFigures(bins, plugin, dir, rtRuns)
		if err != nil {
			return err
		}
		figures, notes = append(figures, rt...), append(notes, rtNotes...)
	}
	return printFigures(figures, notes)
}

func runRoundTrips(runs int) error {
	bins, plugin, dir, err := setup()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	figures, notes, err := roundTripFigures(bins, plugin, dir, runs)
	if err != nil {
		return err
	}
	return printFigures(figures, notes)
}

func runScale(o scaleOptions) error {
	bins, plugin, dir, err := setup()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	figures, notes, err := scaleFigures(bins, plugin, dir, o)
	if err != nil {
		return err
	}
	return printFigures(figures, notes)
}

// setup finds (or builds) the control plane's binaries and kubectl, and builds the
// plugin into a new temporary directory, which the caller removes.
func setup() (bins controlplane.Binaries, plugin, dir string, err error) {
	if bins, err = controlplane.EnsureBinaries(os.Stderr); err != nil {
		return bins, "", "", err
	}
	if dir, err = os.MkdirTemp("", "kubectl-catalog-bench-"); err != nil {
		return bins, "", "", err
	}
	if plugin, err = controlplane.BuildPlugin(dir); err != nil {
		os.RemoveAll(dir)
		return bins, "", "", err
	}
	return bins, plugin, dir, nil
}

func runBigCatalog() error {
	bins, plugin, dir, err := setup()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	figures, notes, err := bigCatalogFigures(bins, plugin, dir)
	if err != nil {
		return err
	}
	return printFigures(figures, notes)
}

// printFigures prints the table of figures, then the notes.
func printFigures(figures []figure, notes []string) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FIGURE\tMEDIAN\tFLOOR\tFLOOR MEASURES\tRATIO\tTARGET\t")
	for _, f := range figures {
		verdict := "ok"
		if f.ratio() > f.Target {
			verdict = "MISSED"
		}
		target := fmt.Sprintf("<= %.2fx %s", f.Target, verdict)
		if f.Target == 0 {
			target = "(reported)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.2fx\t%s\t\n", f.Name, f.format(f.Value), f.format(f.Floor), f.What, f.ratio(), target)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Println(n)
	}
	return nil
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
	d, _, err := measure("/nonexistent", argv)
	return d, err
}

// rssHelperArg makes the bench binary run a command and print its peak memory. The kernel
// carries a process's peak RSS across fork and exec, and Go starts children sharing the
// parent's memory until exec: a command started by this (large) process would report the
// bench's own peak. Started by a small helper, it reports its own.
const rssHelperArg = "__measure-rss"

func rssHelper(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	fmt.Fprintf(os.Stderr, "\nmaxrss-kib=%d\n", ru.Maxrss)
	return 0
}

// measure runs argv with kubeconfig and returns its wall time and peak resident memory
// (KiB, from the kernel's rusage). Output is read and discarded, as a pipe would.
func measure(kubeconfig string, argv []string) (time.Duration, int64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start)
	if err != nil {
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		return 0, 0, fmt.Errorf("%v: %v\n%s", argv, err, out)
	}
	return elapsed, 0, nil
}

// peakMemory runs argv through the helper and returns its peak RSS in KiB.
func peakMemory(kubeconfig string, argv []string) (int64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, append([]string{rssHelperArg}, argv...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %v\n%s", argv, err, stderr.String())
	}
	i := strings.LastIndex(stderr.String(), "maxrss-kib=")
	if i < 0 {
		return 0, fmt.Errorf("%v: no memory figure", argv)
	}
	return strconv.ParseInt(strings.TrimSpace(stderr.String()[i+len("maxrss-kib="):]), 10, 64)
}

// marketplaceFigures registers a broker with 500 classes x 20 plans (each plan with create,
// update and bind schemas) on a fresh control plane, and compares "kubectl catalog
// marketplace" with the floor: a raw LIST of every ConfigMap holding the catalog (classes
// and schemas), which is what a design that read everything would at least cost.
func marketplaceFigures(bins controlplane.Binaries, plugin, dir string, runs int) ([]figure, error) {
	ctx := context.Background()
	fmt.Fprintln(os.Stderr, "starting a control plane for the catalog figures...")
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir + "/cp", Log: os.Stderr})
	if err != nil {
		return nil, err
	}
	defer cp.Stop()
	cat := broker.GenerateCatalog(500, 20)
	b, err := broker.New(broker.Options{Catalog: &cat, RequestLogLimit: 100})
	if err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		return nil, err
	}
	defer b.Close()

	kc := cp.Kubeconfig(controlplane.AdminUser)
	common := []string{"--catalog-namespace", "catalog-bench", "-n", "default", "--qps", "500", "--burst", "1000"}
	start := time.Now()
	if _, _, err := measure(kc, append([]string{plugin, "register", "big", "--url", b.URL()}, common...)); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "registered 500 classes x 20 plans in %s\n", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if _, _, err := measure(kc, append([]string{plugin, "sync", "broker", "big"}, common...)); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "synced the unchanged catalog in %s\n", time.Since(start).Round(time.Millisecond))

	mp := append([]string{plugin, "marketplace"}, common...)
	floor := []string{bins.Kubectl, "get", "--raw",
		"/api/v1/namespaces/catalog-bench/configmaps?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dkubectl-catalog"}
	var tm, tf []time.Duration
	var mm, mf []time.Duration
	for i := 0; i < runs; i++ {
		d, _, err := measure(kc, mp)
		if err != nil {
			return nil, err
		}
		tm = append(tm, d)
		if d, _, err = measure(kc, floor); err != nil {
			return nil, err
		}
		tf = append(tf, d)
	}
	// Memory apart: the helper process would add to the wall times.
	for i := 0; i < 3; i++ {
		rss, err := peakMemory(kc, mp)
		if err != nil {
			return nil, err
		}
		mm = append(mm, time.Duration(rss))
		if rss, err = peakMemory(kc, floor); err != nil {
			return nil, err
		}
		mf = append(mf, time.Duration(rss))
	}
	what := "kubectl get --raw (LIST of the catalog's ConfigMaps)"
	return []figure{
		{Name: "marketplace, 500 classes x 20 plans: wall time", Value: median(tm), Floor: median(tf), What: what, Target: 0.6},
		{Name: "marketplace, 500 classes x 20 plans: peak memory", Value: median(mm), Floor: median(mf), What: what, Bytes: true},
	}, nil
}

func median[T cmp.Ordered](vs []T) T {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}
