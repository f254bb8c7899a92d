package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/bench/apicount"
	"github.com/kubectl-catalog/kubectl-catalog/test/bench/reconcilebench"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// scaleOptions shape the figures on the real API server ("-scale-only").
type scaleOptions struct {
	// Records is the large run's total of instance records, Small the small run's.
	Records, Small int
	// Pending is how many of them wait on an asynchronous provision, in each run.
	Pending int
	// Workers is reconcile's --workers.
	Workers int
	// PollTime and Polls: the broker answers each poll after PollTime, "succeeded" at
	// the Polls-th.
	PollTime time.Duration
	Polls    int
	// RegisterRuns is how many times register and its kubectl floor run.
	RegisterRuns int
	// Shard: the figure of three replicas of a shard group (when the build has them),
	// each process with ShardWorkers workers.
	Shard        bool
	ShardWorkers int
	// ListRuns is how many times get instances -A, graph -A, marketplace and their
	// kubectl floors run after each reconcile run.
	ListRuns int
	// FullPassInterval, when not 0, is reconcile's --full-pass-interval in the timed
	// runs: the bench's own timed list of every record's metadata before each run
	// (reconcileRun.MetaList, the list of a full pass) is recorded as the last full
	// pass (store.MarkFullPass; and the seeded records, whose ids are bound to their
	// namespaces, as needing no id claims: MarkIDClaimsSwept), so that the run lists
	// only the records with work.
	FullPassInterval time.Duration
}

// rssTargetKiB is the target for a reconcile run's peak memory.
const rssTargetKiB = 120 * 1024

// scaleEtcdQuota is the etcd quota of the scale figures' control plane.
const scaleEtcdQuota = 8 << 30

// scaleEnv is a control plane with a counting proxy in front of its API server.
type scaleEnv struct {
	bins   controlplane.Binaries
	plugin string
	dir    string
	cp     *controlplane.ControlPlane
	proxy  *apicount.Proxy
	// kc reaches the API server through the proxy; direct without it (for the floors
	// and the seeding, which are not counted).
	kc, direct string
	core       kubernetes.Interface
	meta       metadata.Interface
	st         *store.Store
	// seeded is when the last seed ended: the pending records' operations started
	// about then.
	seeded time.Time
}

func startScaleEnv(bins controlplane.Binaries, plugin, dir string) (*scaleEnv, error) {
	fmt.Fprintln(os.Stderr, "starting a control plane for the scale figures...")
	cp, err := controlplane.Start(context.Background(), controlplane.Options{Dir: dir + "/cp-scale", Log: os.Stderr,
		// 100,000 records and their writes fit; the API server compacts every 5 minutes.
		EtcdQuotaBytes: scaleEtcdQuota})
	if err != nil {
		return nil, err
	}
	e := &scaleEnv{bins: bins, plugin: plugin, dir: dir, cp: cp, direct: cp.Kubeconfig(controlplane.AdminUser)}
	if e.proxy, err = apicount.New(cp.Server, cp.CAFile); err != nil {
		e.close()
		return nil, err
	}
	e.kc = filepath.Join(dir, "kubeconfig-counted")
	if err := e.proxy.WriteKubeconfig(e.kc, cp.Token(controlplane.AdminUser)); err != nil {
		e.close()
		return nil, err
	}
	// Seeding goes straight to the API server, with a high rate limit.
	cfg := cp.RESTConfig(controlplane.AdminUser)
	cfg.QPS, cfg.Burst = 5000, 10000
	if e.core, err = kubernetes.NewForConfig(cfg); err != nil {
		e.close()
		return nil, err
	}
	if e.meta, err = metadata.NewForConfig(cfg); err != nil {
		e.close()
		return nil, err
	}
	e.st = store.New(e.core, e.meta)
	return e, nil
}

// serverCounts are the requests the API server has served so far, and those it answered
// with an error, by its own metrics (apicount.ServerCounts).
func (e *scaleEnv) serverCounts(ctx context.Context) (all, failed apicount.Counts, err error) {
	raw, err := e.core.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the API server's metrics: %w", err)
	}
	return apicount.ServerCounts(raw)
}

func (e *scaleEnv) close() {
	if e.proxy != nil {
		e.proxy.Close()
	}
	_ = e.cp.Stop()
}

