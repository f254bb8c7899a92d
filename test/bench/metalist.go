package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/bench/reconcilebench"
)

// listCost is what one way of listing the records cost: its wall time, the CPU time
// the API server and etcd (of this control plane) and this process spent on it, and how
// many items it returned.
type listCost struct {
	What                   string
	Took                   time.Duration
	APIServer, Etcd, Local time.Duration
	Items                  int
	// PeakRSS is the peak memory of the process that listed, when it was one of its own.
	PeakRSS int64
}

// selfCPU is the CPU time (user and system) this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procOf is the pid of the process named comm whose command line holds dir (this
// control plane's, among others on the machine), 0 if none.
func procOf(comm, dir string) int {
	for _, pid := range procNamed(comm) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(b), dir) {
			return pid
		}
	}
	return 0
}

// ticks is pid's CPU time so far.
func ticks(pid int) time.Duration {
	t, _ := procTicks(pid)
	return time.Duration(t) * time.Second / userHZ
}

// listCosts seeds total instance records (pending of them labelled pending) and measures,
// runs times each, the ways of listing them: reconcile's first list of every record's
// metadata as it is (pages), the same in one page, the same from the API server's
// cache (resourceVersion 0), and the records with work alone by their label.
func listCosts(total, pending, runs int) error {
	bins, _, dir, err := setup()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e, err := startScaleEnv(bins, "", dir)
	if err != nil {
		return err
	}
	defer e.close()
	ctx := context.Background()
	namespaces := make([]string, 10)
	for j := range namespaces {
		namespaces[j] = fmt.Sprintf("bench-%02d", j)
	}
	start := time.Now()
	if err := e.seed(ctx, namespaces, pending, total-pending); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "seeded %d records (%d pending) in %s\n", total, pending, time.Since(start).Round(time.Millisecond))
	apiPid, etcdPid := procOf("kube-apiserver", e.cp.Dir), procOf("etcd", e.cp.Dir)
	cms := e.meta.Resource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	kinds := store.LabelKind + " in (" + strings.Join([]string{v1alpha1.KindBroker, v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding}, ",") + ")"
	metaList := func(opts metav1.ListOptions) (int, error) {
		n := 0
		for {
			l, err := cms.List(ctx, opts)
			if err != nil {
				return n, err
			}
			n += len(l.Items)
			if l.Continue == "" {
				return n, nil
			}
			opts.Continue = l.Continue
		}
	}
	ways := []struct {
		what string
		list func() (int, error)
	}{
		{"store.ListPendingWithIDs (every record's metadata, pages)", func() (int, error) {
			items, _, err := e.st.ListPendingWithIDs(ctx, "")
			return len(items), err
		}},
		{"every record's metadata, pages of 500", func() (int, error) {
			return metaList(metav1.ListOptions{LabelSelector: kinds, Limit: 500})
		}},
		{"every record's metadata, pages of 2000", func() (int, error) {
			return metaList(metav1.ListOptions{LabelSelector: kinds, Limit: 2000})
		}},
		{"every record's metadata, pages of 5000", func() (int, error) {
			return metaList(metav1.ListOptions{LabelSelector: kinds, Limit: 5000})
		}},
		{"every record's metadata, one page", func() (int, error) {
			return metaList(metav1.ListOptions{LabelSelector: kinds})
		}},
		{"every record's metadata, one page, resourceVersion 0 (cache)", func() (int, error) {
			return metaList(metav1.ListOptions{LabelSelector: kinds, ResourceVersion: "0"})
		}},
		{"the pending records' metadata (label selector)", func() (int, error) {
			return metaList(metav1.ListOptions{LabelSelector: kinds + "," + store.LabelPending + "=true"})
		}},
		{"the pending records' metadata (label selector), pages of 500", func() (int, error) {
			return metaList(metav1.ListOptions{LabelSelector: kinds + "," + store.LabelPending + "=true", Limit: 500})
		}},
		{"the pending records in full (label selector)", func() (int, error) {
			l, err := e.core.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: store.LabelPending + "=true"})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}},
	}
	// The id checks' lists, one per record: of the first 50 pending records' ids.
	pend, err := cms.List(ctx, metav1.ListOptions{LabelSelector: kinds + "," + store.LabelPending + "=true", Limit: 50})
	if err != nil {
		return err
	}
	type idOf struct{ ns, label string }
	var ids []idOf
	for _, m := range pend.Items {
		for k := range m.Labels {
			if strings.HasPrefix(k, store.IDLabelPrefix) {
				ids = append(ids, idOf{m.Namespace, k})
			}
		}
	}
	idKinds := store.LabelKind + " in (" + v1alpha1.KindServiceInstance + "," + v1alpha1.KindServiceInstance + "IDClaim)"
	for _, scope := range []string{"cluster", "namespace", "empty namespace"} {
		ways = append(ways, struct {
			what string
			list func() (int, error)
		}{fmt.Sprintf("%d id checks' lists, each of one id (%s)", len(ids), scope), func() (int, error) {
			n := 0
			for _, id := range ids {
				ns := ""
				switch scope {
				case "namespace":
					ns = id.ns
				case "empty namespace":
					// What a list costs whatever the namespace holds.
					ns = "bench-empty"
				}
				l, err := cms.Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: idKinds + "," + id.label + "=true"})
				if err != nil {
					return n, err
				}
				n += len(l.Items)
			}
			return n, nil
		}})
	}
	// Between full passes, the id checks of a namespace with many records with work
	// are answered by one list of its instances and bindings (store.ListIDUsersIn):
	// of one namespace, and of each namespace with pending records.
	allPending, err := cms.List(ctx, metav1.ListOptions{LabelSelector: kinds + "," + store.LabelPending + "=true"})
	if err != nil {
		return err
	}
	withWork := map[string]bool{}
	for _, m := range allPending.Items {
		withWork[m.Namespace] = true
	}
	var busy []string
	for ns := range withWork {
		busy = append(busy, ns)
	}
	if len(busy) > 0 {
		ways = append(ways, struct {
			what string
			list func() (int, error)
		}{"store.ListIDUsersIn, one namespace", func() (int, error) {
			_, ids, err := e.st.ListIDUsersIn(ctx, busy[:1])
			return ids.Listed(), err
		}}, struct {
			what string
			list func() (int, error)
		}{fmt.Sprintf("store.ListIDUsersIn, the %d namespaces with work", len(busy)), func() (int, error) {
			_, ids, err := e.st.ListIDUsersIn(ctx, busy)
			return ids.Listed(), err
		}})
	}
	// Reconcile's full pass as a process of its own makes it, at each metadata page
	// size: its peak memory (RSS), beside the API server's CPU and its own.
	for _, page := range []int64{500, 2000, 5000} {
		ways = append(ways, struct {
			what string
			list func() (int, error)
		}{fmt.Sprintf("store.ListPendingWithIDs, pages of %d, a process of its own", page), func() (int, error) {
			return metaListChild(e.direct, page)
		}})
	}
	costs := make([][]listCost, len(ways))
	for range runs {
		for i, w := range ways {
			a0, e0, l0 := ticks(apiPid), ticks(etcdPid), selfCPU()
			t0 := time.Now()
			n, err := w.list()
			if err != nil {
				return fmt.Errorf("%s: %w", w.what, err)
			}
			c := listCost{What: w.what, Took: time.Since(t0), APIServer: ticks(apiPid) - a0, Etcd: ticks(etcdPid) - e0, Local: selfCPU() - l0, Items: n}
			if ch := lastChild; ch.items == n && ch.cpu > 0 {
				c.Local, c.PeakRSS, lastChild = ch.cpu, ch.rss, childUsage{}
			}
			costs[i] = append(costs[i], c)
		}
	}
	var load string
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Printf("%d records (%d pending), %d namespaces, catalog namespace %s; medians of %d runs; load average %s\n",
		total, pending, len(namespaces), reconcilebench.CatalogNamespace, runs, load)
	fmt.Printf("%-64s %10s %12s %10s %10s %7s %10s\n", "LIST", "WALL", "APISERVER", "ETCD", "CLIENT", "ITEMS", "PEAK RSS")
	for _, c := range costs {
		pick := func(f func(listCost) time.Duration) time.Duration {
			vs := make([]time.Duration, len(c))
			for i := range c {
				vs[i] = f(c[i])
			}
			return median(vs)
		}
		rss := ""
		if c[0].PeakRSS > 0 {
			vs := make([]time.Duration, len(c))
			for i := range c {
				vs[i] = time.Duration(c[i].PeakRSS)
			}
			rss = fmt.Sprintf("%.1f MiB", float64(median(vs))/(1<<20))
		}
		fmt.Printf("%-64s %10s %12s %10s %10s %7d %10s\n", c[0].What,
			pick(func(x listCost) time.Duration { return x.Took }).Round(time.Millisecond),
			pick(func(x listCost) time.Duration { return x.APIServer }).Round(time.Millisecond),
			pick(func(x listCost) time.Duration { return x.Etcd }).Round(time.Millisecond),
			pick(func(x listCost) time.Duration { return x.Local }).Round(time.Millisecond), c[0].Items, rss)
	}
	return nil
}

