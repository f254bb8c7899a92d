package serve

import (
	"net/http"
	"net/http/httptest"
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
		`kubectl_catalog_broker_request_duration_seconds_count{broker="catalog-system/acme",code="201"} 1`,
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
