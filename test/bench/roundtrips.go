package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/test/bench/apicount"
	"github.com/kubectl-catalog/kubectl-catalog/test/bench/reconcilebench"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// roundTrip is the delay the round-trip figures add to every API request: a cluster
// 40 ms away, as a managed cluster in another region or behind a VPN is.
const roundTrip = 40 * time.Millisecond

// rtCommand is one command of the round-trip figures; argv is given the run's suffix
// (names are new in every run).
type rtCommand struct {
	name string
	argv func(sfx string) []string
	// target is the most round trips allowed, as a ratio to kubectl's "get configmaps"
	// measured in the same run, one request (0: reported only, the floors themselves).
	target float64
}

// rtSample is one run of a command: its wall time, its API requests and how many of them
// waited for one another.
type rtSample struct {
	took     time.Duration
	requests int
	chain    int
}

// roundTripFigures measures, for each command, how many API round trips a user waits for:
// with roundTrip added to every request, the counting proxy finds the longest chain of
// requests each waiting for the one before (requests sent together count once). Each
// command also runs without the delay, and (slow - fast) / roundTrip is noted as the
// wall-time estimate. kubectl's "get configmaps" in the same run is the floor.
func roundTripFigures(bins controlplane.Binaries, plugin, dir string, runs int) ([]figure, []string, error) {
	ctx := context.Background()
	e, err := startScaleEnv(bins, plugin, dir)
	if err != nil {
		return nil, nil, err
	}
	defer e.close()
	b, err := broker.New(broker.Options{RequestLogLimit: 100})
	if err != nil {
		return nil, nil, err
	}
	if err := b.Start(); err != nil {
		return nil, nil, err
	}
	defer b.Close()
	const ns = "roundtrips"
	if err := e.seed(ctx, []string{ns}, 0, 0); err != nil {
		return nil, nil, err
	}
	// reconcile first, as on a cluster without the trust policy: its records are
	// written straight to the API server, with no author, as the scale figures' are.
	recFigures, recNotes, err := e.reconcileRoundTrips(ctx, runs)
	if err != nil {
		return nil, nil, err
	}
	// The matrix's configurations without the trust policy, before init installs it.
	brokers, err := startMatrixBrokers()
	if err != nil {
		return nil, nil, err
	}
	defer brokers.close()
	var matrix []rtCommand
	for i, cfg := range rtMatrix() {
		if cfg.trust {
			continue
		}
		cmds, err := e.setUpMatrix(ctx, plugin, brokers, i, cfg)
		if err != nil {
			return nil, nil, err
		}
		matrix = append(matrix, cmds...)
	}
	kubectlFloor := rtCommands(bins.Kubectl, plugin, ns)[1:2]
	untrusted, err := e.rtSamples(append(slices.Clone(kubectlFloor), matrix...), runs)
	if err != nil {
		return nil, nil, err
	}
	// Set up as a user finds a cluster: the catalog initialised, a cluster broker, and
	// one instance to read.
	for _, argv := range [][]string{
		{plugin, "init"},
		{plugin, "register", "demo", "--url", b.URL()},
		{plugin, "provision", "db", "--class", "demo/postgresql", "--plan", "hobby", "-n", ns},
	} {
		if _, _, err := measure(e.direct, argv); err != nil {
			return nil, nil, err
		}
	}
	commands := rtCommands(bins.Kubectl, plugin, ns)
	var trusted []rtCommand
	for i, cfg := range rtMatrix() {
		if !cfg.trust {
			continue
		}
		cmds, err := e.setUpMatrix(ctx, plugin, brokers, i, cfg)
		if err != nil {
			return nil, nil, err
		}
		trusted = append(trusted, cmds...)
	}
	samples, err := e.rtSamples(append(slices.Clone(commands), trusted...), runs)
	if err != nil {
		return nil, nil, err
	}
	figures, notes := rtReport(commands, samples, runs)
	// Each half of the matrix beside the floor measured with it.
	for _, half := range []struct {
		commands []rtCommand
		samples  map[time.Duration]map[string][]rtSample
	}{{append(slices.Clone(kubectlFloor), matrix...), untrusted}, {append(slices.Clone(kubectlFloor), trusted...), samples}} {
		f, n := rtReport(half.commands, half.samples, runs)
		figures, notes = append(figures, f...), append(notes, n[1:]...)
	}
	return append(figures, recFigures...), append(notes, recNotes...), nil
}

// rtConfig is one configuration of the round-trip matrix (the same as
// TestRoundTrips_EachVerbsRequestGroups): the broker's scope, its credentials (a Secret
// with basic credentials or a bearer token, or none), the trust policy in force or
// not, and a synchronous broker or an asynchronous one waited for with --wait.
type rtConfig struct {
	namespaced bool
	auth       string // "basic", "bearer" or ""
	trust      bool
	async      bool
}

