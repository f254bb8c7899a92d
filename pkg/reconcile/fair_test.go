package reconcile

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// tarpits registers n namespace-scoped brokers in namespace tns whose catalog fetch
// holds a worker for slow each (a broker that answers as late as the client allows),
// and counts the fetches.
func (f *fixture) tarpits(tns string, n int, slow time.Duration) *atomic.Int32 {
	f.t.Helper()
	var fetched atomic.Int32
	f.sync = func(_ context.Context, b *v1alpha1.Broker) error {
		if b.Namespace == tns {
			f.clock.Sleep(slow)
			fetched.Add(1)
		}
		return nil
	}
	for i := range n {
		_, err := f.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
			ObjectMeta: metav1.ObjectMeta{Namespace: tns, Name: fmt.Sprintf("tarpit-%02d", i)},
			Spec:       v1alpha1.BrokerSpec{URL: "https://tarpit.example", Scope: v1alpha1.ScopeNamespace},
		})
		assert.NilError(f.t, err)
	}
	return &fetched
}

// instanceIn creates a pending instance record in namespace ins.
func (f *fixture) instanceIn(ins, name string) {
	f.t.Helper()
	_, err := f.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ins, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerN, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: "osb-" + ins + "-" + name},
	})
	assert.NilError(f.t, err)
}

// Forty slow brokers in one namespace do not keep the records of another from being
// driven: namespaces take turns, one worker or several.
func TestRun_TarpitsInOneNamespace_DoNotStarveAnother(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			f := newFixtureWith(t, fixtureOptions{virtualClock: workers == 1, realClock: workers > 1})
			slow := time.Minute
			if workers > 1 {
				slow = 200 * time.Millisecond // on the wall clock: kept short
			}
			fetched := f.tarpits("aaa-tarpit", 40, slow)
			f.instanceIn("zzz-victim", "db")

			sum := f.run(Options{Workers: workers, MaxDuration: 3 * slow})

			it := f.itemIn(sum, "zzz-victim", "db")
			assert.Equal(t, it.Outcome, Done, it.Detail)
			assert.Assert(t, fetched.Load() < 40, "the tarpits could not all be fetched within the run: %d", fetched.Load())
			assert.Assert(t, sum.TimeUp)
		})
	}
}

// A namespace alone uses every worker.
func TestFairQueue_ShareAndRoundRobin(t *testing.T) {
	now := time.Now()
	q := newFairQueue()
	for i := range 6 {
		q.push(&task{w: work{namespace: "a", name: fmt.Sprint(i)}, due: now, seq: i})
	}
	assert.Equal(t, q.share(4), 4, "one namespace: every worker")
	q.push(&task{w: work{namespace: "b", name: "x"}, due: now, seq: 6})
	q.push(&task{w: work{namespace: "b", name: "y"}, due: now.Add(time.Hour), seq: 7})
	share := q.share(4)
	assert.Equal(t, share, 2)
	var got []string
	for t := q.pop(now, share); t != nil; t = q.pop(now, share) {
		got = append(got, t.w.namespace+"/"+t.w.name)
	}
	assert.DeepEqual(t, got, []string{"a/0", "b/x", "a/1"})
	at, ok := q.earliest(share)
	assert.Assert(t, ok)
	assert.Equal(t, at, now.Add(time.Hour), "a holds its share: only b's next record may wake the run")
}

func (f *fixture) itemIn(sum Summary, ins, name string) Item {
	f.t.Helper()
	for _, it := range sum.Items {
		if it.Namespace == ins && it.Name == name {
			return it
		}
	}
	f.t.Fatalf("no item %s/%s in %+v", ins, name, sum.Items)
	return Item{}
}