// The environment of the bench run again as the process that makes a full pass's list
// (metaListChild): the kubeconfig, and the page size of the store's metadata lists.
const (
	envMetaListKubeconfig = "BENCH_METALIST_KUBECONFIG"
	envMetaListPage       = "BENCH_METALIST_PAGE"
)

// childUsage is what the last process of metaListChild used.
type childUsage struct {
	items int
	cpu   time.Duration
	rss   int64
}

var lastChild childUsage

// metaListChild runs this program again to make reconcile's full pass
// (store.ListPendingWithIDs over every namespace) with metadata pages of page records, as
// a process of its own, and notes its CPU time and peak RSS in lastChild.
func metaListChild(kubeconfig string, page int64) (int, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envMetaListKubeconfig+"="+kubeconfig, envMetaListPage+"="+strconv.FormatInt(page, 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("the listing process: %w", err)
	}
	var n int
	var hwm int64
	if _, err := fmt.Sscan(string(out), &n, &hwm); err != nil {
		return 0, fmt.Errorf("the listing process printed %q", out)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru != nil {
		// Its own peak (VmHWM): the rusage's maxrss also counts the memory of this
		// process, which the child shared until it ran the program again.
		lastChild = childUsage{items: n, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rss: hwm << 10}
	}
	return n, nil
}

// The process metaListChild starts lists, prints how many records have work, and exits.
func init() {
	kc := os.Getenv(envMetaListKubeconfig)
	if kc == "" {
		return
	}
	page, err := strconv.ParseInt(os.Getenv(envMetaListPage), 10, 64)
	if err == nil {
		err = metaListOnce(kc, page)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func metaListOnce(kubeconfig string, page int64) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	st := store.New(core, meta, store.WithMetaPageSize(page))
	items, ids, err := st.ListPendingWithIDs(context.Background(), "")
	if err != nil {
		return err
	}
	// The index is held to the end, as a run holds it.
	runtime.KeepAlive(ids)
	var hwm int64
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				hwm, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			}
		}
	}
	fmt.Println(len(items), hwm)
	return nil
}
