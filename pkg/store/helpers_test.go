package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// clock is a settable clock for claims and timestamps.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// newCluster returns a fake cluster and a store over it, both on a clock starting at
// storetest.SampleTime().
func newCluster(t *testing.T, opts ...store.Option) (*storetest.Cluster, *store.Store, *clock) {
	t.Helper()
	clk := &clock{t: storetest.SampleTime().Time}
	c := storetest.NewCluster()
	c.SetClock(clk.now)
	return c, c.Store(append([]store.Option{store.WithClock(clk.now)}, opts...)...), clk
}

// create stores any record through the Records of its kind.
func create(ctx context.Context, st *store.Store, rec v1alpha1.Record) (v1alpha1.Record, error) {
	switch o := rec.(type) {
	case *v1alpha1.Broker:
		return st.Brokers().Create(ctx, o)
	case *v1alpha1.ServiceClass:
		return st.Classes().Create(ctx, o)
	case *v1alpha1.ServicePlanSchemas:
		return st.PlanSchemas().Create(ctx, o)
	case *v1alpha1.ServiceInstance:
		return st.Instances().Create(ctx, o)
	case *v1alpha1.ServiceBinding:
		return st.Bindings().Create(ctx, o)
	}
	return nil, fmt.Errorf("unknown record %T", rec)
}

// get reads any record through the Records of its kind.
func get(ctx context.Context, st *store.Store, kind, namespace, name string) (v1alpha1.Record, error) {
	switch kind {
	case v1alpha1.KindBroker:
		return st.Brokers().Get(ctx, namespace, name)
	case v1alpha1.KindServiceClass:
		return st.Classes().Get(ctx, namespace, name)
	case v1alpha1.KindServicePlanSchemas:
		return st.PlanSchemas().Get(ctx, namespace, name)
	case v1alpha1.KindServiceInstance:
		return st.Instances().Get(ctx, namespace, name)
	case v1alpha1.KindServiceBinding:
		return st.Bindings().Get(ctx, namespace, name)
	}
	return nil, fmt.Errorf("unknown kind %s", kind)
}

func kindOf(rec v1alpha1.Record) string {
	switch rec.(type) {
	case *v1alpha1.Broker:
		return v1alpha1.KindBroker
	case *v1alpha1.ServiceClass:
		return v1alpha1.KindServiceClass
	case *v1alpha1.ServicePlanSchemas:
		return v1alpha1.KindServicePlanSchemas
	case *v1alpha1.ServiceInstance:
		return v1alpha1.KindServiceInstance
	case *v1alpha1.ServiceBinding:
		return v1alpha1.KindServiceBinding
	}
	return ""
}

// instance returns a minimal new instance named name in the user namespace.
func instance(name string) *v1alpha1.ServiceInstance {
	i := storetest.SampleInstance()
	i.Name = name
	i.Status = v1alpha1.ServiceInstanceStatus{}
	return i
}

func mustCreateInstance(t *testing.T, st *store.Store, name string) *v1alpha1.ServiceInstance {
	t.Helper()
	inst, err := st.Instances().Create(context.Background(), instance(name))
	assert.NilError(t, err)
	return inst
}