// seedWorkers is how many writes the seeding keeps in flight.
const seedWorkers = 64

// seed creates the namespaces and, spread over them, pending instances waiting on an
// asynchronous provision and ready ones, as pkg/store encodes them and a user's
// provision writes them: each ConfigMap is encoded here and created straight on the API
// server (not through the counting proxy), seedWorkers at once.
func (e *scaleEnv) seed(ctx context.Context, namespaces []string, pending, ready int) error {
	return e.seedNamed(ctx, namespaces, pending, ready, "")
}

// seedNamed is seed, with prefix before each record's name.
func (e *scaleEnv) seedNamed(ctx context.Context, namespaces []string, pending, ready int, prefix string) error {
	keys := map[string]v1alpha1.NamespaceKey{}
	for _, ns := range namespaces {
		created, err := e.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if isAlreadyExists(err) {
			created, err = e.core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		}
		if err != nil {
			return err
		}
		// Bound to the namespace's uid: the id a provision generates (bound to nothing,
		// each record would first be given an id claim by reconcile's first run).
		keys[ns] = v1alpha1.NamespaceKey{UID: created.UID}
	}
	recs := seedRecords(namespaces, pending, ready, prefix)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range seedWorkers {
		wg.Go(func() {
			for i := range jobs {
				ns, name := recs[i].namespace, recs[i].name
				inst := reconcilebench.Instance(ns, name, recs[i].pending)
				inst.Spec.ExternalID = v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, ns, keys[ns])
				if inst.Status.InFlight != nil {
					inst.Status.InFlight.InstanceID = inst.Spec.ExternalID
				}
				cm, err := store.Encode(inst)
				if err == nil {
					// As the store's create sets it.
					cm.Finalizers = append(cm.Finalizers, store.Finalizer)
					_, err = e.core.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("creating instance %s/%s: %w", ns, name, err)
					}
					mu.Unlock()
					cancel()
				}
			}
		})
	}
	for i := range recs {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	e.seeded = time.Now()
	return firstErr
}

// seedRecord is an instance record seed creates.
type seedRecord struct {
	namespace, name string
	pending         bool
}

// seedRecords are the records seed creates, in the order it creates them: pending of
// them pending and ready ready, spread round robin over namespaces, the records named
// after their number with prefix before it. The pending ones come last: the engine
// polls an operation every tenth of its age (at least --interval), and their
// operations are as old when the run starts whether a few thousand or a hundred
// thousand records were seeded before them. (Seeded first, at 100,000 records they
// were minutes old, and the run waited some 15 s for each record's second poll.)
func seedRecords(namespaces []string, pending, ready int, prefix string) []seedRecord {
	recs := make([]seedRecord, 0, pending+ready)
	for j := range pending + ready {
		i := (j + pending) % (pending + ready) // the ready records (pending and up), then the pending
		r := seedRecord{namespace: namespaces[i%len(namespaces)], name: fmt.Sprintf("%sready-%06d", prefix, i), pending: i < pending}
		if r.pending {
			r.name = fmt.Sprintf("%spending-%06d", prefix, i)
		}
		recs = append(recs, r)
	}
	return recs
}

func isAlreadyExists(err error) bool {
	var s interface{ Status() metav1.Status }
	return errors.As(err, &s) && s.Status().Reason == metav1.StatusReasonAlreadyExists
}

// pendingCount is how many records are labelled pending.
func (e *scaleEnv) pendingCount(ctx context.Context) (int, error) {
	list, err := e.core.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: store.LabelPending + "=true"})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// nonePending says whether no record is labelled pending. It is polled while a run is
// timed, on the machine the run shares: it reads metadata only, from the API server's
// cache (no etcd read, no record serialised in full), and only a "none" is confirmed
// with a consistent read.
func (e *scaleEnv) nonePending(ctx context.Context) (bool, error) {
	cms := e.meta.Resource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	for _, rv := range []string{"0", ""} {
		list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: store.LabelPending + "=true", ResourceVersion: rv, Limit: 1})
		if err != nil || len(list.Items) > 0 {
			return false, err
		}
	}
	return true, nil
}

