package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/test/bench/reconcilebench"
	"github.com/kubectl-catalog/kubectl-catalog/test/testio"
)

// shardGroupName is the group of the replicas figure.
const shardGroupName = "bench"

// hasShardGroup says whether the plugin has "reconcile --serve --shard-group".
func hasShardGroup(plugin string) bool {
	out, err := exec.Command(plugin, "reconcile", "--help").CombinedOutput()
	return err == nil && strings.Contains(string(out), "--shard-group")
}

// server is a "reconcile --serve" process.
type server struct {
	cmd    *exec.Cmd
	base   string
	out    *testio.Buffer
	exited chan error
}

func (e *scaleEnv) startServer(o scaleOptions, group bool) (*server, error) {
	// Port 0: the system picks the port as the process binds it, and the process says
	// which (a port chosen free beforehand may be taken before the process binds it).
	args := []string{"reconcile", "-A", "--serve", "--listen", "127.0.0.1:0", "--catalog-namespace", reconcilebench.CatalogNamespace,
		"--workers", fmt.Sprint(o.Workers), "--interval", "1ms", "--qps", "500", "--burst", "1000"}
	if group {
		args = append(args, "--shard-group", shardGroupName, "--lease-duration", "15s")
	}
	s := &server{cmd: exec.Command(e.plugin, args...), out: &testio.Buffer{}, exited: make(chan error, 1)}
	s.cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kc)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.exited <- s.cmd.Wait() }()
	err := waitFor("reconcile --serve to say where it serves", time.Minute, func() (bool, error) {
		select {
		case err := <-s.exited:
			s.exited <- err
			return false, fmt.Errorf("reconcile --serve exited: %v\n%s", err, s.out.String())
		default:
		}
		if m := serveAddrLine.FindStringSubmatch(s.out.String()); m != nil {
			s.base = "http://" + m[1]
		}
		return s.base != "", nil
	})
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// serveAddrLine is the line where "reconcile --serve" says the address it serves on.
var serveAddrLine = regexp.MustCompile(`serving /healthz and /metrics on (\S+)`)

// metric is the value of a metric line ("name{labels}") of the server's /metrics, -1 when
// it cannot be read.
func (s *server) metric(line string) float64 {
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, line+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(what string, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serveRun starts n "reconcile --serve" processes (a shard group when group), waits until
// they are ready (every member of the group sees all n), then writes o.Pending pending
// records and says how long it took from the first write until none is pending, the
// processor time the reconcile processes used together meanwhile, and where the
// machine's CPU time went.
func (e *scaleEnv) serveRun(ctx context.Context, o scaleOptions, n int, group bool, tag string) (took, product time.Duration, note string, err error) {
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for range n {
		s, err := e.startServer(o, group)
		if err != nil {
			return 0, 0, "", err
		}
		servers = append(servers, s)
	}
	ready := func() (bool, error) {
		for _, s := range servers {
			select {
			case err := <-s.exited:
				return false, fmt.Errorf("reconcile --serve exited: %v\n%s", err, s.out.String())
			default:
			}
			if group && s.metric("kubectl_catalog_shard_members") != float64(n) {
				return false, nil
			}
			if !group && s.metric("kubectl_catalog_reconcile_runs_total") < 0 {
				if resp, err := http.Get(s.base + "/healthz"); err != nil || resp.Body.Close() != nil || resp.StatusCode != http.StatusOK {
					return false, nil
				}
			}
		}
		return true, nil
	}
	if err := waitFor("the servers to be ready", time.Minute, ready); err != nil {
		return 0, 0, "", err
	}
	pids := make([]int, len(servers))
	for i, s := range servers {
		pids[i] = s.cmd.Process.Pid
	}
	namespaces := make([]string, 10)
	for j := range namespaces {
		namespaces[j] = fmt.Sprintf("bench-%s-%02d", tag, j)
	}
	start, from, before := time.Now(), readShares(pids), e.proxy.Counts()
	if err := e.seed(ctx, namespaces, o.Pending, 0); err != nil {
		return 0, 0, "", err
	}
	err = waitFor("every record to finish", 10*time.Minute, func() (bool, error) { return e.nonePending(ctx) })
	to, reqs := readShares(pids), e.proxy.Counts().Sub(before)
	took = time.Since(start)
	product = time.Duration(to.parts[serveProcesses]-from.parts[serveProcesses]) * time.Second / userHZ
	if err != nil {
		for _, s := range servers {
			fmt.Fprintf(os.Stderr, "reconcile --serve:\n%s\n", s.out.String())
		}
	}
	what := fmt.Sprintf("%d reconcile --serve process(es)", n)
	return took, product, sharesNote(what, from, to, took) + fmt.Sprintf("\n%s: API requests per record %.2f (%s)", what,
		float64(reqs.Total())/float64(o.Pending), reqs.Line(o.Pending)), err
}

// shardFigure compares three replicas of a shard group with one "reconcile --serve"
// process on o.Pending pending records each, when the plugin has --shard-group.
func (e *scaleEnv) shardFigure(ctx context.Context, o scaleOptions) ([]figure, []string, error) {
	if !hasShardGroup(e.plugin) {
		return nil, []string{"shard group: skipped, this build has no \"reconcile --serve --shard-group\""}, nil
	}
	// Few enough workers that one process's workers, not the machine, are its bound:
	// what a group adds is workers.
	o.Workers = o.ShardWorkers
	fmt.Fprintf(os.Stderr, "reconcile --serve, one process, %d pending, %d workers...\n", o.Pending, o.Workers)
	one, oneCPU, oneNote, err := e.serveRun(ctx, o, 1, false, "serve")
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "one process: %s; three replicas of a shard group...\n", one.Round(time.Millisecond))
	three, threeCPU, threeNote, err := e.serveRun(ctx, o, 3, true, "group")
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "three replicas: %s\n", three.Round(time.Millisecond))
	// Two CPUs shared with the API server cannot show a group's throughput; what the
	// group costs can be shown anywhere: the replicas' processor time together, per
	// record, against one process's on as many records.
	return []figure{{
			Name:  fmt.Sprintf("reconcile --serve, 3 replicas of a shard group, %d pending, %d workers each: time to finish", o.Pending, o.Workers),
			Value: three, Floor: one, What: "one reconcile --serve process", Target: 0.5,
		}, {
			Name:  fmt.Sprintf("reconcile --serve, 3 replicas of a shard group, %d pending: CPU of the replicas together", o.Pending),
			Value: threeCPU, Floor: oneCPU, What: "one reconcile --serve process's CPU", Target: 1.1,
		}}, []string{fmt.Sprintf("shard group: throughput of 3 replicas %.2fx one process's (timed from the first write of the pending records until none is pending)",
			float64(one)/float64(three)),
			oneNote, threeNote}, nil
}
