package serve

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestServe_MetricsScrape(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, Options{Interval: time.Hour})
	f.instance("db")
	base, stop := f.start()
	r := f.nextReport(5 * time.Second)
	assert.Equal(t, r.Summary.Counts[reconcile.Done], 1)
	f.srv.Metrics.ObserveBrokerRequest(types.NamespacedName{Namespace: storetest.CatalogNamespace, Name: serveBroker}, 201, 30*time.Millisecond)
	f.srv.Metrics.ObserveBrokerRequest(types.NamespacedName{Namespace: storetest.CatalogNamespace, Name: serveBroker}, 0, time.Second)

	code, body := get(t, base+"/metrics")
	assert.Equal(t, code, http.StatusOK)
	for _, want := range []string{
		`kubectl_catalog_reconcile_runs_total{result="ok"} 1`,
		`kubectl_catalog_reconcile_runs_total{result="error"} 0`,
		`kubectl_catalog_reconcile_records_total{kind="ServiceInstance",outcome="done"} 1`,
		`kubectl_catalog_reconcile_queue_depth 1`,
		`kubectl_catalog_reconcile_last_run_timestamp_seconds `,
		`kubectl_catalog_reconcile_run_duration_seconds_count 1`,
		`kubectl_catalog_broker_request_duration_seconds_count{broker="catalog-system/acme",code="2xx"} 1`,
		`kubectl_catalog_broker_request_duration_seconds_count{broker="catalog-system/acme",code="error"} 1`,
		`go_goroutines `,
	} {
		assert.Assert(t, is.Contains(body, want))
	}
	err, _ := stop()
	assert.NilError(t, err)
}

func TestMetrics_ShardGauges(t *testing.T) {
	m := NewMetrics()
	m.ObserveRun(reconcile.Summary{Counts: map[reconcile.Outcome]int{}, Group: &reconcile.GroupSummary{Name: "g", Members: []string{"a", "b", "c"}, Listed: 300, Owned: 97, TakenOver: 2}},
		nil, false, time.Second, time.Now())
	rr := httptest.NewRecorder()
	m.Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	body := rr.Body.String()
	for _, want := range []string{
		"kubectl_catalog_shard_members 3\n",
		"kubectl_catalog_shard_records_listed 300\n",
		"kubectl_catalog_shard_records_owned 97\n",
		"kubectl_catalog_shard_records_taken_over_total 2\n",
	} {
		assert.Assert(t, strings.Contains(body, want), "%s not in\n%s", want, body)
	}
}

// brokerSeries counts the series of the broker-request metric, by broker label.
func brokerSeries(t *testing.T, m *Metrics) map[string][]string {
	t.Helper()
	mfs, err := m.Registry().Gather()
	assert.NilError(t, err)
	out := map[string][]string{}
	for _, mf := range mfs {
		if mf.GetName() != "kubectl_catalog_broker_request_duration_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["broker"]] = append(out[labels["broker"]], labels["code"])
		}
	}
	return out
}

// The broker-request metric's labels are chosen by tenants (a namespace broker's name,
// the status codes its server answers): thousands of brokers answering every status
// code make at most MaxBrokerSeries brokers of series, each with a status class, and a
// broker not heard from for BrokerSeriesTTL leaves no series.
func TestMetrics_BrokerRequestSeriesAreBounded(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := NewMetrics()
	m.now = func() time.Time { return now }
	cluster := types.NamespacedName{Namespace: storetest.CatalogNamespace, Name: "acme"}
	m.ObserveBrokerRequest(cluster, 200, time.Millisecond)
	for i := range 3000 {
		b := types.NamespacedName{Namespace: "tenant", Name: "b" + strconv.Itoa(i)}
		m.ObserveBrokerRequest(b, 100+i%500, time.Millisecond)
		m.ObserveBrokerRequest(b, 0, time.Millisecond)
	}
	series := brokerSeries(t, m)
	assert.Assert(t, len(series) <= MaxBrokerSeries+1, "%d brokers have series", len(series))
	n := 0
	for b, codes := range series {
		n += len(codes)
		for _, c := range codes {
			assert.Assert(t, is.Contains([]string{"1xx", "2xx", "3xx", "4xx", "5xx", "error"}, c), "broker %s: code %q", b, c)
		}
	}
	assert.Assert(t, n <= (MaxBrokerSeries+1)*6, "%d series", n)
	assert.Assert(t, is.Contains(series, "catalog-system/acme"))

	// An hour and more later, only the brokers still heard from have series.
	now = now.Add(BrokerSeriesTTL + time.Minute)
	m.ObserveBrokerRequest(cluster, 201, time.Millisecond)
	m.ObserveRun(reconcile.Summary{Counts: map[reconcile.Outcome]int{}}, nil, false, time.Second, now)
	series = brokerSeries(t, m)
	assert.DeepEqual(t, series, map[string][]string{"catalog-system/acme": {"2xx"}})
}