// reconcileRun is one measured run of "kubectl-catalog reconcile -A".
type reconcileRun struct {
	Total, Pending int
	Took, Floor    time.Duration
	// List is the floor's LIST of the pending records, BrokerShare its broker time over
	// the workers.
	List, BrokerShare time.Duration
	// MetaList is reconcile's first list alone (store.ListPendingWithIDs), timed
	// before the run.
	MetaList time.Duration
	// OpAge is how long before the run its pending records' operations were seeded:
	// the engine waits a tenth of an operation's age between two polls.
	OpAge    time.Duration
	RSSKiB   int64
	Requests apicount.Counts
	// Failed: the requests answered with an error status, by verb, resource and status.
	Failed apicount.Counts
	Polls  int
	// Lists: the commands that read every record, after the run.
	Lists lists
}

// lists are the median wall times of the commands that read every record of the
// cluster (or the catalog), each beside kubectl's, in the same run.
type lists struct {
	Get, Graph, Kubectl time.Duration
	// Marketplace and its floor, kubectl's LIST of the catalog namespace's ConfigMaps.
	Marketplace, MarketplaceFloor time.Duration
	// Peak memory of one run of each, KiB.
	GetRSS, GraphRSS, KubectlRSS int64
}

// listFigures runs get instances -A, graph -A and kubectl get configmaps -A of the same
// records, and marketplace and its LIST, in turns, runs times each, straight to the API
// server; then each once more for its peak memory.
func (e *scaleEnv) listFigures(ctx context.Context, runs int) (lists, error) {
	var l lists
	if runs <= 0 {
		return l, nil
	}
	common := []string{"--catalog-namespace", reconcilebench.CatalogNamespace}
	get := append([]string{e.plugin, "get", "instances", "-A"}, common...)
	graph := append([]string{e.plugin, "graph", "-A"}, common...)
	kubectl := []string{e.bins.Kubectl, "get", "configmaps", "-A", "-l", store.LabelKind + "=" + v1alpha1.KindServiceInstance}
	market := append([]string{e.plugin, "marketplace", "-n", "default"}, common...)
	marketFloor := []string{e.bins.Kubectl, "get", "--raw",
		"/api/v1/namespaces/" + reconcilebench.CatalogNamespace + "/configmaps?labelSelector=" + store.LabelManagedBy + "%3D" + store.ManagedBy}
	cmds := [][]string{kubectl, get, graph, marketFloor, market}
	times := make([][]time.Duration, len(cmds))
	for range runs {
		for i, c := range cmds {
			d, _, err := measure(e.direct, c)
			if err != nil {
				return l, err
			}
			times[i] = append(times[i], d)
		}
	}
	l.Kubectl, l.Get, l.Graph, l.MarketplaceFloor, l.Marketplace = median(times[0]), median(times[1]), median(times[2]), median(times[3]), median(times[4])
	for _, m := range []struct {
		argv []string
		to   *int64
	}{{kubectl, &l.KubectlRSS}, {get, &l.GetRSS}, {graph, &l.GraphRSS}} {
		rss, err := peakMemory(e.direct, m.argv)
		if err != nil {
			return l, err
		}
		*m.to = rss
	}
	fmt.Fprintf(os.Stderr, "get instances -A %s (%.1f MiB), graph -A %s (%.1f MiB), kubectl get configmaps -A %s (%.1f MiB); marketplace %s, its LIST %s\n",
		l.Get.Round(time.Millisecond), float64(l.GetRSS)/1024, l.Graph.Round(time.Millisecond), float64(l.GraphRSS)/1024,
		l.Kubectl.Round(time.Millisecond), float64(l.KubectlRSS)/1024, l.Marketplace.Round(time.Millisecond), l.MarketplaceFloor.Round(time.Millisecond))
	return l, nil
}

// reconcileFloor is the floor of a reconcile run: the broker's time spread over the
// workers (the run cannot be faster than its broker calls on that many workers), plus
// one LIST of the pending records (it cannot start before it knows them).
func reconcileFloor(brokerBusy time.Duration, workers int, list time.Duration) time.Duration {
	return brokerBusy/time.Duration(max(workers, 1)) + list
}

