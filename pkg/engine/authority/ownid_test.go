package authority

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// TestCheckOwnIDIn_AnIDOfTheNamespaceUnderAnotherClusterID_NamesTheCatalogFirst: an id
// bound to the record's namespace under another cluster id (one made by a catalog of
// another catalog namespace: the user's --catalog-namespace or KUBECTL_CATALOG_NAMESPACE
// differs) is refused as any other id, and the refusal says to look at the catalog
// namespace before anything that drops the record.
func TestCheckOwnIDIn_AnIDOfTheNamespaceUnderAnotherClusterID_NamesTheCatalogFirst(t *testing.T) {
	inst := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "db", UID: "inst-uid"}}
	made := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "dev", v1alpha1.NamespaceKey{ClusterID: "cluster-of-catalog-a", UID: "dev-uid"})
	auth := New(func() Env {
		return Env{CatalogNamespace: "catalog-b", Platform: keysOf{cluster: "cluster-of-catalog-b", uids: map[string]string{"dev": "dev-uid"}}}
	})

	err := auth.CheckOwnIDIn(context.Background(), v1alpha1.KindServiceInstance, inst, made)

	r, ok := AsRefused(err)
	assert.Assert(t, ok, "%v", err)
	assert.Equal(t, r.Reason, ReasonRefusedIDNotOwned)
	assert.ErrorContains(t, err, `this catalog's namespace is "catalog-b"`)
	assert.ErrorContains(t, err, "--catalog-namespace")
	hint, drop := strings.Index(err.Error(), "--catalog-namespace"), strings.Index(err.Error(), "--abandon")
	assert.Assert(t, hint < drop, "the catalog namespace is named before dropping the record: %v", err)

	// The same id, checked by the catalog it was made by, is the record's own.
	same := New(func() Env {
		return Env{CatalogNamespace: "catalog-a", Platform: keysOf{cluster: "cluster-of-catalog-a", uids: map[string]string{"dev": "dev-uid"}}}
	})
	assert.NilError(t, same.CheckOwnIDIn(context.Background(), v1alpha1.KindServiceInstance, inst, made))
	// An id bound to another record says nothing of catalogs.
	other := v1alpha1.NewRecordBoundID(types.UID("another-uid"))
	err = auth.CheckOwnIDIn(context.Background(), v1alpha1.KindServiceInstance, inst, other)
	assert.ErrorContains(t, err, "it was generated for another record or namespace")
}
