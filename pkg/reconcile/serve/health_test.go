package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestServe_HealthzFollowsTheAPIServerAndTheLastRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newServeFixture(t, ServeOptions{Interval: 100 * time.Millisecond})
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
	f := newServeFixture(t, ServeOptions{Interval: time.Hour, APICheckEvery: time.Hour})
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
	f := newServeFixture(t, ServeOptions{Interval: 50 * time.Millisecond, ShutdownGrace: 50 * time.Millisecond})
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
	f := newServeFixture(t, ServeOptions{Interval: time.Hour})
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
