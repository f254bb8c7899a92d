package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

const (
	serveNS     = storetest.UserNamespace
	serveBroker = "acme"
)

// serveFixture is a fake cluster with a broker whose catalog is fetched, a fake broker,
// and a Server on them whose API server check and metadata list fail on demand.
type serveFixture struct {
	t       *testing.T
	st      *store.Store
	cluster *storetest.Cluster
	apiDown atomic.Bool
	syncs   atomic.Int32
	// sync, when set, replaces the catalog fetch of brokers.
	sync    func(ctx context.Context) error
	srv     *Server
	reports chan RunReport
}

func newServeFixture(t *testing.T, o Options) *serveFixture {
	t.Helper()
	f := &serveFixture{t: t, reports: make(chan RunReport, 100)}
	cluster := storetest.NewCluster()
	meta := flakyMeta{Interface: cluster.Metadata, down: &f.apiDown}
	f.st, f.cluster = store.New(cluster.Core, meta), cluster
	eng := enginetest.New(f.st, fake.New(), func(c *engine.Config) {
		c.Holder, c.Jitter = "serve-test", func() float64 { return 0.5 }
		c.PollInterval, c.MaxPollInterval = time.Millisecond, time.Millisecond
		c.Catalogs = catalogsync.New(f.st, nil, catalogsync.WithSync(func(ctx context.Context, _ *v1alpha1.Broker) error {
			f.syncs.Add(1)
			if f.sync != nil {
				return f.sync(ctx)
			}
			return nil
		}))
	})
	rec := &reconcile.Reconciler{Store: f.st, Engine: eng}
	ctx := context.Background()
	_, err := f.st.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: serveBroker},
		Spec:       v1alpha1.BrokerSpec{URL: "https://broker.example", Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)
	_, err = f.st.Brokers().UpdateWithRetry(ctx, storetest.CatalogNamespace, serveBroker, func(b *v1alpha1.Broker) error {
		b.Status.ObservedGeneration = b.Generation
		return nil
	})
	assert.NilError(t, err)
	_, err = f.st.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName(serveBroker, "svc-1")},
		Spec: v1alpha1.ServiceClassSpec{BrokerName: serveBroker, Scope: v1alpha1.ScopeCluster, ID: "svc-1", ExternalName: "db",
			Plans: []v1alpha1.ServicePlan{{ID: "plan-1", ExternalName: "small"}}},
	})
	assert.NilError(t, err)

	if o.Debounce == 0 {
		o.Debounce = 10 * time.Millisecond
	}
	if o.APICheckEvery == 0 {
		o.APICheckEvery = time.Nanosecond // no caching unless a test asks for it
	}
	o.Run.Workers = 2
	cms := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("")
	f.srv = &Server{
		Reconciler: rec,
		CheckAPI: func(ctx context.Context) error {
			_, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
			return err
		},
		Report:  func(r RunReport) { f.reports <- r },
		Options: o,
	}
	return f
}

// instance creates an instance record: pending until it is provisioned.
func (f *serveFixture) instance(name string) {
	f.t.Helper()
	_, err := f.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: serveNS, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: serveBroker, ClassExternalName: "db",
			ClassID: "svc-1", PlanExternalName: "small", PlanID: "plan-1", ExternalID: "osb-" + name},
	})
	assert.NilError(f.t, err)
}

// start serves on a loopback port until the returned stop is called; stop returns
// Serve's error and how long Serve took to return.
func (f *serveFixture) start() (base string, stop func() (error, time.Duration)) {
	f.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(f.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()
	var once sync.Once
	var serr error
	var took time.Duration
	stop = func() (error, time.Duration) {
		once.Do(func() {
			start := time.Now()
			cancel()
			select {
			case serr = <-done:
			case <-time.After(30 * time.Second):
				f.t.Fatal("Serve did not return 30s after its context was cancelled")
			}
			took = time.Since(start)
		})
		return serr, took
	}
	f.t.Cleanup(func() { _, _ = stop() })
	return "http://" + ln.Addr().String(), stop
}

// nextReport waits for the next run's report.
func (f *serveFixture) nextReport(within time.Duration) RunReport {
	f.t.Helper()
	select {
	case r := <-f.reports:
		return r
	case <-time.After(within):
		f.t.Fatalf("no run within %s", within)
		return RunReport{}
	}
}

// noReport checks that no run starts within d.
func (f *serveFixture) noReport(d time.Duration) {
	f.t.Helper()
	select {
	case r := <-f.reports:
		f.t.Fatalf("unexpected run: %+v", r.Summary)
	case <-time.After(d):
	}
}

// flakyMeta is a metadata client whose lists fail while down is set, as when the API
// server cannot be reached.
type flakyMeta struct {
	metadata.Interface
	down *atomic.Bool
}

func (m flakyMeta) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return flakyGetter{Getter: m.Interface.Resource(gvr), down: m.down}
}

