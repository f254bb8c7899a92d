package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
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
	id := v1alpha1.NewNamespaceBoundID(namespace)
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerN, ClassExternalName: "db",
			ClassID: classID, PlanExternalName: "small", PlanID: planID, ExternalID: id},
		Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{
			Phase: v1alpha1.PhaseReady, ObservedGeneration: 1,
		}},
	}
	if pending {
		inst.Status.Phase = v1alpha1.PhaseProvisioning
		inst.Status.InFlight = &v1alpha1.Operation{
			Type: v1alpha1.OperationProvision, InstanceID: id, ServiceID: classID, PlanID: planID,
			RequestID: "req-" + name, StartedAt: metav1.NewTime(time.Now().Add(-time.Second)), Async: true, OperationKey: "op-" + name,
		}
		f.broker.SetPollSequence("op-"+name, fake.InProgress("working"), fake.Succeeded())
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
