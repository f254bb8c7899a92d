package catalogsync_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// limitsEnv serves cat from a test broker registered both as a namespace-scoped broker
// of namespace "team" and as a cluster-scoped broker of the catalog namespace.
func limitsEnv(t *testing.T, cat broker.Catalog, opts ...catalogsync.Option) (*store.Store, *catalogsync.Syncer, *v1alpha1.Broker, *v1alpha1.Broker) {
	t.Helper()
	tb := broker.NewTestBroker(t, broker.Options{Catalog: &cat})
	cl := storetest.NewCluster()
	st := cl.Store()
	create := func(namespace string, scope v1alpha1.Scope) *v1alpha1.Broker {
		b, err := st.Brokers().Create(t.Context(), &v1alpha1.Broker{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "acme"},
			Spec:       v1alpha1.BrokerSpec{URL: tb.URL(), Scope: scope},
		})
		assert.NilError(t, err)
		return b
	}
	opts = append([]catalogsync.Option{catalogsync.WithCatalogNamespace(ns)}, opts...)
	s := catalogsync.New(st, brokerclient.New(cl.Core, brokerclient.WithTimeout(5*time.Second)), opts...)
	return st, s, create("team", v1alpha1.ScopeNamespace), create(ns, v1alpha1.ScopeCluster)
}

func TestSync_ANamespaceBrokersCatalogOverItsLimitsIsRefusedVisibly(t *testing.T) {
	many := broker.GenerateCatalog(catalogsync.NamespaceBrokerLimits.Services+1, 1)
	manyPlans := broker.GenerateCatalog(2, catalogsync.NamespaceBrokerLimits.Plans/2+1)
	bigSchema := broker.GenerateCatalog(1, 1)
	// Each schema within the spec's 64 KiB, the plan's together over the limit.
	schema, _ := json.Marshal(map[string]any{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "description": strings.Repeat("x", catalogsync.NamespaceBrokerLimits.SchemaBytes*2/3)})
	bigSchema.Services[0].Plans[0].Schemas = &osb.Schemas{ServiceInstance: &osb.ServiceInstanceSchema{
		Create: &osb.InputParametersSchema{Parameters: schema}, Update: &osb.InputParametersSchema{Parameters: schema}}}
	huge := broker.GenerateCatalog(1, 1)
	huge.Services[0].Description = strings.Repeat("d", int(catalogsync.NamespaceBrokerLimits.Bytes))
	for _, tc := range []struct {
		name string
		cat  broker.Catalog
		want string
	}{
		{"services", many, "more services than the limit of 200"},
		{"plans", manyPlans, "more plans than the limit of 2000"},
		{"schemas", bigSchema, "more schema bytes in one plan than the limit of 65536"},
		{"bytes", huge, "exceeds the limit of 8388608 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, s, team, cluster := limitsEnv(t, tc.cat)

			_, err := s.Sync(t.Context(), team)
			assert.ErrorContains(t, err, `broker "acme"`)
			b, gerr := st.Brokers().Get(t.Context(), "team", "acme")
			assert.NilError(t, gerr)
			assert.Equal(t, b.Status.Retry.Reason, catalogsync.ReasonTooLarge)
			failed := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionFailed)
			assert.Assert(t, failed != nil && failed.Reason == catalogsync.ReasonTooLarge, "%+v", b.Status.Conditions)
			assert.Assert(t, strings.Contains(failed.Message, tc.want), "%s", failed.Message)
			classes, lerr := st.Classes().List(t.Context(), "team", store.Filter{Broker: "acme"})
			assert.NilError(t, lerr)
			assert.Equal(t, len(classes), 0)

			// The same catalog from an administrator's cluster-scoped broker is recorded.
			_, err = s.Sync(t.Context(), cluster)
			assert.NilError(t, err)
		})
	}
}

func TestFetch_WaitsForItsShareOfTheDecodingBudget(t *testing.T) {
	budget := semaphore.NewWeighted(10)
	_, s, team, _ := limitsEnv(t, broker.GenerateCatalog(1, 1), catalogsync.WithDecodeBudget(budget, 10))
	assert.Assert(t, budget.TryAcquire(10))

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Fetch(ctx, team, catalogsync.Restrictions{})
	assert.ErrorContains(t, err, "context deadline exceeded")

	budget.Release(10)
	cat, err := s.Fetch(t.Context(), team, catalogsync.Restrictions{})
	assert.NilError(t, err)
	assert.Equal(t, cat.Len(), 1)
	assert.Assert(t, budget.TryAcquire(10), "the fetch gave its share back")
}
