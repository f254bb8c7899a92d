package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// namespaceLists counts the requests (pages) of the lists of a namespace's id users (store.ListIDUsersIn: its
// instances, bindings and id claims, no brokers, no id label) the metadata client sent.
func (f *fixture) namespaceLists() int {
	n := 0
	for _, sel := range f.cluster.MetadataSelectors() {
		if strings.Contains(sel, "IDClaim") && !strings.Contains(sel, v1alpha1.KindBroker) && !strings.Contains(sel, store.IDLabelPrefix) {
			n++
		}
	}
	return n
}

// Between full passes, the id checks of a namespace's records with work are answered
// by whichever costs less, by the namespace's size as the process's last full pass
// found it: one list of the namespace, or one list of each id. A list of one id costs
// the API server a scan of the namespace (a label selector has no index), a list of the
// namespace the serialisation of each of its records: a few records with work in a
// small namespace are cheaper by its list, and in a very large one they are cheaper id
// by id up to about 20 (nsListCostPerRecord / idListCostPerRecord).
func TestRun_BetweenFullPasses_IDListsChosenByCost(t *testing.T) {
	for _, c := range []struct {
		name string
		// settled records of the namespace, and the size the last full pass is
		// said to have found there (0: what it did find).
		settled, size int
		withWork      int
		scope         v1alpha1.Scope
		namespaceList bool
	}{
		{"12 among 200, cluster broker", 200, 0, 12, v1alpha1.ScopeCluster, true},
		{"12 among 200, namespace broker", 200, 0, 12, v1alpha1.ScopeNamespace, true},
		{"3 among 200", 200, 0, 3, v1alpha1.ScopeCluster, false},
		{"12 among 10,000", 10, 10000, 12, v1alpha1.ScopeCluster, false},
		{"100 among 10,000", 10, 10000, 100, v1alpha1.ScopeCluster, true},
		{"18 among 100,000", 10, 100000, 18, v1alpha1.ScopeNamespace, false},
		{"30 among 100,000", 10, 100000, 30, v1alpha1.ScopeCluster, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.scope == v1alpha1.ScopeNamespace {
				f.namespaceBroker()
			}
			for i := range c.settled {
				f.instanceOf(c.scope, fmt.Sprintf("settled-%03d", i))
			}
			// The first run of the process is a full pass; the next is due in an hour.
			assert.Equal(t, f.run(fullPassEvery()).Counts[Done], c.settled)
			if c.size > 0 {
				f.rec.sizes.note(map[string]int{ns: c.size}, true)
			}
			f.now = f.now.Add(time.Minute)
			for i := range c.withWork {
				f.instanceOf(c.scope, fmt.Sprintf("new-%03d", i))
			}
			f.broker.ResetCalls()
			idLists, nsLists, items := f.idLists(), f.namespaceLists(), f.cluster.MetadataItems()

			sum := f.run(fullPassEvery())

			assert.Equal(t, sum.Counts[Done], c.withWork, "%+v", sum.Items)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), c.withWork)
			if c.namespaceList {
				// One list of the namespace, page by page.
				assert.Assert(t, f.namespaceLists()-nsLists >= 1, "no list of the namespace")
				assert.Equal(t, f.idLists()-idLists, 0, "no list per record")
			} else {
				assert.Equal(t, f.namespaceLists()-nsLists, 0, "no list of the namespace")
				assert.Equal(t, f.idLists()-idLists, c.withWork, "one list per record")
				assert.Assert(t, f.cluster.MetadataItems()-items <= 2*c.withWork, "read %d records' metadata", f.cluster.MetadataItems()-items)
			}
		})
	}
}

func TestListNamespace_ByCost(t *testing.T) {
	st := store.New(nil, nil)
	for _, c := range []struct {
		withWork, records int
		want              bool
	}{
		{1, 1, false}, {2, 2, true}, {2, 9, false}, {3, 9, true}, {9, 212, false}, {10, 212, true},
		{18, 2000, false}, {19, 2000, true}, {21, 10000, false}, {22, 10000, true}, {100, 10000, true},
		{21, 100000, false}, {22, 100000, true},
	} {
		assert.Equal(t, listNamespace(c.withWork, c.records, st.MetaPages(c.records)), c.want, "%d with work among %d", c.withWork, c.records)
	}
}

// The sizes a full pass over every namespace found are in its marker: another process
// (a CronJob's run, a run by hand) between full passes weighs its id lists by them. A
// namespace the marker does not name held fewer than its floor.
func TestRun_FullPassMarker_GivesTheNamespacesSizes(t *testing.T) {
	for _, c := range []struct {
		name          string
		settled       int
		withWork      int
		namespaceList bool
	}{
		// Unknown, 12 would be checked id by id (under IDChecksPerNamespace).
		{"12 among 200", 200, 12, true},
		// Not named (under 64): weighed as 63 records, 3 are cheaper id by id.
		{"3 among 20", 20, 3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			for i := range c.settled {
				f.instanceOf(v1alpha1.ScopeCluster, fmt.Sprintf("settled-%03d", i))
			}
			assert.Equal(t, f.run(fullPassEvery()).Counts[Done], c.settled) // marked
			_, sizes := f.st.LastFullPass(context.Background(), storetest.CatalogNamespace)
			assert.Assert(t, sizes != nil)
			if c.settled >= 64 {
				assert.Equal(t, sizes.Sizes[ns], c.settled)
			} else {
				assert.Equal(t, len(sizes.Sizes), 0)
			}
			f.now = f.now.Add(time.Minute)
			for i := range c.withWork {
				f.instanceOf(v1alpha1.ScopeCluster, fmt.Sprintf("new-%03d", i))
			}
			idLists, nsLists := f.idLists(), f.namespaceLists()

			other := &Reconciler{Store: f.st, Engine: f.rec.Engine, Now: f.rec.Now}
			sum, err := other.Run(context.Background(), fullPassEvery())

			assert.NilError(t, err)
			assert.Equal(t, sum.Counts[Done], c.withWork, "%+v", sum.Items)
			if c.namespaceList {
				assert.Assert(t, f.namespaceLists()-nsLists >= 1, "no list of the namespace")
				assert.Equal(t, f.idLists()-idLists, 0, "no list per record")
			} else {
				assert.Equal(t, f.namespaceLists()-nsLists, 0, "no list of the namespace")
				assert.Equal(t, f.idLists()-idLists, c.withWork, "one list per record")
			}
		})
	}
}

func TestNewFullPassSizes_KeepsTheLargest(t *testing.T) {
	sizes := map[string]int{"small": 63, "a": 64}
	for i := range 2100 {
		sizes[fmt.Sprintf("ns-%04d", i)] = 100 + i
	}
	m := store.NewFullPassSizes(sizes)
	assert.Equal(t, len(m.Sizes), 2000)
	assert.Equal(t, m.Below, 100+100) // ns-0099 and below are not named
	assert.Equal(t, m.Sizes["ns-2099"], 2199)
	_, named := m.Sizes["a"]
	assert.Assert(t, !named)
	m = store.NewFullPassSizes(map[string]int{"small": 63, "a": 64})
	assert.DeepEqual(t, m, &store.FullPassSizes{Below: 64, Sizes: map[string]int{"a": 64}})
}