type flakyGetter struct {
	metadata.Getter
	down *atomic.Bool
}

func (g flakyGetter) Namespace(ns string) metadata.ResourceInterface {
	return flakyResource{ResourceInterface: g.Getter.Namespace(ns), down: g.down}
}

type flakyResource struct {
	metadata.ResourceInterface
	down *atomic.Bool
}

var errRefused = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")

func (r flakyResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	if r.down.Load() {
		return nil, errRefused
	}
	return r.ResourceInterface.List(ctx, opts)
}

// fakeRecords is a MetadataWatcher whose watches the test drives.
type fakeRecords struct {
	lists   atomic.Int32
	opts    chan metav1.ListOptions
	watches chan *watch.RaceFreeFakeWatcher
}

func newFakeRecords() *fakeRecords {
	return &fakeRecords{opts: make(chan metav1.ListOptions, 100), watches: make(chan *watch.RaceFreeFakeWatcher, 100)}
}

func (f *fakeRecords) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	n := f.lists.Add(1)
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "100"}}
	if n == 1 {
		// A record already pending when the watch starts: its later changes are
		// not news.
		list.Items = append(list.Items, *recordMeta("known", "1", true))
	}
	return list, nil
}

func (f *fakeRecords) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewRaceFreeFake()
	f.opts <- opts
	f.watches <- w
	return w, nil
}

func (f *fakeRecords) nextWatch(t *testing.T) (*watch.RaceFreeFakeWatcher, metav1.ListOptions) {
	t.Helper()
	select {
	case w := <-f.watches:
		return w, <-f.opts
	case <-time.After(5 * time.Second):
		t.Fatal("no watch started")
		return nil, metav1.ListOptions{}
	}
}

func recordMeta(uid, rv string, pending bool) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: serveNS, Name: store.ConfigMapName(v1alpha1.KindServiceInstance, uid), UID: types.UID(uid), ResourceVersion: rv,
		Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceInstance},
	}}
	if pending {
		m.Labels[store.LabelPending] = "true"
	}
	return m
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	assert.NilError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	assert.NilError(t, err)
	return resp.StatusCode, string(b)
}

func TestServe_RunsRepeatedlyAndDrivesPendingRecords(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, Options{Interval: 50 * time.Millisecond})
	f.instance("db")
	_, stop := f.start()

	first := f.nextReport(5 * time.Second)
	assert.NilError(t, first.Err)
	assert.Equal(t, first.Summary.Counts[reconcile.Done], 1, "%+v", first.Summary.Items)
	for range 3 {
		r := f.nextReport(5 * time.Second)
		assert.NilError(t, r.Err)
		assert.Equal(t, len(r.Summary.Items), 0, "the instance is Ready: nothing left: %+v", r.Summary.Items)
		assert.Assert(t, !r.Next.After(r.End.Add(50*time.Millisecond)), "next run %s is after the interval (end %s)", r.Next, r.End)
	}
	err, _ := stop()
	assert.NilError(t, err)
	inst, err := f.st.Instances().Get(context.Background(), serveNS, "db")
	assert.NilError(t, err)
	assert.Assert(t, inst.Labels[store.LabelPending] != "true")
}

