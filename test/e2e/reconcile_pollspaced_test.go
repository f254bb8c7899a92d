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

// An asynchronous provision polled by a reconcile by hand at 6 s intervals: the run keeps
// its claim between two polls (it used to release it when the next poll was more than 5 s
// away, then read and claim the record again), so the record is written twice, its claim
// before the first poll and the outcome after the last, no other write between them, and
// no other driver could take the record up between the polls: each watched write names
// the run as the claim's holder, or none once the outcome is written.
func TestReconcilePolls_SecondsApart_KeepTheClaimAndWriteTwice(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	e.b.SetAsyncDelay(7 * time.Second)
	r := instCatalog(t, e.ns, "provision", "cache", "--class", "postgresql", "--plan", "standard")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	polled := len(e.b.RequestsFor(broker.OpLastOperation))

	admin, err := cp.Client(controlplane.AdminUser)
	assert.NilError(t, err)
	cms := admin.CoreV1().ConfigMaps(e.ns)
	name := store.ConfigMapName(v1alpha1.KindServiceInstance, "cache")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: cm.ResourceVersion})
	assert.NilError(t, err)
	defer w.Stop()

	idleReconcile(t, e.ns, nil, "--interval", "6s")
	idleAssertReady(t, e, "cache")
	polls := len(e.b.RequestsFor(broker.OpLastOperation)) - polled
	assert.Assert(t, polls >= 2, "the broker was polled %d times", polls)

	final, err := cms.Get(ctx, name, metav1.GetOptions{})
	assert.NilError(t, err)
	var holders []string
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			assert.Assert(t, ok, "the watch ended before the record's last write")
			if ev.Type != watch.Modified {
				continue
			}
			cm := ev.Object.(*corev1.ConfigMap)
			l, _ := store.LeaseOf(cm)
			holders = append(holders, l.Holder)
			done = cm.ResourceVersion == final.ResourceVersion
		case <-ctx.Done():
			t.Fatalf("the watch never showed the record's last write")
		}
	}
	assert.Equal(t, len(holders), 2, "%d polls 6 s apart wrote the record %d times (claim holders %q), want the claim and the outcome", polls, len(holders), holders)
	assert.Assert(t, holders[0] != "" && holders[1] == "", "claim holders %q", holders)
}