func (c rtConfig) String() string {
	scope, auth, pol, calls := "cluster", "no credentials", "no policy", "sync"
	if c.namespaced {
		scope = "namespace"
	}
	if c.auth != "" {
		auth = c.auth + " Secret"
	}
	if c.trust {
		pol = "policy"
	}
	if c.async {
		calls = "async --wait"
	}
	return fmt.Sprintf("%s broker, %s, %s, %s", scope, auth, pol, calls)
}

// rtMatrix is every configuration of the round-trip matrix.
func rtMatrix() []rtConfig {
	var out []rtConfig
	for _, namespaced := range []bool{false, true} {
		for _, auth := range []string{"basic", "bearer", ""} {
			for _, trust := range []bool{false, true} {
				for _, async := range []bool{false, true} {
					out = append(out, rtConfig{namespaced: namespaced, auth: auth, trust: trust, async: async})
				}
			}
		}
	}
	return out
}

// rtHobby is the plan the matrix provisions (postgresql's "hobby"), asynchronous on
// the matrix's asynchronous brokers.
const rtHobby = "d198dfce-cbdd-4e91-943e-c123bd2fb864"

// matrixBrokers are the brokers of the matrix: with credentials or without, answering
// at once or asynchronously (done at the first poll).
type matrixBrokers map[[2]bool]*broker.Broker

func startMatrixBrokers() (matrixBrokers, error) {
	out := matrixBrokers{}
	for _, auth := range []bool{false, true} {
		for _, async := range []bool{false, true} {
			o := broker.Options{RequestLogLimit: 100, AsyncDelay: time.Millisecond, RetryAfter: -1}
			if auth {
				o.Username, o.Password, o.BearerToken = "platform", "secret", "token"
			}
			b, err := broker.New(o)
			if err == nil && async {
				err = b.SetPlanBehaviour(rtHobby, broker.PlanBehaviour{Async: []broker.Op{broker.OpProvision, broker.OpDeprovision, broker.OpBind, broker.OpUnbind}})
			}
			if err == nil {
				err = b.Start()
			}
			if err != nil {
				out.close()
				return nil, err
			}
			out[[2]bool{auth, async}] = b
		}
	}
	return out, nil
}

func (m matrixBrokers) close() {
	for _, b := range m {
		b.Close()
	}
}