func TestServe_WatchEventTriggersAnEarlyRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, Options{Interval: time.Hour, Debounce: 20 * time.Millisecond})
	recs := newFakeRecords()
	f.srv.Records = recs
	_, stop := f.start()

	f.nextReport(5 * time.Second) // the first run, at once
	w, opts := recs.nextWatch(t)
	assert.Equal(t, opts.ResourceVersion, "100")
	assert.Assert(t, is.Contains(opts.LabelSelector, store.LabelKind+" in ("))
	assert.Assert(t, opts.AllowWatchBookmarks)

	// Writes to records that were pending already (a run's own claims and status
	// updates) and to records without work start no run.
	w.Modify(recordMeta("known", "101", true))
	w.Add(recordMeta("settled", "102", false))
	w.Action(watch.Bookmark, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "103"}})
	f.noReport(300 * time.Millisecond)

	// A record that becomes pending: a run within the debounce, not in an hour.
	start := time.Now()
	w.Modify(recordMeta("settled", "104", true))
	r := f.nextReport(5 * time.Second)
	assert.Assert(t, time.Since(start) < 2*time.Second, "the early run took %s", time.Since(start))
	assert.Assert(t, r.Next.Sub(r.End) > 30*time.Minute, "the next run is due at the interval: %s", r.Next.Sub(r.End))

	// A record being deleted (deletionTimestamp, no pending label) is news too.
	deleting := recordMeta("gone", "105", false)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	w.Modify(deleting)
	f.nextReport(5 * time.Second)

	// An expired resourceVersion: the watch lists afresh and a run finds whatever it
	// missed; the new watch resumes from the new list.
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	f.nextReport(5 * time.Second)
	_, opts = recs.nextWatch(t)
	assert.Equal(t, opts.ResourceVersion, "100")
	assert.Equal(t, recs.lists.Load(), int32(2))

	err, _ := stop()
	assert.NilError(t, err)
}

func TestServe_ShutdownLetsTheRunFinishWithinTheGracePeriod(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, Options{Interval: time.Hour, ShutdownGrace: 10 * time.Second})
	_, err := f.st.Brokers().UpdateWithRetry(context.Background(), storetest.CatalogNamespace, serveBroker, func(b *v1alpha1.Broker) error {
		b.Status.ObservedGeneration = 0
		return nil
	})
	assert.NilError(t, err)
	syncing := make(chan struct{})
	f.sync = func(ctx context.Context) error {
		close(syncing)
		select {
		case <-time.After(300 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	_, stop := f.start()
	<-syncing
	err, took := stop()
	assert.NilError(t, err)
	assert.Assert(t, took < 5*time.Second, "Serve returned %s after the shutdown; the run needed 300ms", took)
	r := f.nextReport(time.Second)
	assert.NilError(t, r.Err, "the run finished its step")
	assert.Equal(t, r.Summary.Counts[reconcile.Done], 1, "%+v", r.Summary.Items)
	f.noReport(100 * time.Millisecond)
}

func TestServe_ShutdownInterruptsARunThatOutlastsTheGracePeriod(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	grace := 200 * time.Millisecond
	f := newServeFixture(t, Options{Interval: time.Hour, ShutdownGrace: grace})
	_, err := f.st.Brokers().UpdateWithRetry(context.Background(), storetest.CatalogNamespace, serveBroker, func(b *v1alpha1.Broker) error {
		b.Status.ObservedGeneration = 0
		return nil
	})
	assert.NilError(t, err)
	syncing := make(chan struct{})
	f.sync = func(ctx context.Context) error {
		close(syncing)
		<-ctx.Done() // a broker that never answers
		return ctx.Err()
	}
	_, stop := f.start()
	<-syncing
	err, took := stop()
	assert.NilError(t, err)
	assert.Assert(t, took >= grace && took < grace+2*time.Second, "Serve returned %s after the shutdown; grace %s", took, grace)
	r := f.nextReport(time.Second)
	assert.Assert(t, errors.Is(r.Err, context.Canceled), "%v", r.Err)
	// The claim taken for the fetch was released.
	b, err := f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, serveBroker)
	assert.NilError(t, err)
	_, claimed := store.LeaseOf(&b.ObjectMeta)
	assert.Assert(t, !claimed, "the broker is still claimed: %v", b.Annotations)
}

func TestServe_NextRunComesWhenARecordIsDue(t *testing.T) {
	s := &Server{Options: Options{Interval: time.Minute, Debounce: time.Second}}
	s.setup()
	end := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := end.Add(d); return &t }
	for _, tc := range []struct {
		name string
		rep  RunReport
		want time.Duration
	}{
		{name: "nothing pending", want: time.Minute},
		{name: "a retry due sooner", rep: RunReport{Summary: reconcile.Summary{Items: []reconcile.Item{{Outcome: reconcile.Waiting, Until: at(10 * time.Second)}}}}, want: 10 * time.Second},
		{name: "a claim expiring sooner", rep: RunReport{Summary: reconcile.Summary{Items: []reconcile.Item{{Outcome: reconcile.Skipped, Until: at(20 * time.Second)}}}}, want: 20 * time.Second},
		{name: "due later than the interval", rep: RunReport{Summary: reconcile.Summary{Items: []reconcile.Item{{Outcome: reconcile.Waiting, Until: at(time.Hour)}}}}, want: time.Minute},
		{name: "due already: not sooner than the debounce", rep: RunReport{Summary: reconcile.Summary{Items: []reconcile.Item{{Outcome: reconcile.InProgress, Until: at(-time.Second)}}}}, want: time.Second},
		{name: "done records do not count", rep: RunReport{Summary: reconcile.Summary{Items: []reconcile.Item{{Outcome: reconcile.Done, Until: at(time.Second)}}}}, want: time.Minute},
		{name: "time ran out", rep: RunReport{Summary: reconcile.Summary{TimeUp: true}}, want: time.Second},
		{name: "the list failed", rep: RunReport{Err: errRefused}, want: 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rep.End = end
			assert.Equal(t, s.nextRun(tc.rep).Sub(end), tc.want)
		})
	}
}

