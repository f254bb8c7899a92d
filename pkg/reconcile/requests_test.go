package reconcile

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// apiCounts counts the requests a run sends to the fake cluster's core client, by verb,
// and the reads of each ConfigMap by name.
type apiCounts struct {
	mu    sync.Mutex
	on    bool
	verbs map[string]int
	gets  map[string]int
}

func (f *fixture) countRequests() *apiCounts {
	c := &apiCounts{verbs: map[string]int{}, gets: map[string]int{}}
	f.cluster.Core.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.on || a.GetResource().Resource != "configmaps" {
			return false, nil, nil
		}
		c.verbs[a.GetVerb()]++
		if g, ok := a.(clienttesting.GetAction); ok {
			c.gets[a.GetNamespace()+"/"+g.GetName()]++

		}
		return false, nil, nil
	})
	return c
}

func (c *apiCounts) start() { c.mu.Lock(); c.on = true; c.mu.Unlock() }
func (c *apiCounts) stop()  { c.mu.Lock(); c.on = false; c.mu.Unlock() }

func (c *apiCounts) total() int {
	n := 0
	for _, v := range c.verbs {
		n += v
	}
	return n
}

// seedInstance writes an instance straight into the cluster, as a provision leaves it:
// an OSB id bound to its namespace and, pending, an asynchronous provision the broker
// accepted (polled twice: in progress, then succeeded); otherwise ready.
func (f *fixture) seedInstance(namespace, name string, pending bool) *v1alpha1.ServiceInstance {
	f.t.Helper()
	return f.seedInstanceOf(v1alpha1.ScopeCluster, brokerN, namespace, name, pending)
}

// seedInstanceOf is seedInstance of the broker of scope named broker.
func (f *fixture) seedInstanceOf(scope v1alpha1.Scope, broker, namespace, name string, pending bool) *v1alpha1.ServiceInstance {
	f.t.Helper()
	id := v1alpha1.NewNamespaceBoundID(namespace)
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: scope, BrokerName: broker, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: id},
		Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{
			Phase: v1alpha1.PhaseReady, ObservedGeneration: 1,
		}},
	}
	if pending {
		inst.Status.Phase = v1alpha1.PhaseProvisioning
		inst.Status.InFlight = &v1alpha1.Operation{
			Type: v1alpha1.OperationProvision, InstanceID: id, ServiceID: classID, PlanID: planID,
			RequestID: "req-" + name, StartedAt: metav1.NewTime(f.rec.Now().Add(-time.Second)), Async: true, OperationKey: "op-" + name,
		}
	}
	created, err := f.st.Instances().Create(context.Background(), inst)
	assert.NilError(f.t, err)
	return created
}

// TestRun_FirstRun_ReadsEachPendingRecordOnce: the first run in a cluster gives the
// records whose spec names an OSB id bound to nothing their id claims before any step
// (engine.SettleIDClaims). That pass reads the records' specs; it reads no pending
// record a second time and no record one at a time, and still makes the claims.
func TestRun_FirstRun_ReadsEachPendingRecordOnce(t *testing.T) {
	for _, scope := range []struct {
		name      string
		namespace string
	}{{"every namespace", ""}, {"one namespace", ns}} {
		t.Run(scope.name, func(t *testing.T) {
			f := newFixtureWith(t, fixtureOptions{realClock: true})
			f.pollTwice()
			counts := f.countRequests()
			const pending, ready = 40, 40
			// A record of an earlier release: an id bound to nothing, with no claim.
			f.instanceWithID(ns, "adopted", "svcat-"+scope.name[:3])
			adopted, err := f.st.Instances().Get(context.Background(), ns, "adopted")
			assert.NilError(t, err)
			for i := range pending {
				f.seedInstance(ns, fmt.Sprintf("p-%02d", i), true)
			}
			for i := range ready {
				f.seedInstance(ns, fmt.Sprintf("r-%02d", i), false)
			}
			counts.start()
			sum := f.run(Options{Namespace: scope.namespace, Workers: 8})
			counts.stop()
			assert.Equal(t, sum.Counts[Done], pending+1, "%+v", sum.Counts)

			for i := range pending {
				key := ns + "/" + store.ConfigMapName(v1alpha1.KindServiceInstance, fmt.Sprintf("p-%02d", i))
				assert.Assert(t, counts.gets[key] <= 1, "pending record %s read %d times", key, counts.gets[key])
			}
			for i := range ready {
				key := ns + "/" + store.ConfigMapName(v1alpha1.KindServiceInstance, fmt.Sprintf("r-%02d", i))
				assert.Equal(t, counts.gets[key], 0, "settled record %s read one at a time", key)
			}
			// What the reads were for: the older record's id got its claim.
			_, err = f.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(),
				store.IDClaimName(v1alpha1.KindServiceInstance, adopted.UID, adopted.Spec.ExternalID), metav1.GetOptions{})
			assert.NilError(t, err, "the id claim of the record naming an id bound to nothing")
			if scope.namespace == "" {
				swept, err := f.st.IDClaimsSwept(context.Background(), storetest.CatalogNamespace)
				assert.NilError(t, err)
				assert.Assert(t, swept, "the marker of the first pass")
			}
		})
	}
}

