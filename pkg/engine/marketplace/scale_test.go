package marketplace_test

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// A 500 x 20 catalog with schemas fits (one ConfigMap per class, schemas apart), and the
// marketplace reads it with one paginated LIST per scope plus one GET of the access rules,
// never touching a schema record.
func TestMarketplace_LargeCatalog_OneListPerScopeNoSchemas(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1000 records")
	}
	ctx := context.Background()
	cl := storetest.NewCluster()
	st := cl.Store()
	b := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: "big"},
		Spec: v1alpha1.BrokerSpec{URL: "http://unused", Scope: v1alpha1.ScopeCluster}}
	gen := broker.GenerateCatalog(500, 20)
	cat, err := catalogsync.NewCatalog(&osb.CatalogResponse{Services: gen.Services})
	assert.NilError(t, err)
	res, err := catalogsync.New(st, nil).Apply(ctx, b, cat)
	assert.NilError(t, err)
	assert.Equal(t, res.ClassesAdded, 500)
	assert.Equal(t, res.Plans, 10000)

	largest := 0
	cms, err := cl.Core.CoreV1().ConfigMaps(catNS).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, cm := range cms.Items {
		largest = max(largest, len(cm.Data[store.DataKey]))
	}
	t.Logf("largest record: %d bytes", largest)
	assert.Assert(t, largest < 1<<20/2, "records must stay well below the 1 MiB object limit")

	cl.SetMaxPageSize(100)
	counts := map[string]int{}
	cl.Core.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		key := a.GetVerb() + " " + a.GetNamespace()
		if l, ok := a.(k8stesting.ListAction); ok {
			key += " " + l.GetListRestrictions().Labels.String()
		}
		counts[key]++
		return false, nil, nil
	})
	offers, err := marketplace.List(ctx, st, userNS, marketplace.Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(offers), 500)
	t.Logf("requests: %v", counts)
	var lists, gets int
	for k, n := range counts {
		switch {
		case strings.HasPrefix(k, "list"):
			lists++ // one key per scope; n is its pages
			assert.Assert(t, !strings.Contains(k, v1alpha1.KindServicePlanSchemas), "schemas listed: %s", k)
			if strings.Contains(k, catNS) {
				assert.Equal(t, n, 5, "500 classes in pages of 100")
			}
		case strings.HasPrefix(k, "get"):
			gets += n
		}
	}
	assert.Equal(t, lists, 2, "one paginated LIST per scope")
	assert.Equal(t, gets, 1, "one GET of the access rules")

	// A sync of the unchanged catalog writes nothing.
	for k := range counts {
		delete(counts, k)
	}
	res, err = catalogsync.New(st, nil).Apply(ctx, b, cat)
	assert.NilError(t, err)
	assert.Assert(t, res.Unchanged())
	for k := range counts {
		assert.Assert(t, strings.HasPrefix(k, "list"), "unexpected %s", k)
	}
}
