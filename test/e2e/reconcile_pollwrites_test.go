package e2e

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
	"github.com/kubectl-catalog/kubectl-catalog/test/controlplane"
)

// An asynchronous provision the broker answers "in progress" to many times: the driver
// that polls it, "kubectl catalog wait" or a reconcile by hand, writes the record twice
// (its claim before the first poll, the outcome after the last), not once a poll; and
// the record ends Ready.
func TestReconcilePolls_InProgressAnswersLeaveTheRecordUnwritten(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"wait", "reconcile"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			e := instSetupCatalog(t, nil)
			e.b.SetAsyncDelay(5 * time.Second)
			r := instCatalog(t, e.ns, "provision", "cache", "--class", "postgresql", "--plan", "standard")
			assert.Equal(t, r.ExitCode, 0, r.Stderr)
			polled := len(e.b.RequestsFor(broker.OpLastOperation))

			writesSince := watchRecordWrites(t, e.ns, "cache")

			if how == "wait" {
				r = instCatalog(t, e.ns, "wait", "instance/cache", "--interval", "200ms", "--timeout", "30s")
				assert.Equal(t, r.ExitCode, 0, r.Stderr)
			} else {
				idleReconcile(t, e.ns, nil, "--interval", "200ms")
			}
			idleAssertReady(t, e, "cache")
			polls := len(e.b.RequestsFor(broker.OpLastOperation)) - polled
			assert.Assert(t, polls >= 3, "the broker was polled %d times", polls)

			writes := len(writesSince())
			assert.Assert(t, writes <= 2, "%d polls wrote the record %d times, want the claim and the outcome", polls, writes)
		})
	}
}

// watchRecordWrites watches the record of instance name of namespace ns from now on. The
// function it returns, called once the record is settled, waits for the watch to show
// the record's last write and gives the claim holder each write since named (none: "").
func watchRecordWrites(t *testing.T, ns, name string) func() []string {
	t.Helper()
	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	cms := admin.CoreV1().ConfigMaps(ns)
	cmName := store.ConfigMapName(v1alpha1.KindServiceInstance, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cm, err := cms.Get(ctx, cmName, metav1.GetOptions{})
	assert.NilError(t, err)
	w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + cmName, ResourceVersion: cm.ResourceVersion})
	assert.NilError(t, err)
	t.Cleanup(w.Stop)
	return func() []string {
		t.Helper()
		final, err := cms.Get(ctx, cmName, metav1.GetOptions{})
		assert.NilError(t, err)
		var holders []string
		for {
			select {
			case ev, ok := <-w.ResultChan():
				assert.Assert(t, ok, "the watch ended before the record's last write")
				if ev.Type != watch.Modified {
					continue
				}
				cm := ev.Object.(*corev1.ConfigMap)
				l, _ := store.LeaseOf(cm)
				holders = append(holders, l.Holder)
				if cm.ResourceVersion == final.ResourceVersion {
					return holders
				}
			case <-ctx.Done():
				t.Fatalf("the watch never showed the record's last write of %s/%s", ns, name)
			}
		}
	}
}
