package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
)

// TestTrustTarpits_SlowBrokersOfOneTenantStarveNobody has alice, who may only write
// ConfigMaps in her namespace, register brokers that never answer (tarpits). doctor, run
// by an administrator, checks them at once instead of one after another; reconcile, run
// with its ServiceAccount's token over every namespace, drives bob's record in the same
// run although alice's namespace comes first and her brokers fill more than the run.
func TestTrustTarpits_SlowBrokersOfOneTenantStarveNobody(t *testing.T) {
	serial(t, clusterTrustPolicy)
	e := trustSetup(t)
	release := make(chan struct{})
	tarpit := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(tarpit.Close)
	t.Cleanup(func() { close(release) })
	tarpits := func(t *testing.T, n int) {
		for i := range n {
			tenantForge(t, e, &v1alpha1.Broker{
				ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: fmt.Sprintf("tarpit-%02d", i)},
				Spec:       v1alpha1.BrokerSpec{URL: tarpit.URL, Scope: v1alpha1.ScopeNamespace},
			}, nil)
		}
	}

	t.Run("doctor checks six tarpits at once", func(t *testing.T) {
		tarpits(t, 6)
		start := time.Now()
		r := instRun(t, e.teamA, nil, "doctor", "-o", "json", "--catalog-namespace", e.catalogNS, "--reconcile-namespace", e.catalogNS)
		took := time.Since(start)
		t.Logf("kubectl catalog doctor -n NS (six tarpits, --broker-timeout 10s): %s", took.Round(100*time.Millisecond))
		var rep doctor.Report
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stderr)
		tarpitChecks := 0
		for _, c := range rep.Checks {
			if strings.HasPrefix(c.Name, "broker "+e.teamA+"/tarpit-") {
				tarpitChecks++
				assert.Equal(t, c.Status, doctor.Fail, "%+v", c)
			}
		}
		assert.Equal(t, tarpitChecks, 6, "%+v", rep.Checks)
		// One after another they took six broker timeouts (60 s).
		assert.Assert(t, took < 30*time.Second, "doctor took %s", took)
	})

	t.Run("reconcile drives another namespace beside forty tarpits", func(t *testing.T) {
		tarpits(t, 40)
		r := trustBob(t, e, "provision", "beside", "--class", "object-storage", "--plan", "bucket")
		assert.Equal(t, r.ExitCode, 0, r.Stderr)

		sum, r := tenantReconcileAll(t, e)

		it, ok := recItem(sum, e.teamB, "beside")
		assert.Assert(t, ok, "%+v", sum.Items)
		assert.Equal(t, it.Outcome, reconcile.Done, "%s\n%s", it.Detail, r.Stderr)
		notReached := 0
		for _, it := range sum.Items {
			if it.Kind == v1alpha1.KindBroker && it.Namespace == e.teamA && strings.HasPrefix(it.Detail, "not reached") {
				notReached++
			}
		}
		assert.Assert(t, notReached > 0, "the run is shorter than the tarpits: %+v", sum.Items)
	})
}
