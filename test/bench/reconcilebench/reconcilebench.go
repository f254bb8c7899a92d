// Package reconcilebench measures how reconcile schedules many asynchronous operations:
// records already waiting on an operation at a broker whose every last_operation answer
// takes a fixed time. The floor is the broker's own time, measured in the same run: the
// sum of the time the broker spent answering polls, divided by the workers. A run near
// the floor spends its workers on broker calls, not on waiting.
//
// The records live on the fake cluster of pkg/store/storetest: what is measured is
// reconcile's scheduling, not the API server. The API requests reconcile sends are
// counted all the same, per record, its Events included: they are written as the
// command writes them (pkg/engine/kube's recorder, in the background, flushed before
// the run is timed as over).
package reconcilebench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Config is the shape of a run.
type Config struct {
	// Records is how many instances wait on an asynchronous provision.
	Records int
	// Workers is reconcile's --workers.
	Workers int
	// PollTime is how long the broker takes to answer each last_operation.
	PollTime time.Duration
	// Polls is how many polls each operation needs: "succeeded" at the last one.
	Polls int
	// APILatency, when positive, is added to each read and write of a ConfigMap the run
	// sends (the fake cluster answers in microseconds; a loaded API server takes
	// milliseconds), so that what a step's API requests add to its broker call shows.
	APILatency time.Duration
}

// Default is the benchmark of "make bench": 1,000 instances, 2 polls of 50 ms each,
// on 16 workers (the CronJob example's).
var Default = Config{Records: 1000, Workers: 16, PollTime: 50 * time.Millisecond, Polls: 2}

// Result is what a run measured.
type Result struct {
	Config
	// Took is reconcile's run, from its list to its summary, and the flush of its
	// Events that follows, as a command ends.
	Took time.Duration
	// Floor is the broker's time: the sum of its answers' durations over the workers.
	Floor time.Duration
	// Polls is how many last_operation requests the broker answered.
	TotalPolls int
	// Done is how many records the run finished.
	Done int
	// Requests counts the API requests of the run by verb (get, update, list...); the
	// creates and updates of Events count as "event".
	Requests map[string]int
	// Steps is the engine steps of the run.
	Steps int
	// APITime is how long the fake cluster takes to serve the run's gets and updates
	// again on as many workers, without reconcile and without a broker: the floor of
	// the fake API server, which spends milliseconds of CPU on every write.
	APITime time.Duration
}

// Ratio is Took over Floor.
func (r Result) Ratio() float64 { return float64(r.Took) / float64(r.Floor) }

// RequestsPerRecord is the run's API requests over its records.
func (r Result) RequestsPerRecord() float64 {
	n := 0
	for _, c := range r.Requests {
		n += c
	}
	return float64(n) / float64(r.Records)
}

// RequestsLine says the requests per record by verb, e.g. "get 1.0, update 3.0".
func (r Result) RequestsLine() string {
	var parts []string
	for _, verb := range []string{"list", "get", "create", "update", "delete", "event"} {
		if c := r.Requests[verb]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %.3g", verb, float64(c)/float64(r.Records)))
		}
	}
	return strings.Join(parts, ", ")
}

const (
	namespace        = "bench"
	catalogNamespace = "catalog-system"
	brokerName       = "slow"
	classID          = "svc"
	planID           = "plan"
)

// Broker answers last_operation after PollTime, "in progress" until an instance's
// Polls-th poll. It answers nothing else: the records are past their provision.
// test/bench serves it to the real binary too.
type Broker struct {
	cfg   Config
	mu    sync.Mutex
	polls map[string]int
	busy  atomic.Int64 // nanoseconds spent answering
	total atomic.Int64
}

// NewBroker is a Broker for cfg's PollTime and Polls.
func NewBroker(cfg Config) *Broker { return &Broker{cfg: cfg, polls: map[string]int{}} }

// Busy is the time the broker has spent answering, summed over its answers.
func (b *Broker) Busy() time.Duration { return time.Duration(b.busy.Load()) }

// Polls is how many last_operation requests the broker has answered.
func (b *Broker) Polls() int { return int(b.total.Load()) }

func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() { b.busy.Add(int64(time.Since(start))) }()
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/service_instances/")
	id, ok2 := strings.CutSuffix(rest, "/last_operation")
	if !ok || !ok2 || r.Method != http.MethodGet {
		http.Error(w, `{"description":"only last_operation is served"}`, http.StatusNotFound)
		return
	}
	time.Sleep(b.cfg.PollTime)
	b.mu.Lock()
	b.polls[id]++
	n := b.polls[id]
	b.mu.Unlock()
	b.total.Add(1)
	state := osb.StateInProgress
	if n >= b.cfg.Polls {
		state = osb.StateSucceeded
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"state": state, "description": fmt.Sprintf("poll %d", n)})
}

