package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	for _, scope := range []string{"cluster", "namespace"} {
		ways = append(ways, struct {
			what string
			list func() (int, error)
		}{fmt.Sprintf("%d id checks' lists, each of one id (%s)", len(ids), scope), func() (int, error) {
			n := 0
			for _, id := range ids {
				ns := ""
				if scope == "namespace" {
					ns = id.ns
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
	costs := make([][]listCost, len(ways))
	for range runs {
		for i, w := range ways {
			a0, e0, l0 := ticks(apiPid), ticks(etcdPid), selfCPU()
			t0 := time.Now()
			n, err := w.list()
			if err != nil {
				return fmt.Errorf("%s: %w", w.what, err)
			}
			costs[i] = append(costs[i], listCost{What: w.what, Took: time.Since(t0), APIServer: ticks(apiPid) - a0, Etcd: ticks(etcdPid) - e0, Local: selfCPU() - l0, Items: n})
		}
	}
	var load string
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Printf("%d records (%d pending), %d namespaces, catalog namespace %s; medians of %d runs; load average %s\n",
		total, pending, len(namespaces), reconcilebench.CatalogNamespace, runs, load)
	fmt.Printf("%-64s %10s %12s %10s %10s %7s\n", "LIST", "WALL", "APISERVER", "ETCD", "CLIENT", "ITEMS")
	for _, c := range costs {
		pick := func(f func(listCost) time.Duration) time.Duration {
			vs := make([]time.Duration, len(c))
			for i := range c {
				vs[i] = f(c[i])
			}
			return median(vs)
		}
		fmt.Printf("%-64s %10s %12s %10s %10s %7d\n", c[0].What,
			pick(func(x listCost) time.Duration { return x.Took }).Round(time.Millisecond),
			pick(func(x listCost) time.Duration { return x.APIServer }).Round(time.Millisecond),
			pick(func(x listCost) time.Duration { return x.Etcd }).Round(time.Millisecond),
			pick(func(x listCost) time.Duration { return x.Local }).Round(time.Millisecond), c[0].Items)
	}
	return nil
}
