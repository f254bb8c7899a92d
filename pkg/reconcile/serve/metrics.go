package serve

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
)

// Results of a run, the result label of kubectl_catalog_reconcile_runs_total.
const (
	// RunOK: the run listed its work and nothing needs a person.
	RunOK = "ok"
	// RunFailed: some record needs a person (a failed line).
	RunFailed = "failed"
	// RunError: the work could not be listed (the API server was unreachable, or
	// refused the list).
	RunError = "error"
	// RunInterrupted: the run was cut short by a shutdown whose grace period ran out.
	RunInterrupted = "interrupted"
)

// Metrics are the Prometheus metrics of a serving reconciler, on a registry of their
// own: nothing else registered in the process leaks into them.
type Metrics struct {
	registry       *prometheus.Registry
	runs           *prometheus.CounterVec
	records        *prometheus.CounterVec
	queueDepth     prometheus.Gauge
	lastRun        prometheus.Gauge
	runDuration    prometheus.Histogram
	brokerRequests *prometheus.HistogramVec
	shardMembers   prometheus.Gauge
	shardListed    prometheus.Gauge
	shardOwned     prometheus.Gauge
	shardTaken     prometheus.Counter

	// now is the clock of the broker series' expiry.
	now func() time.Time
	// mu guards brokerSeen: when each broker label last observed a request.
	mu         sync.Mutex
	brokerSeen map[string]time.Time
}

// The broker-request metric's labels are chosen by tenants (a namespace-scoped broker's
// namespace and name, the status codes its server answers), so its series are bounded:
// codes are counted by class (2xx, 4xx, ...), at most MaxBrokerSeries brokers have
// series of their own (those beyond are counted under OtherBrokers until some expire),
// and the series of a broker not heard from for BrokerSeriesTTL (deleted, or idle) are
// dropped.
const (
	MaxBrokerSeries = 200
	BrokerSeriesTTL = time.Hour
	OtherBrokers    = "other"
)

// newGauge returns a gauge of the given name and help.
func newGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// newCounterVec returns a counter of the given name and help, by labels.
func newCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// NewMetrics returns the metrics, registered with a new registry together with the Go
// runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		runs: newCounterVec("kubectl_catalog_reconcile_runs_total",
			"Reconcile runs, by result: ok, failed (a record needs a person), error (the work could not be listed), interrupted.",
			"result"),
		records: newCounterVec("kubectl_catalog_reconcile_records_total",
			"Records handled by reconcile runs, by record kind and outcome.",
			"kind", "outcome"),
		queueDepth: newGauge("kubectl_catalog_reconcile_queue_depth",
			"Records the last run found with work to do (pending, being deleted, or a broker whose catalog was due)."),
		lastRun: newGauge("kubectl_catalog_reconcile_last_run_timestamp_seconds",
			"When the last run ended, in seconds since the Unix epoch."),
		runDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubectl_catalog_reconcile_run_duration_seconds",
			Help:    "How long reconcile runs took.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}),
		brokerRequests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubectl_catalog_broker_request_duration_seconds",
			Help:    "How long brokers took to answer requests (up to the response headers), by broker (namespace/name; \"other\" beyond 200 brokers heard from within an hour) and HTTP status class (2xx, 4xx, ...; \"error\" when no answer came).",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"broker", "code"}),
		shardMembers: newGauge("kubectl_catalog_shard_members",
			"Live members of this replica's shard group (itself included) at the start of the last run; 0 outside a group."),
		shardListed: newGauge("kubectl_catalog_shard_records_listed",
			"Records with work the last run listed, every member's share included; 0 outside a group."),
		shardOwned: newGauge("kubectl_catalog_shard_records_owned",
			"Records with work the last run took as this replica's share of its shard group (taken-over ones included); 0 outside a group."),
		shardTaken: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubectl_catalog_shard_records_taken_over_total",
			Help: "Records of another member's share taken up because they stayed pending, unclaimed and unchanged past the starvation bound.",
		}),
		now:        time.Now,
		brokerSeen: map[string]time.Time{},
	}
	m.registry.MustRegister(m.runs, m.records, m.queueDepth, m.lastRun, m.runDuration, m.brokerRequests,
		m.shardMembers, m.shardListed, m.shardOwned, m.shardTaken,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every result shows from the first scrape on, at zero, so that rate() and
	// absence alerts work before the first failure.
	for _, r := range []string{RunOK, RunFailed, RunError, RunInterrupted} {
		m.runs.WithLabelValues(r)
	}
	return m
}

// Registry is the registry holding the metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// ObserveRun records a finished run.
func (m *Metrics) ObserveRun(sum reconcile.Summary, err error, interrupted bool, took time.Duration, end time.Time) {
	result := RunOK
	switch {
	case interrupted:
		result = RunInterrupted
	case err != nil && sum.Items == nil:
		result = RunError
	case sum.Failed():
		result = RunFailed
	}
	m.runs.WithLabelValues(result).Inc()
	m.mu.Lock()
	m.expireLocked()
	m.mu.Unlock()
	m.runDuration.Observe(took.Seconds())
	m.lastRun.Set(float64(end.UnixNano()) / 1e9)
	if result == RunError {
		// Nothing was found, which is not the same as nothing being there: the depth
		// of the last run that could list stays.
		return
	}
	m.queueDepth.Set(float64(len(sum.Items)))
	if g := sum.Group; g != nil {
		m.shardMembers.Set(float64(len(g.Members)))
		m.shardListed.Set(float64(g.Listed))
		m.shardOwned.Set(float64(g.Owned))
		m.shardTaken.Add(float64(g.TakenOver))
	}
	for _, it := range sum.Items {
		m.records.WithLabelValues(it.Kind, string(it.Outcome)).Inc()
	}
}

// ObserveBrokerRequest records one HTTP request to a broker; code 0 means no answer
// came. It has the signature of brokerclient.Observer.
func (m *Metrics) ObserveBrokerRequest(broker types.NamespacedName, code int, took time.Duration) {
	c := "error"
	if code >= 100 && code < 600 {
		c = strconv.Itoa(code/100) + "xx"
	}
	label := broker.String()
	m.mu.Lock()
	m.expireLocked()
	brokers := len(m.brokerSeen)
	if _, ok := m.brokerSeen[OtherBrokers]; ok {
		brokers--
	}
	if _, seen := m.brokerSeen[label]; !seen && brokers >= MaxBrokerSeries {
		label = OtherBrokers
	}
	m.brokerSeen[label] = m.now()
	m.mu.Unlock()
	m.brokerRequests.WithLabelValues(label, c).Observe(took.Seconds())
}

// expireLocked drops the series of the brokers not heard from for BrokerSeriesTTL.
func (m *Metrics) expireLocked() {
	now := m.now()
	for label, at := range m.brokerSeen {
		if now.Sub(at) > BrokerSeriesTTL {
			delete(m.brokerSeen, label)
			m.brokerRequests.DeletePartialMatch(prometheus.Labels{"broker": label})
		}
	}
}