// runReconcile runs reconcile once over every namespace and measures it against its
// floor; every pending record must be finished by it.
func (e *scaleEnv) runReconcile(ctx context.Context, o scaleOptions, b *reconcilebench.Broker, total int) (reconcileRun, error) {
	r := reconcileRun{Total: total}
	var err error
	if r.Pending, err = e.pendingCount(ctx); err != nil {
		return r, err
	}
	// The floor's LIST: what kubectl takes to read the pending records, process start included.
	if r.List, _, err = measure(e.direct, []string{e.bins.Kubectl, "get", "--raw",
		"/api/v1/configmaps?labelSelector=" + store.LabelPending + "%3Dtrue"}); err != nil {
		return r, err
	}
	// What reconcile's first list costs alone: the metadata of every record, page by
	// page. Timed after the run (the same records, none pending then), so that the
	// pending operations are no older when the run starts at 100,000 records than at
	// 2,000 (seedRecords); before it only where the run needs the full pass's marker.
	var listStart time.Time
	metaList := func() (*store.IDIndex, error) {
		listStart = time.Now()
		_, ids, err := e.st.ListPendingWithIDs(ctx, "")
		r.MetaList = time.Since(listStart)
		return ids, err
	}
	args := []string{e.plugin, "reconcile", "-A", "--catalog-namespace", reconcilebench.CatalogNamespace,
		"--trust-namespace-writers", "--workers", fmt.Sprint(o.Workers), "--interval", "1ms",
		"--retry-horizon", "0", "--max-duration", "10m", "-o", "json"} // the client's rate limits as --workers sets them
	if o.FullPassInterval > 0 {
		ids, err := metaList()
		if err != nil {
			return r, err
		}
		// The seeded records' ids are bound to their namespaces and need no id
		// claims: the cluster is as a first full pass leaves it.
		if err := e.st.MarkIDClaimsSwept(ctx, reconcilebench.CatalogNamespace); err != nil {
			return r, err
		}
		if err := e.st.MarkFullPass(ctx, reconcilebench.CatalogNamespace, listStart, store.NewFullPassSizes(ids.Sizes())); err != nil {
			return r, err
		}
		args = append(args, "--full-pass-interval", o.FullPassInterval.String())
	}
	busy, polls := b.Busy(), b.Polls()
	// The run goes straight to the API server, as a user's does (through the counting
	// proxy only with -profile): a proxy in its path would add its own CPU to the run's
	// on the machine's two CPUs. Its requests are the API server's own count of them.
	before, failed, err := e.serverCounts(ctx)
	if err != nil {
		return r, err
	}
	kc := e.direct
	if profileDir != "" {
		// Profiled: through the counting proxy, which logs the run's requests.
		kc = e.kc
	}
	start := time.Now()
	r.OpAge = start.Sub(e.seeded)
	r.RSSKiB, err = peakMemory(kc, args)
	r.Took = time.Since(start)
	if err != nil {
		return r, err
	}
	after, failedAfter, err := e.serverCounts(ctx)
	if err != nil {
		return r, err
	}
	r.Requests = after.Sub(before)
	r.Failed = failedAfter.Sub(failed)
	r.Polls = b.Polls() - polls
	r.BrokerShare = (b.Busy() - busy) / time.Duration(o.Workers)
	r.Floor = reconcileFloor(b.Busy()-busy, o.Workers, r.List)
	left, err := e.pendingCount(ctx)
	if err != nil {
		return r, err
	}
	if left != 0 || r.Polls != r.Pending*o.Polls {
		return r, fmt.Errorf("reconcile left %d of %d records pending; the broker answered %d polls, want %d", left, r.Pending, r.Polls, r.Pending*o.Polls)
	}
	if o.FullPassInterval <= 0 {
		if _, err := metaList(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// scaleFigures measures reconcile on the real API server: a run with o.Small records
// in all, then one with o.Records, each with o.Pending of them waiting on an
// asynchronous provision; then the API requests of a synchronous provision and the
// register of a 500 x 20 catalog against kubectl create.
func scaleFigures(bins controlplane.Binaries, plugin, dir string, o scaleOptions) ([]figure, []string, error) {
	ctx := context.Background()
	e, err := startScaleEnv(bins, plugin, dir)
	if err != nil {
		return nil, nil, err
	}
	defer e.close()
	bcfg := reconcilebench.Config{PollTime: o.PollTime, Polls: o.Polls}
	b := reconcilebench.NewBroker(bcfg)
	srv := httptest.NewServer(b)
	defer srv.Close()
	if err := e.seed(ctx, []string{reconcilebench.CatalogNamespace}, 0, 0); err != nil {
		return nil, nil, err
	}
	if err := reconcilebench.SeedBroker(ctx, e.st, srv.URL); err != nil {
		return nil, nil, err
	}

	var figures []figure
	var notes []string
	if o.Records > 0 {
		f, n, err := e.reconcileFigures(ctx, o, b)
		if err != nil {
			return nil, nil, err
		}
		figures, notes = f, n
	}
	if o.Shard {
		f, n, err := e.shardFigure(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		figures, notes = append(figures, f...), append(notes, n...)
	}
	const provisions = 3
	counts, err := e.provisionRequests(ctx, provisions)
	if err != nil {
		return nil, nil, err
	}
	reg, regNote, err := e.registerFigure(ctx, o.RegisterRuns)
	if err != nil {
		return nil, nil, err
	}
	figures = append(figures, reg)
	// Reported: what a user waits for is the round trips (-round-trips-only), whose
	// targets replaced the request count's.
	notes = append(notes, fmt.Sprintf("provision (synchronous plan), API requests per provision (%d provisions): %.3g in all: %s",
		provisions, float64(counts.Total())/provisions, counts.Line(provisions)), regNote)
	return figures, notes, nil
}

// reconcileFigures are the two reconcile runs of scaleFigures.
func (e *scaleEnv) reconcileFigures(ctx context.Context, o scaleOptions, b *reconcilebench.Broker) ([]figure, []string, error) {
	var runs []reconcileRun
	seeded := 0
	var high []figure // the run on highWorkers workers
	var highNote string
	for i, total := range []int{o.Small, o.Records} {
		namespaces := make([]string, 10)
		for j := range namespaces {
			namespaces[j] = fmt.Sprintf("bench-%d-%02d", i, j)
		}
		ready := total - seeded - o.Pending
		if ready < 0 {
			return nil, nil, fmt.Errorf("%d records in all cannot hold %d pending after %d already there", total, o.Pending, seeded)
		}
		start := time.Now()
		if err := e.seed(ctx, namespaces, o.Pending, ready); err != nil {
			return nil, nil, err
		}
		seeded += o.Pending + ready
		fmt.Fprintf(os.Stderr, "seeded %d records (%d pending) in %s; reconcile on %d records, %d workers...\n",
			o.Pending+ready, o.Pending, time.Since(start).Round(time.Millisecond), seeded, o.Workers)
		r, err := e.runReconcile(ctx, o, b, seeded)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(os.Stderr, "reconcile on %d records: %s (floor %s), %.1f MiB\n", seeded, r.Took.Round(time.Millisecond), r.Floor.Round(time.Millisecond), float64(r.RSSKiB)/1024)
		if r.Lists, err = e.listFigures(ctx, o.ListRuns); err != nil {
			return nil, nil, err
		}
		runs = append(runs, r)
		if i == 0 {
			f, n, added, err := e.highWorkersRun(ctx, o, b, seeded)
			if err != nil {
				return nil, nil, err
			}
			seeded += added
			high, highNote = append(high, f...), n
		}
	}
	small, large := runs[0], runs[1]
	what := fmt.Sprintf("broker time / workers (%d polls x %s / %d) + kubectl LIST of the pending", large.Polls, o.PollTime, o.Workers)
	figures := []figure{
		{Name: fmt.Sprintf("reconcile -A, %d records (%d pending), %d workers: wall time", small.Total, small.Pending, o.Workers),
			Value: small.Took, Floor: small.Floor, What: what, Target: reconcileTarget(o.Workers)},
		{Name: fmt.Sprintf("reconcile -A, %d records (%d pending), %d workers: wall time", large.Total, large.Pending, o.Workers),
			Value: large.Took, Floor: large.Floor, What: what},
		{Name: fmt.Sprintf("reconcile -A, %d records vs %d records: wall time", large.Total, small.Total),
			Value: large.Took, Floor: small.Took, What: fmt.Sprintf("the %d-record run", small.Total), Target: 1.2},
		{Name: fmt.Sprintf("reconcile -A, %d records: peak memory", large.Total),
			Value: time.Duration(large.RSSKiB), Floor: rssTargetKiB, What: "the target, 120 MiB", Target: 1, Bytes: true},
		{Name: fmt.Sprintf("reconcile -A, %d records: peak memory", small.Total),
			Value: time.Duration(small.RSSKiB), Floor: rssTargetKiB, What: "the target, 120 MiB", Bytes: true},
	}
	if o.ListRuns > 0 {
		kubectl := fmt.Sprintf("kubectl get configmaps -A -l %s=%s (the same records)", store.LabelKind, v1alpha1.KindServiceInstance)
		for _, r := range runs {
			figures = append(figures,
				figure{Name: fmt.Sprintf("get instances -A, %d records: wall time", r.Total), Value: r.Lists.Get, Floor: r.Lists.Kubectl, What: kubectl, Target: 1.5},
				figure{Name: fmt.Sprintf("graph -A, %d records: wall time", r.Total), Value: r.Lists.Graph, Floor: r.Lists.Kubectl, What: kubectl, Target: 1.5},
				figure{Name: fmt.Sprintf("get instances -A, %d records: peak memory", r.Total), Value: time.Duration(r.Lists.GetRSS), Floor: time.Duration(r.Lists.KubectlRSS), What: "kubectl get configmaps -A", Bytes: true},
				figure{Name: fmt.Sprintf("graph -A, %d records: peak memory", r.Total), Value: time.Duration(r.Lists.GraphRSS), Floor: time.Duration(r.Lists.KubectlRSS), What: "kubectl get configmaps -A", Bytes: true},
				// Unchanged by the records of other namespaces: the same ratio at each size.
				figure{Name: fmt.Sprintf("marketplace, among %d records: wall time", r.Total), Value: r.Lists.Marketplace, Floor: r.Lists.MarketplaceFloor, What: "kubectl get --raw (LIST of the catalog namespace)", Target: 1})
		}
	}
	figures = append(figures, high...)
	notes := []string{highNote}
	if fi, err := os.Stat(filepath.Join(e.cp.Dir, "etcd", "member", "snap", "db")); err == nil {
		notes = append(notes, fmt.Sprintf("etcd's database after the runs: %.0f MiB, for %d records and the catalog (quota %d GiB)",
			float64(fi.Size())/(1<<20), large.Total, scaleEtcdQuota>>30))
	}
	for _, r := range runs {
		notes = append(notes, fmt.Sprintf("reconcile -A on %d records: its first list alone (the metadata of every record, pages of %d) took %s",
			r.Total, store.DefaultFullPassPageSize, r.MetaList.Round(time.Millisecond)))
		notes = append(notes, fmt.Sprintf("reconcile -A on %d records: its pending records' operations were seeded %s before the run (the engine waits a tenth of an operation's age between polls)",
			r.Total, r.OpAge.Round(time.Millisecond)))
		notes = append(notes, fmt.Sprintf("reconcile -A on %d records: floor = %s broker + %s LIST; API requests per polled record %.2f (%s); answered with an error: %s",
			r.Total, r.BrokerShare.Round(time.Millisecond), r.List.Round(time.Millisecond),
			float64(r.Requests.Total())/float64(r.Pending), r.Requests.Line(r.Pending), cmp.Or(r.Failed.Line(1), "none")))
	}
	return figures, notes, nil
}

// provisionRequests provisions runs instances of a synchronous plan of the test
// broker's demo catalog with the real binary, each a process of its own as a user's,
// and returns the API requests they sent, in all.
func (e *scaleEnv) provisionRequests(ctx context.Context, runs int) (apicount.Counts, error) {
	b, err := broker.New(broker.Options{RequestLogLimit: 100})
	if err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		return nil, err
	}
	defer b.Close()
	const catNS, ns = "catalog-demo", "provision-bench"
	if err := e.seed(ctx, []string{ns}, 0, 0); err != nil {
		return nil, err
	}
	if _, _, err := measure(e.direct, []string{e.plugin, "register", "demo", "--url", b.URL(), "--catalog-namespace", catNS}); err != nil {
		return nil, err
	}
	before := e.proxy.Counts()
	var first []string
	for i := range runs {
		e.proxy.Log(i == 0)
		if _, _, err := measure(e.kc, []string{e.plugin, "provision", fmt.Sprintf("db-%d", i), "--class", "postgresql", "--plan", "hobby",
			"-n", ns, "--catalog-namespace", catNS}); err != nil {
			return nil, err
		}
		if i == 0 {
			first = e.proxy.Log(false)
		}
	}
	counts := e.proxy.Counts().Sub(before)
	fmt.Fprintf(os.Stderr, "the API requests of one synchronous provision:\n  %s\n", strings.Join(first, "\n  "))
	// Every one finished, synchronously.
	for i := range runs {
		inst, err := e.st.Instances().Get(ctx, ns, fmt.Sprintf("db-%d", i))
		if err != nil {
			return nil, err
		}
		if inst.Status.Phase != v1alpha1.PhaseReady || inst.HasPendingWork() {
			return nil, fmt.Errorf("instance %s/%s: phase %s, pending %v after a synchronous provision", ns, inst.Name, inst.Status.Phase, inst.HasPendingWork())
		}
	}
	return counts, nil
}

// configMapList is the ConfigMaps of namespace labelled as the plugin's, as a v1 List
// whose items are in namespace to instead: the same objects, to create again.
func (e *scaleEnv) configMapList(ctx context.Context, namespace, to string) ([]byte, int, error) {
	list, err := e.core.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: store.LabelManagedBy})
	if err != nil {
		return nil, 0, err
	}
	out := corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, cm := range list.Items {
		c := corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: to, Labels: cm.Labels, Annotations: cm.Annotations,
				Finalizers: cm.Finalizers},
			Data: cm.Data, BinaryData: cm.BinaryData,
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, 0, err
		}
		out.Items = append(out.Items, runtime.RawExtension{Raw: raw})
	}
	body, err := json.Marshal(out)
	return body, len(list.Items), err
}

