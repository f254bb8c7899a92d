package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// Deleting a namespace that holds a namespace-scoped broker with an instance and a
// binding: the namespace controller deletes every ConfigMap at once, and the finalizer
// keeps the broker's record until one reconcile of the namespace has unbound and deprovisioned at
// the broker; then the namespace goes and the broker holds nothing. (The broker takes no
// credentials here: reading a namespace broker's Secret needs the cluster-wide trust
// policy; the Secret's finalizer is covered by the store's and brokerclient's tests.)
func TestReconcile_NamespaceDeletionWithANamespaceBroker_DeprovisionsThenFinishes(t *testing.T) {
	t.Parallel()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	ctx := context.Background()
	catalogNS, ns := cp.NewNamespace(t), cp.NewNamespace(t)
	b := broker.NewTestBroker(t, broker.Options{AsyncDelay: 300 * time.Millisecond, RetryAfter: -1})
	withCatalog := func(args ...string) []string { return append(args, "--catalog-namespace", catalogNS) }
	r := instCatalog(t, ns, withCatalog("register", "team", "--url", b.URL(), "--scope", "namespace")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	st := recStore(t)
	brk, err := st.Brokers().Get(ctx, ns, "team")
	assert.NilError(t, err)
	assert.Assert(t, slices.Contains(brk.Finalizers, store.Finalizer), "%v", brk.Finalizers)

	r = instCatalog(t, ns, withCatalog("provision", "db", "--class", "postgresql", "--plan", "hobby", "--wait", "--timeout", "60s")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	r = instCatalog(t, ns, withCatalog("bind", "db", "--name", "app", "--wait", "--timeout", "60s")...)
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	assert.Equal(t, len(b.Instances()), 1)
	assert.Equal(t, len(b.Bindings()), 1)

	deleteNamespaceUntilFinalizersRemain(t, admin, ns, "the namespace controller to delete what it may")
	brk, err = st.Brokers().Get(ctx, ns, "team")
	assert.NilError(t, err, "the finalizer keeps the broker")
	assert.Assert(t, brk.DeletionTimestamp != nil)
	assert.Equal(t, len(b.Bindings()), 1, "nothing told the broker yet")

	sum, _ := recRun(t, ns, nil, withCatalog("--max-duration", "60s", "--interval", "200ms")...)
	for _, it := range []struct{ kind, name string }{
		{v1alpha1.KindServiceBinding, "app"}, {v1alpha1.KindServiceInstance, "db"}, {v1alpha1.KindBroker, "team"},
	} {
		item, ok := recKindItem(sum, it.kind, ns, it.name)
		assert.Assert(t, ok, "%s %s: %+v", it.kind, it.name, sum.Items)
		assert.Equal(t, item.Outcome, reconcile.Done, "%s %s: %s", it.kind, it.name, item.Detail)
	}
	assert.Equal(t, len(b.Bindings()), 0)
	instAssertBrokerHolds(t, b)
	assert.Equal(t, len(b.RequestsFor(broker.OpUnbind)), 1)
	instWaitFor(t, "the namespace to finish deleting", 90*time.Second, func() bool {
		_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