// Run sets up cfg.Records instances waiting on an asynchronous provision, runs
// reconcile on them once, and says how it went.
func Run(ctx context.Context, cfg Config) (Result, error) {
	res := Result{Config: cfg, Requests: map[string]int{}}
	b := NewBroker(cfg)
	srv := httptest.NewServer(b)
	defer srv.Close()
	// The client's own transport, as reconcile's (it keeps a connection per worker).
	transports := &osb.Transports{}
	defer transports.CloseIdleConnections()
	client, err := osb.NewClient(&osb.ClientConfig{URL: srv.URL, Transports: transports})
	if err != nil {
		return res, err
	}

	cluster := storetest.NewCluster()
	var counting atomic.Bool
	var mu sync.Mutex
	cluster.Core.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if counting.Load() {
			verb := a.GetVerb()
			if a.GetResource().Resource == "events" {
				verb = "event"
			}
			mu.Lock()
			res.Requests[verb]++
			mu.Unlock()
		}
		return false, nil, nil
	})
	st := cluster.Store()
	if err := seed(ctx, st, cfg.Records); err != nil {
		return res, err
	}
	runStore := st
	if cfg.APILatency > 0 {
		runStore = store.New(slowCore{Interface: cluster.Core, d: cfg.APILatency}, cluster.Metadata)
	}
	// As "kubectl catalog reconcile" records them: one writer of Events per worker.
	events := kube.EventRecorder(cluster.Core, "reconcile-bench@bench/1", cfg.Workers)
	eng := engine.New(engine.Config{
		Store: runStore, Brokers: fake.Brokers{Client: client}, Platform: engine.StaticPlatform{Cluster: "bench"},
		CatalogNamespace: catalogNamespace, Holder: "reconcile-bench",
		// The floor is the broker's latency, not the engine's wait between polls.
		PollInterval: time.Millisecond, MaxPollInterval: time.Millisecond,
		// As "kubectl catalog reconcile" configures it.
		TargetCacheTTL: reconcile.TargetCacheTTL,
		Events:         events,
	})
	rec := &reconcile.Reconciler{Store: runStore, Engine: eng}

	metaLists := cluster.MetadataLists()
	counting.Store(true)
	// Every namespace, as "reconcile -A" (a CronJob's, the real API server's figure).
	sum, err := rec.Run(ctx, reconcile.Options{Workers: cfg.Workers, MaxDuration: 10 * time.Minute})
	flushStart := time.Now()
	if f, ok := events.(interface{ Flush(context.Context) }); ok {
		f.Flush(ctx)
	}
	flushed := time.Since(flushStart)
	counting.Store(false)
	if err != nil {
		return res, err
	}
	res.Requests["list"] += cluster.MetadataLists() - metaLists
	res.Took, err = time.ParseDuration(sum.Took)
	if err != nil {
		return res, err
	}
	res.Took += flushed
	res.Done = sum.Counts[reconcile.Done]
	for _, it := range sum.Items {
		res.Steps += it.Steps
	}
	res.TotalPolls = int(b.total.Load())
	res.Floor = time.Duration(b.busy.Load() / int64(cfg.Workers))
	if res.Done != cfg.Records {
		return res, fmt.Errorf("reconcile finished %d of %d records: %v", res.Done, cfg.Records, sum.Counts)
	}
	res.APITime, err = replay(ctx, st, cfg, res.Requests["get"], res.Requests["update"])
	return res, err
}

// replay sends gets and updates of the instances to the fake cluster on cfg.Workers
// goroutines and says how long that took.
func replay(ctx context.Context, st *store.Store, cfg Config, gets, updates int) (time.Duration, error) {
	insts := st.Instances()
	jobs := make(chan bool, cfg.Workers) // true: get and update; false: get
	errs := make(chan error, cfg.Workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range cfg.Workers {
		wg.Go(func() {
			var err error
			// Each worker keeps to its own records (w, w+workers, ...), so that no two
			// write one record at once: a conflict would not be the cluster's cost.
			var mine []string
			for j := w; j < cfg.Records; j += cfg.Workers {
				mine = append(mine, fmt.Sprintf("db-%04d", j))
			}
			i := 0
			for update := range jobs {
				if err != nil || len(mine) == 0 {
					continue
				}
				name := mine[i%len(mine)]
				i++
				inst, gerr := insts.Get(ctx, namespace, name)
				if gerr != nil {
					err = gerr
					continue
				}
				if update {
					inst.Status.Conditions = nil // any change: the fake writes it
					_, err = insts.Update(ctx, inst)
				}
			}
			errs <- err
		})
	}
	for i := range max(gets, updates) {
		jobs <- i < updates
	}
	close(jobs)
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return took, err
		}
	}
	return took, nil
}