// setUpMatrix registers configuration i's broker (named mI) as cfg says, in a namespace
// of its own (rt-mI) or the catalog namespace, with its credentials Secret, and returns
// its four verbs, each named after the configuration.
func (e *scaleEnv) setUpMatrix(ctx context.Context, plugin string, brokers matrixBrokers, i int, cfg rtConfig) ([]rtCommand, error) {
	ns, name := fmt.Sprintf("rt-m%d", i), fmt.Sprintf("m%d", i)
	if err := e.seed(ctx, []string{ns, "catalog-system"}, 0, 0); err != nil {
		return nil, err
	}
	b := brokers[[2]bool{cfg.auth != "", cfg.async}]
	argv := []string{plugin, "register", name, "--url", b.URL()}
	bns := "catalog-system"
	if cfg.namespaced {
		argv, bns = append(argv, "--scope", "namespace", "-n", ns), ns
	}
	if cfg.auth != "" {
		data := map[string]string{"username": "platform", "password": "secret"}
		flag := "--basic-auth-secret"
		if cfg.auth == "bearer" {
			data, flag = map[string]string{"token": "token"}, "--bearer-token-secret"
		}
		_, err := e.core.CoreV1().Secrets(bns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-auth", Namespace: bns}, StringData: data}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		argv = append(argv, flag, name+"-auth")
	}
	if _, _, err := measure(e.direct, argv); err != nil {
		return nil, err
	}
	cat := func(args ...string) func(string) []string {
		if cfg.async {
			args = append(args, "--wait", "--interval", "10ms")
		}
		return rtArgv(plugin, ns, args)
	}
	// An asynchronous broker adds its polls (one here, done at once): the write of the
	// operation accepted, and the poll's own reads, the record, the broker and its
	// Secret.
	polls := 0.0
	if cfg.async {
		polls = 3
		if cfg.auth != "" {
			polls++
		}
	}
	return []rtCommand{
		{name: "provision: " + cfg.String(), argv: cat("provision", "db-SFX", "--class", name+"/postgresql", "--plan", "hobby"), target: 6 + polls},
		{name: "bind: " + cfg.String(), argv: cat("bind", "db-SFX", "--name", "app-SFX"), target: 7 + polls},
		{name: "unbind: " + cfg.String(), argv: cat("unbind", "app-SFX"), target: 6 + polls},
		{name: "deprovision: " + cfg.String(), argv: cat("deprovision", "db-SFX", "--yes"), target: 5 + polls},
	}, nil
}

// rtFloorName is the command whose round trips are the floor.
const rtFloorName = "kubectl get configmaps"

// rtCommands are the commands of the round-trip figures, in namespace ns.
func rtCommands(kubectlBin, plugin, ns string) []rtCommand {
	cat := func(args ...string) func(string) []string { return rtArgv(plugin, ns, args) }
	kubectl := func(args ...string) func(string) []string { return rtArgv(kubectlBin, ns, args) }
	return []rtCommand{
		{name: "kubectl create configmap", argv: kubectl("create", "configmap", "rt-SFX", "--from-literal=k=v")},
		{name: rtFloorName, argv: kubectl("get", "configmaps")},
		{name: "get instances", argv: cat("get", "instances"), target: 1.5},
		{name: "marketplace", argv: cat("marketplace"), target: 1.5},
		{name: "describe instance", argv: cat("describe", "instance", "db"), target: 1.5},
		{name: "provision (synchronous broker)", argv: cat("provision", "db-SFX", "--class", "demo/postgresql", "--plan", "hobby"), target: 6},
		{name: "bind (synchronous broker)", argv: cat("bind", "db-SFX", "--name", "app-SFX"), target: 7},
		{name: "unbind (synchronous broker)", argv: cat("unbind", "app-SFX"), target: 6},
		{name: "deprovision (synchronous broker)", argv: cat("deprovision", "db-SFX", "--yes"), target: 6},
	}
}

// rtArgv is the command line of bin with args, "SFX" in them replaced by a run's
// suffix, in namespace ns.
func rtArgv(bin, ns string, args []string) func(string) []string {
	return func(sfx string) []string {
		out := append([]string{bin}, args...)
		for i, a := range out {
			out[i] = strings.ReplaceAll(a, "SFX", sfx)
		}
		return append(out, "-n", ns)
	}
}

// rtSamples runs each command runs times without the delay, then runs times with
// roundTrip added to every API request: the samples by delay and command.
func (e *scaleEnv) rtSamples(commands []rtCommand, runs int) (map[time.Duration]map[string][]rtSample, error) {
	samples := map[time.Duration]map[string][]rtSample{}
	for _, delay := range []time.Duration{0, roundTrip} {
		e.proxy.SetDelay(delay)
		samples[delay] = map[string][]rtSample{}
		for i := range runs {
			sfx := fmt.Sprintf("%d-%d", delay.Milliseconds(), i)
			for _, c := range commands {
				before := e.proxy.Counts()
				first := delay > 0 && i == 0
				e.proxy.Log(first)
				e.proxy.Spans(true)
				took, _, err := measure(e.kc, c.argv(sfx))
				spans := e.proxy.Spans(false)
				if log := e.proxy.Log(false); first {
					fmt.Fprintf(os.Stderr, "the API requests of %s:\n  %s\n", c.name, strings.Join(log, "\n  "))
				}
				if err != nil {
					return nil, err
				}
				samples[delay][c.name] = append(samples[delay][c.name], rtSample{
					took: took, requests: e.proxy.Counts().Sub(before).Total(), chain: apicount.CriticalPath(spans),
				})
			}
		}
	}
	e.proxy.SetDelay(0)
	return samples, nil
}

// rtReport turns the samples into figures, one per command with a target, and notes.
// The figure is the chain: exact, whatever the machine's load. The wall-time estimate,
// (slow - fast) / roundTrip, is noted beside it.
func rtReport(commands []rtCommand, samples map[time.Duration]map[string][]rtSample, runs int) ([]figure, []string) {
	chain := func(name string) time.Duration {
		// In thousandths, as figure.Count wants.
		return time.Duration(1000 * median(rtOf(samples[roundTrip][name], rtChain)))
	}
	floor := chain(rtFloorName)
	var figures []figure
	notes := []string{fmt.Sprintf("round trips on the critical path: the longest chain of API requests each waiting for the one before, "+
		"with %s added to every request (median of %d runs); wall: (wall time with the delay - without) / %s", roundTrip, runs, roundTrip)}
	for _, c := range commands {
		fast, slow := median(rtOf(samples[0][c.name], rtTook)), median(rtOf(samples[roundTrip][c.name], rtTook))
		notes = append(notes, fmt.Sprintf("  %-34s requests %d, round trips %d, wall %.1f",
			c.name, median(rtOf(samples[roundTrip][c.name], rtRequests)), median(rtOf(samples[roundTrip][c.name], rtChain)),
			float64(slow-fast)/float64(roundTrip)))
		if c.target == 0 {
			continue
		}
		figures = append(figures, figure{
			Name: "round trips: " + c.name, Value: chain(c.name), Floor: floor, What: rtFloorName, Target: c.target, Count: true,
		})
	}
	return figures, notes
}

// rtReconcileWorkers is reconcile's --workers in the round-trip figures, and
// rtReconcileRecords the pending records of each run; the first run, of one record, is
// the floor.
const rtReconcileWorkers = 8

var rtReconcileRecords = []int{1, 8, 32}

// reconcileRoundTrips measures the round trips of "reconcile -n NS --workers 8" over N
// pending records, each finished by one last_operation poll, with roundTrip added to
// every API request: with W workers, the chain is to grow with ceil(N / W), not with N.
// The floor is the chain of one record's run, measured in the same run; each N runs
// min(runs, 3) times on records of a namespace of its own, and the median is reported.
func (e *scaleEnv) reconcileRoundTrips(ctx context.Context, runs int) ([]figure, []string, error) {
	b := reconcilebench.NewBroker(reconcilebench.Config{Polls: 1})
	srv := httptest.NewServer(b)
	defer srv.Close()
	if err := e.seed(ctx, []string{reconcilebench.CatalogNamespace}, 0, 0); err != nil {
		return nil, nil, err
	}
	if err := reconcilebench.SeedBroker(ctx, e.st, srv.URL); err != nil {
		return nil, nil, err
	}
	e.proxy.SetDelay(roundTrip)
	defer e.proxy.SetDelay(0)
	chains := map[int][]rtSample{}
	for i := range min(runs, 3) {
		for _, n := range rtReconcileRecords {
			ns := fmt.Sprintf("rt-reconcile-%d-%d", n, i)
			if err := e.seed(ctx, []string{ns}, n, 0); err != nil {
				return nil, nil, err
			}
			polls := b.Polls()
			before := e.proxy.Counts()
			e.proxy.Spans(true)
			took, _, err := measure(e.kc, []string{e.plugin, "reconcile", "-n", ns, "--catalog-namespace", reconcilebench.CatalogNamespace,
				"--trust-namespace-writers", "--workers", fmt.Sprint(rtReconcileWorkers), "--interval", "1ms", "--retry-horizon", "0",
				"--max-duration", "5m", "-o", "json"})
			spans := e.proxy.Spans(false)
			if i == 0 && (n == 1 || n == slices.Max(rtReconcileRecords)) {
				fmt.Fprintf(os.Stderr, "the API requests of reconcile over %d pending records, %d workers (start, duration):\n  %s\n",
					n, rtReconcileWorkers, strings.Join(apicount.Timeline(spans), "\n  "))
			}
			if err != nil {
				return nil, nil, err
			}
			left, err := e.pendingCount(ctx)
			if err != nil {
				return nil, nil, err
			}
			if got := b.Polls() - polls; left != 0 || got != n {
				return nil, nil, fmt.Errorf("reconcile over %d records left %d pending; the broker answered %d polls, want %d", n, left, got, n)
			}
			chains[n] = append(chains[n], rtSample{took: took, requests: e.proxy.Counts().Sub(before).Total(), chain: apicount.CriticalPath(spans)})
		}
	}
	one := median(rtOf(chains[1], rtChain))
	var figures []figure
	notes := []string{fmt.Sprintf("reconcile -n NS --workers %d over N pending records, each finished by one poll, %s added to every API request (median of %d runs):",
		rtReconcileWorkers, roundTrip, len(chains[1]))}
	for _, n := range rtReconcileRecords {
		chain := median(rtOf(chains[n], rtChain))
		notes = append(notes, fmt.Sprintf("  %-34s requests %d, round trips %d, wall %s", fmt.Sprintf("reconcile, %d pending", n),
			median(rtOf(chains[n], rtRequests)), chain, median(rtOf(chains[n], rtTook)).Round(time.Millisecond)))
		if n == 1 {
			continue
		}
		rounds := (n + rtReconcileWorkers - 1) / rtReconcileWorkers
		f := figure{
			Name:  fmt.Sprintf("round trips: reconcile, %d pending, %d workers", n, rtReconcileWorkers),
			Value: time.Duration(1000 * chain), Floor: time.Duration(1000 * rounds * one), Count: true,
			What: fmt.Sprintf("ceil(%d/%d) x one record's reconcile (%d)", n, rtReconcileWorkers, one),
		}
		if n == slices.Max(rtReconcileRecords) {
			f.Target = 1.5
		}
		figures = append(figures, f)
	}
	return figures, notes, nil
}

func rtTook(s rtSample) time.Duration { return s.took }
func rtRequests(s rtSample) int       { return s.requests }
func rtChain(s rtSample) int          { return s.chain }

// rtOf is one measure of each sample.
func rtOf[T any](samples []rtSample, of func(rtSample) T) []T {
	out := make([]T, len(samples))
	for i, s := range samples {
		out[i] = of(s)
	}
	return out
}