// eventCount counts the Events the engine records: each is one request to the API server.
type eventCount struct{ n atomic.Int32 }

func (c *eventCount) Record(context.Context, engine.Event) { c.n.Add(1) }

// pollTwice makes the broker answer each operation's first poll "in progress" and its
// second "succeeded". It counts the polls made while another poll of the same
// operation was under way.
func (f *fixture) pollTwice() *atomic.Int32 {
	var mu sync.Mutex
	polls, under := map[string]int{}, map[string]bool{}
	overlaps := &atomic.Int32{}
	f.broker.OnLastOperation(func(_ context.Context, r *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
		mu.Lock()
		if under[r.OperationKey] {
			overlaps.Add(1)
		}
		under[r.OperationKey] = true
		polls[r.OperationKey]++
		n := polls[r.OperationKey]
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		under[r.OperationKey] = false
		mu.Unlock()
		if n < 2 {
			return &osb.LastOperationResponse{State: osb.StateInProgress, Description: "working"}, nil
		}
		return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
	})
	return overlaps
}

// pollsOf is how many times the broker was polled for the operation of key.
func (f *fixture) pollsOf(key string) int {
	n := 0
	for _, c := range f.broker.CallsTo(fake.MethodLastOperation) {
		if r, ok := c.Request.(osb.LastOperationRequest); ok && r.OperationKey == key {
			n++
		}
	}
	return n
}

// TestRun_PolledRecord_CostsItsClaimItsOutcomeAndAnEvent: a record waiting on an
// asynchronous operation costs a run the claim before its first poll, the outcome after
// its last and the outcome's Event, and its share of the lists: its content comes from
// the run's list of the records with work, not from a read of its own. For a broker of
// either scope, over every namespace or one; polled twice at once, or for minutes at the
// engine's own intervals (2 s, slowing down to 30 s as the operation ages), where the
// run keeps its claim between two polls and writes nothing for an answer "in progress"
// that changes nothing: the claim is renewed once a minute (half of its 2 minutes),
// and that is all.
func TestRun_PolledRecord_CostsItsClaimItsOutcomeAndAnEvent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		scope     v1alpha1.Scope
		namespace string
		// long: the operation takes longFor, polled at the engine's default intervals
		// on a virtual clock (one worker); otherwise it is polled twice at once.
		long bool
	}{
		{"cluster broker, every namespace", v1alpha1.ScopeCluster, "", false},
		{"namespace broker, every namespace", v1alpha1.ScopeNamespace, "", false},
		{"cluster broker, one namespace", v1alpha1.ScopeCluster, ns, false},
		{"cluster broker, every namespace, minutes of polls", v1alpha1.ScopeCluster, "", true},
		{"namespace broker, one namespace, minutes of polls", v1alpha1.ScopeNamespace, ns, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const longFor = 3 * time.Minute
			events := &eventCount{}
			o := fixtureOptions{realClock: true, events: events, targetCache: true}
			if tc.long {
				o = fixtureOptions{virtualClock: true, events: events, targetCache: true,
					pollInterval: 2 * time.Second, maxPollInterval: 30 * time.Second}
			}
			f := newFixtureWith(t, o)
			// As many as the run's fixed requests (its lists, the broker and class
			// read once for all) weigh little beside: 1,000 in the bench.
			n, workers, polls := 100, 8, 2
			if tc.long {
				f.pollFor(longFor)
				n, workers = listedCopiesMin, 1
			} else {
				f.pollTwice()
			}
			broker := brokerN
			if tc.scope == v1alpha1.ScopeNamespace {
				f.namespaceBroker()
				broker = teamBroker
			}
			ctx := context.Background()
			assert.NilError(t, f.st.MarkIDClaimsSwept(ctx, storetest.CatalogNamespace))
			counts := f.countRequests()
			for i := range n {
				f.seedInstanceOf(tc.scope, broker, ns, fmt.Sprintf("p-%02d", i), true)
			}
			metaLists := f.cluster.MetadataLists()
			counts.start()
			sum := f.run(Options{Namespace: tc.namespace, Workers: workers, MaxDuration: 2 * longFor})
			counts.stop()
			assert.Equal(t, sum.Counts[Done], n, "%+v", sum.Items)
			for i := range n {
				name := fmt.Sprintf("p-%02d", i)
				if tc.long {
					assert.Assert(t, f.pollsOf("op-"+name) > 20, "polls of %s: %d", name, f.pollsOf("op-"+name))
				} else {
					assert.Equal(t, f.pollsOf("op-"+name), polls, "polls of %s", name)
				}
				key := ns + "/" + store.ConfigMapName(v1alpha1.KindServiceInstance, name)
				assert.Equal(t, counts.gets[key], 0, "%s read on its own", key)
			}
			// The claim, the outcome, and in minutes of polls the claim's renewals.
			updates := 2 * n
			if tc.long {
				updates += n * int(longFor/time.Minute)
			}
			if tc.long {
				assert.Assert(t, counts.verbs["update"] <= updates, "%d updates for %d records: %v", counts.verbs["update"], n, counts.verbs)
			} else {
				assert.Equal(t, counts.verbs["update"], updates, "%v", counts.verbs)
			}
			assert.Equal(t, int(events.n.Load()), n)
			// The broker and its class are read once for all the records (engine's
			// target cache), by each worker at most that starts at once, and again
			// once the cache has aged on the virtual clock.
			targets := 0
			for key, c := range counts.gets {
				if strings.Contains(key, "/catalog-broker.") || strings.Contains(key, "/catalog-class.") {
					targets += c
				}
			}
			if !tc.long {
				assert.Assert(t, targets <= 2*8, "broker and class read %d times", targets)
			}
			requests := counts.total() - targets + f.cluster.MetadataLists() - metaLists + int(events.n.Load())
			perRecord := float64(requests) / float64(n)
			t.Logf("requests per polled record: %.3f (%d polls; %v, %d metadata lists, %d events, %d reads of the broker and its class) %v", perRecord,
				len(f.broker.CallsTo(fake.MethodLastOperation))/n, counts.verbs, f.cluster.MetadataLists()-metaLists, events.n.Load(), targets, counts.gets)
			want := 3.1
			if tc.long {
				want += float64(longFor / time.Minute)
			}
			assert.Assert(t, perRecord <= want, "%.3f requests per polled record: %v, events %d", perRecord, counts.verbs, events.n.Load())
		})
	}
}

