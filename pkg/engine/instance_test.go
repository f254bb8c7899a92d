package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func setSpec(t *testing.T, f *fixture, name string, mutate func(*v1alpha1.ServiceInstance)) {
	t.Helper()
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, name, func(i *v1alpha1.ServiceInstance) error {
		mutate(i)
		return nil
	})
	assert.NilError(t, err)
}

func TestBackoff_IsExponentialCappedAndJittered(t *testing.T) {
	e := New(Config{RetryBase: time.Second, RetryMax: 10 * time.Second, Jitter: func() float64 { return 0.5 }})
	assert.Equal(t, e.backoff(1), time.Second)
	assert.Equal(t, e.backoff(3), 4*time.Second)
	assert.Equal(t, e.backoff(10), 10*time.Second)
	e.cfg.Jitter = func() float64 { return 0 }
	assert.Equal(t, e.backoff(1), 800*time.Millisecond)
}

func TestTargetCache_OneReadOfTheBrokerForManyRecords(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Minute} {
		f := newFixture(t)
		f.engine.cfg.TargetCacheTTL = ttl
		for _, n := range []string{"a", "b", "c"} {
			f.create(n, planSmall, "")
		}
		f.cluster.Core.ClearActions()

		for _, n := range []string{"a", "b", "c"} {
			assert.Equal(t, f.step(n).State, StateSettled)
		}

		brokerGets := 0
		for _, a := range f.cluster.Core.Actions() {
			if g, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "get" && g.GetName() == store.ConfigMapName(v1alpha1.KindBroker, brokerName) {
				brokerGets++
			}
		}
		if ttl == 0 {
			assert.Equal(t, brokerGets, 3, "without the cache every step reads the broker")
		} else {
			assert.Equal(t, brokerGets, 1, "with the cache one read serves every step")
		}
	}
}