func TestServe_HandlerServesOnlyGet(t *testing.T) {
	s := &Server{CheckAPI: func(context.Context) error { return nil }}
	ts := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	go func() { _ = ts.Serve(ln) }()
	defer ts.Close()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Post("http://"+ln.Addr().String()+"/healthz", "text/plain", strings.NewReader(""))
	assert.NilError(t, err)
	resp.Body.Close()
	assert.Equal(t, resp.StatusCode, http.StatusMethodNotAllowed)
	resp, err = c.Get("http://" + ln.Addr().String() + "/nope")
	assert.NilError(t, err)
	resp.Body.Close()
	assert.Equal(t, resp.StatusCode, http.StatusNotFound)
}

// panicsOn is an Observer that panics when a step of the instance named name starts,
// as a step of a record with a forged status may.
type panicsOn struct{ name string }

func (p panicsOn) RecordQueued(reconcile.Ref) {}
func (p panicsOn) StepStarted(ref reconcile.Ref, _ string) {
	if ref.Name == p.name {
		var op *v1alpha1.ProvisionedState
		_ = op.PlanID // a nil dereference
	}
}
func (p panicsOn) StepScheduled(reconcile.Ref, time.Time, string) {}
func (p panicsOn) RecordFinished(reconcile.Item)                  {}

func TestServe_AStepThatPanicsDoesNotStopTheServer(t *testing.T) {
	f := newServeFixture(t, Options{Interval: 20 * time.Millisecond, Run: reconcile.Options{Observer: panicsOn{name: "bad"}}})
	f.instance("bad")
	f.instance("db")
	_, stop := f.start()
	for range 3 {
		r := f.nextReport(5 * time.Second)
		assert.NilError(t, r.Err)
		assert.Equal(t, r.Summary.Counts[reconcile.Failed], 1, "%+v", r.Summary.Items)
	}
	err, _ := stop()
	assert.NilError(t, err)
	inst, err := f.st.Instances().Get(context.Background(), serveNS, "db")
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
}
func TestServe_AMemberLooksAgainSoonAtRecordsClaimedByAnother(t *testing.T) {
	end := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	claimedUntil := end.Add(2 * time.Minute)
	rep := RunReport{End: end, Summary: reconcile.Summary{Counts: map[reconcile.Outcome]int{reconcile.Skipped: 1},
		Items: []reconcile.Item{{Outcome: reconcile.Skipped, Until: &claimedUntil}}}}
	s := &Server{Options: Options{Interval: 30 * time.Second}.withDefaults()}
	assert.Equal(t, s.nextRun(rep), end.Add(30*time.Second), "alone: at the interval")
	s.Group = &shard.Group{Name: "g", ID: "a", LeaseDuration: 15 * time.Second}
	assert.Equal(t, s.nextRun(rep), end.Add(5*time.Second), "in a group: within a third of the lease")
}