// pollFor makes the broker answer each operation "in progress" (always with the same
// description) until d after its first poll, by the fixture's clock, and "succeeded"
// from then on.
func (f *fixture) pollFor(d time.Duration) {
	var mu sync.Mutex
	first := map[string]time.Time{}
	f.broker.OnLastOperation(func(_ context.Context, r *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
		now := f.rec.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, ok := first[r.OperationKey]; !ok {
			first[r.OperationKey] = now
		}
		if now.Sub(first[r.OperationKey]) < d {
			return &osb.LastOperationResponse{State: osb.StateInProgress, Description: "working"}, nil
		}
		return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
	})
}

// TestRun_PolledRecordWrittenSinceTheList_IsReadAgainAndPolledOnce: a record written by
// someone else after the run's list: the claim written on the list's copy conflicts, the
// record is read again, and its operation is polled as often as any other, once at a
// time. A record whose listed copy is not due for a poll (a provision to send) is read
// before its step.
func TestRun_PolledRecordWrittenSinceTheList_IsReadAgainAndPolledOnce(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{realClock: true})
	ctx := context.Background()
	assert.NilError(t, f.st.MarkIDClaimsSwept(ctx, storetest.CatalogNamespace))
	counts := f.countRequests()
	const n = listedCopiesMin
	for i := range n {
		f.seedInstance(ns, fmt.Sprintf("p-%02d", i), true)
	}
	f.instance("fresh")
	var once sync.Once
	overlaps := f.pollTwice()
	obs := &stepHook{started: func(ref Ref) {
		if ref.Name != "p-03" {
			return
		}
		once.Do(func() {
			// Another process: a store of its own.
			_, err := f.cluster.Store().Instances().UpdateWithRetry(ctx, ns, "p-03", func(i *v1alpha1.ServiceInstance) error {
				i.Status.InFlight.LastDescription = "written by someone else"
				return nil
			})
			assert.Check(t, err)
		})
	}}
	counts.start()
	sum := f.run(Options{Workers: 4, Observer: obs})
	counts.stop()
	assert.Equal(t, sum.Counts[Done], n+1, "%+v", sum.Items)
	for i := range n {
		name := fmt.Sprintf("p-%02d", i)
		assert.Equal(t, f.pollsOf("op-"+name), 2, "polls of %s", name)
		key := ns + "/" + store.ConfigMapName(v1alpha1.KindServiceInstance, name)
		want := 0
		if name == "p-03" {
			// The other process's read before its write; the engine's after the
			// conflict, and the run's before the next step.
			want = 3
		}
		assert.Equal(t, counts.gets[key], want, "reads of %s", key)
	}
	assert.Equal(t, counts.gets[ns+"/"+store.ConfigMapName(v1alpha1.KindServiceInstance, "fresh")], 1, "the instance to provision is read before its step")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1)
	assert.Equal(t, overlaps.Load(), int32(0), "polls of one operation at once")
}

// stepHook is an Observer that hears steps start.
type stepHook struct {
	started func(Ref)
}

func (h *stepHook) RecordQueued(Ref)                     {}
func (h *stepHook) StepStarted(ref Ref, _ string)        { h.started(ref) }
func (h *stepHook) StepScheduled(Ref, time.Time, string) {}
func (h *stepHook) RecordFinished(Item)                  {}
