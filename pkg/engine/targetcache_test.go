package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Steps taken at once on many records of one broker (reconcile's workers, as a run
// starts) read the broker and its class once between them, not once each: the first
// step's read serves those that wait for it, however long the API server takes.
func TestTargetCache_ConcurrentStepsOfOneBroker_ReadItOnce(t *testing.T) {
	const records = 8
	f := newFixture(t)
	f.engine.cfg.TargetCacheTTL = time.Minute
	names := make([]string, records)
	for i := range names {
		names[i] = fmt.Sprintf("db-%d", i)
		f.create(names[i], planSmall, "")
	}
	brokerCM := store.ConfigMapName(v1alpha1.KindBroker, brokerName)
	classCM := store.ConfigMapName(v1alpha1.KindServiceClass, v1alpha1.ClassRecordName(brokerName, classID))
	var brokerGets, classGets atomic.Int32
	// An API server slower than the steps are to start: every step has asked for the
	// broker before the first read is answered.
	f.cluster.Core.PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.(clienttesting.GetAction).GetName() {
		case brokerCM:
			brokerGets.Add(1)
			time.Sleep(50 * time.Millisecond)
		case classCM:
			classGets.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
		return false, nil, nil
	})
	insts := make([]*v1alpha1.ServiceInstance, records)
	for i, n := range names {
		insts[i] = f.get(n)
	}

	var wg sync.WaitGroup
	results := make([]Result, records)
	errs := make([]error, records)
	for i := range insts {
		wg.Go(func() { results[i], errs[i] = f.engine.StepInstance(context.Background(), insts[i]) })
	}
	wg.Wait()

	for i := range insts {
		assert.NilError(t, errs[i], names[i])
		assert.Equal(t, results[i].State, StateSettled, "%s: %s", names[i], results[i].Message)
	}
	assert.Equal(t, brokerGets.Load(), int32(1), "reads of the broker")
	assert.Equal(t, classGets.Load(), int32(1), "reads of its class")
}