func TestServe_HealthzFollowsTheAPIServerAndTheLastRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, Options{Interval: 100 * time.Millisecond})
	base, stop := f.start()
	f.nextReport(5 * time.Second)

	code, body := get(t, base+"/healthz")
	assert.Equal(t, code, http.StatusOK, body)
	var h Health
	assert.NilError(t, json.Unmarshal([]byte(body), &h))
	assert.Equal(t, h.Status, "ok")
	assert.Assert(t, h.APIServer.Reachable)
	assert.Assert(t, h.LastRun != nil)
	assert.Assert(t, h.LastRun.Counts != nil)
	assert.Assert(t, h.BrokersUnreachable != nil)

	f.apiDown.Store(true)
	code, body = get(t, base+"/healthz")
	assert.Equal(t, code, http.StatusServiceUnavailable, body)
	assert.Assert(t, is.Contains(body, "the API server cannot be reached"))
	assert.Assert(t, is.Contains(body, "connection refused"))
	// The next run cannot list its work: it says so too.
	for r := f.nextReport(5 * time.Second); r.Err == nil; r = f.nextReport(5 * time.Second) {
	}
	_, body = get(t, base+"/healthz")
	assert.Assert(t, is.Contains(body, "the last run could not list its work"))
	_, metrics := get(t, base+"/metrics")
	assert.Assert(t, is.Contains(metrics, `kubectl_catalog_reconcile_runs_total{result="error"}`))

	f.apiDown.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body = get(t, base+"/healthz")
		if code == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, code, http.StatusOK, body)
	err, _ := stop()
	assert.NilError(t, err)
}

func TestServe_HealthzCachesTheAPICheck(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, Options{Interval: time.Hour, APICheckEvery: time.Hour})
	var checks atomic.Int32
	check := f.srv.CheckAPI
	f.srv.CheckAPI = func(ctx context.Context) error {
		checks.Add(1)
		return check(ctx)
	}
	base, stop := f.start()
	f.nextReport(5 * time.Second)
	for range 5 {
		code, body := get(t, base+"/healthz")
		assert.Equal(t, code, http.StatusOK, body)
	}
	assert.Equal(t, checks.Load(), int32(1))
	err, _ := stop()
	assert.NilError(t, err)
}

func TestServe_HealthzIsUnhealthyWhenNoRunEndsInThreeIntervals(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, Options{Interval: 50 * time.Millisecond, ShutdownGrace: 50 * time.Millisecond})
	_, err := f.st.Brokers().UpdateWithRetry(context.Background(), storetest.CatalogNamespace, serveBroker, func(b *v1alpha1.Broker) error {
		b.Status.ObservedGeneration = 0 // a fetch is due: the broker is synced
		return nil
	})
	assert.NilError(t, err)
	f.srv.Options.Run.MaxDuration = 0 // let the run hang
	f.sync = func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}
	base, stop := f.start()
	time.Sleep(300 * time.Millisecond)
	code, body := get(t, base+"/healthz")
	assert.Equal(t, code, http.StatusServiceUnavailable, body)
	assert.Assert(t, is.Contains(body, "no run has ended since the start"))
	err, _ = stop()
	assert.NilError(t, err)
}

func TestServe_HealthzReportsUnreachableBrokers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, Options{Interval: time.Hour})
	next := metav1.NewTime(time.Now().Add(time.Minute).Truncate(time.Second))
	_, err := f.st.Brokers().UpdateWithRetry(context.Background(), storetest.CatalogNamespace, serveBroker, func(b *v1alpha1.Broker) error {
		b.Status.Retry = &v1alpha1.RetryState{Attempts: 3, LastError: "no answer from broker", NextRetryAt: &next}
		return nil
	})
	assert.NilError(t, err)
	base, stop := f.start()
	f.nextReport(5 * time.Second)
	code, body := get(t, base+"/healthz")
	assert.Equal(t, code, http.StatusOK, "a broker down is not the reconciler's ill health: %s", body)
	var h Health
	assert.NilError(t, json.Unmarshal([]byte(body), &h))
	assert.Equal(t, len(h.BrokersUnreachable), 1, body)
	b := h.BrokersUnreachable[0]
	assert.Equal(t, b.Namespace+"/"+b.Name, storetest.CatalogNamespace+"/"+serveBroker)
	assert.Equal(t, b.Attempts, int32(3))
	assert.Equal(t, b.LastError, "no answer from broker")
	assert.Assert(t, b.NextRetryAt != nil && b.NextRetryAt.Equal(next.Time))
	err, _ = stop()
	assert.NilError(t, err)
}