// registerFigure registers a broker serving a 500 x 20 catalog and, as its floor,
// creates the same ConfigMaps with "kubectl create -f" of one List, alternately,
// each into a new namespace; both with their default client rate limits.
func (e *scaleEnv) registerFigure(ctx context.Context, runs int) (figure, string, error) {
	cat := broker.GenerateCatalog(500, 20)
	b, err := broker.New(broker.Options{Catalog: &cat, RequestLogLimit: 100})
	if err != nil {
		return figure{}, "", err
	}
	if err := b.Start(); err != nil {
		return figure{}, "", err
	}
	defer b.Close()
	var tr, tk []time.Duration
	var objects, bytes int
	for i := range runs {
		catNS := fmt.Sprintf("register-%d", i)
		d, _, err := measure(e.direct, []string{e.plugin, "register", "big", "--url", b.URL(), "--catalog-namespace", catNS})
		if err != nil {
			return figure{}, "", err
		}
		tr = append(tr, d)
		to := fmt.Sprintf("kubectl-create-%d", i)
		body, n, err := e.configMapList(ctx, catNS, to)
		if err != nil {
			return figure{}, "", err
		}
		objects, bytes = n, len(body)
		file := filepath.Join(e.dir, to+".json")
		if err := os.WriteFile(file, body, 0o600); err != nil {
			return figure{}, "", err
		}
		if err := e.seed(ctx, []string{to}, 0, 0); err != nil {
			return figure{}, "", err
		}
		if d, _, err = measure(e.direct, []string{e.bins.Kubectl, "create", "-f", file}); err != nil {
			return figure{}, "", err
		}
		tk = append(tk, d)
		fmt.Fprintf(os.Stderr, "register 500 x 20: %s; kubectl create -f of its %d ConfigMaps: %s\n", tr[i].Round(time.Millisecond), n, d.Round(time.Millisecond))
	}
	return figure{Name: "register, 500 classes x 20 plans: wall time", Value: median(tr), Floor: median(tk),
			What: fmt.Sprintf("kubectl create -f (List of the same %d ConfigMaps)", objects), Target: 1},
		fmt.Sprintf("register, 500 x 20: %d ConfigMaps (%.1f MiB as JSON); median of %d runs each, default client rate limits", objects, float64(bytes)/(1<<20), runs),
		nil
}
