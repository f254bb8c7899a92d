package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	reconcilecmd "github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// egressSecret stands for what a cluster-internal service answers: it must never reach a
// tenant's record.
const egressSecret = "internal-answer-5e0c7d"

// TestEgress_ReconcileCallsNoInternalAddressForANamespaceBroker: a tenant who may only
// write ConfigMaps points namespace-scoped broker records at a service on reconcile's
// loopback (standing for a cluster-internal Service) and at the cloud metadata address.
// reconcile, with the installed ServiceAccount's token and no egress setting, connects
// to neither, and no byte of an answer reaches the records' status; an administrator's
// --namespace-broker-allow-cidr lets it through, and then the service's non-OSB answer
// still leaves nothing of its body in status.
func TestEgress_ReconcileCallsNoInternalAddressForANamespaceBroker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	catNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	saKubeconfig := installReconcileWithoutTrustPolicy(t, admin, catNS, "list", "configmaps", "-A")

	internal := &trustTap{next: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"message":"` + egressSecret + `"}`))
	})}
	srv := httptest.NewServer(internal)
	t.Cleanup(srv.Close)

	// What the tenant writes: two broker records, as any ConfigMap writer can.
	forge := func(name, url string) {
		cm, err := store.Encode(&v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.BrokerSpec{URL: url, Scope: v1alpha1.ScopeNamespace}})
		assert.NilError(t, err)
		cm.Labels[store.LabelPending] = "true"
		_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	forge("internal", srv.URL)
	forge("metadata", "http://169.254.169.254/latest/meta-data")

	status := func(name string) string {
		t.Helper()
		cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, store.ConfigMapName(v1alpha1.KindBroker, name), metav1.GetOptions{})
		assert.NilError(t, err)
		return cm.Data[store.StatusDataKey]
	}
	run := func(args ...string) {
		t.Helper()
		// The tests' environment allows loopback for their own brokers: not here.
		env := []string{"KUBECONFIG=" + saKubeconfig, reconcilecmd.NamespaceBrokerAllowEnv + "="}
		_, r := recRunStrict(t, ns, env, append([]string{"--catalog-namespace", catNS, "--max-duration", "5s", "--interval", "200ms"}, args...)...)
		assert.Check(t, r.ExitCode == 0 || r.ExitCode == 1, r.Stderr)
		assert.Check(t, !strings.Contains(r.Stdout+r.Stderr, egressSecret), "reconcile printed the internal answer")
	}

	run()
	assert.Check(t, is.Len(internal.requests(), 0), "reconcile connected to the internal service for a tenant's broker")
	for _, name := range []string{"internal", "metadata"} {
		st := status(name)
		assert.Check(t, is.Contains(st, "egress rule"), "broker %s: %s", name, st)
		assert.Check(t, !strings.Contains(st, egressSecret), "broker %s: %s", name, st)
	}
	assert.Check(t, is.Contains(status("internal"), "loopback"))
	assert.Check(t, is.Contains(status("metadata"), "link-local"))
	assert.Check(t, !strings.Contains(status("metadata"), "connect"), "no connection was tried")

	// An administrator allows the range: the call is made, and the answer, no broker's,
	// leaves nothing of its body in status.
	// (a record written anew: the refused one waits out its backoff)
	forge("internal-again", srv.URL)
	run("--namespace-broker-allow-cidr", "127.0.0.1/32")
	assert.Check(t, len(internal.requests()) > 0, "allowed, reconcile calls the service")
	st := status("internal-again")
	assert.Check(t, is.Contains(st, "500"), st)
	assert.Check(t, !strings.Contains(st, egressSecret), st)
	assert.Check(t, is.Contains(status("metadata"), "egress rule"), "the metadata address stays denied")
}