// seed creates the broker, its class and n instances whose provision the broker
// accepted asynchronously, as a provision without --wait leaves them, in a cluster whose
// records all have their id claims (the marker of reconcile's first pass is there).
func seed(ctx context.Context, st *store.Store, n int) error {
	if err := SeedBroker(ctx, st, "https://broker.invalid"); err != nil {
		return err
	}
	for i := range n {
		if _, err := st.Instances().Create(ctx, Instance(namespace, fmt.Sprintf("db-%04d", i), true)); err != nil {
			return err
		}
	}
	return st.MarkIDClaimsSwept(ctx, catalogNamespace)
}

// CatalogNamespace and BrokerName are where SeedBroker records the broker.
const (
	CatalogNamespace = catalogNamespace
	BrokerName       = brokerName
)

// SeedBroker records the cluster-scoped broker BrokerName at url in CatalogNamespace,
// and its one class and plan, which the instances of Instance use.
func SeedBroker(ctx context.Context, st *store.Store, url string) error {
	if _, err := st.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: catalogNamespace, Name: brokerName},
		Spec:       v1alpha1.BrokerSpec{URL: url, Scope: v1alpha1.ScopeCluster},
		// Settled: no work of its own for reconcile.
		Status: v1alpha1.BrokerStatus{ObservedGeneration: 1},
	}); err != nil {
		return err
	}
	_, err := st.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: catalogNamespace, Name: v1alpha1.ClassRecordName(brokerName, classID)},
		Spec: v1alpha1.ServiceClassSpec{BrokerName: brokerName, Scope: v1alpha1.ScopeCluster, ID: classID, ExternalName: "db",
			Plans: []v1alpha1.ServicePlan{{ID: planID, ExternalName: "small"}}},
	})
	return err
}

// Instance is an instance of SeedBroker's plan with an OSB id bound to its namespace, as
// a provision generates one (an id bound to nothing, as "--external-id" gives, would
// need an id claim made with the record). Pending: its provision was accepted
// asynchronously and is in flight, as a provision without --wait leaves it (the store
// labels it pending); otherwise it is ready, with nothing to do.
func Instance(namespace, name string, pending bool) *v1alpha1.ServiceInstance {
	id := v1alpha1.NewNamespaceBoundID(namespace)
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: id},
		Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{
			Phase: v1alpha1.PhaseReady, ObservedGeneration: 1,
		}},
	}
	if pending {
		inst.Status.Phase = v1alpha1.PhaseProvisioning
		inst.Status.InFlight = &v1alpha1.Operation{
			Type: v1alpha1.OperationProvision, InstanceID: id, ServiceID: classID, PlanID: planID,
			RequestID: "req-" + name, StartedAt: metav1.NewTime(time.Now().Add(-time.Second)), Async: true, OperationKey: "op-" + name,
		}
	}
	return inst
}

// slowCore is a clientset whose reads and writes of ConfigMaps each take d more: an API
// server under load (Config.APILatency).
type slowCore struct {
	kubernetes.Interface
	d time.Duration
}

func (c slowCore) CoreV1() corev1client.CoreV1Interface {
	return slowCoreV1{CoreV1Interface: c.Interface.CoreV1(), d: c.d}
}

type slowCoreV1 struct {
	corev1client.CoreV1Interface
	d time.Duration
}

func (c slowCoreV1) ConfigMaps(namespace string) corev1client.ConfigMapInterface {
	return slowConfigMaps{ConfigMapInterface: c.CoreV1Interface.ConfigMaps(namespace), d: c.d}
}

type slowConfigMaps struct {
	corev1client.ConfigMapInterface
	d time.Duration
}

func (c slowConfigMaps) Get(ctx context.Context, name string, o metav1.GetOptions) (*corev1.ConfigMap, error) {
	time.Sleep(c.d)
	return c.ConfigMapInterface.Get(ctx, name, o)
}

func (c slowConfigMaps) Create(ctx context.Context, cm *corev1.ConfigMap, o metav1.CreateOptions) (*corev1.ConfigMap, error) {
	time.Sleep(c.d)
	return c.ConfigMapInterface.Create(ctx, cm, o)
}

func (c slowConfigMaps) Update(ctx context.Context, cm *corev1.ConfigMap, o metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	time.Sleep(c.d)
	return c.ConfigMapInterface.Update(ctx, cm, o)
}
