package reconcile

import (
	"sync"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// What the two ways of answering the id checks of a namespace's records with work cost
// the API server and the client, in microseconds of CPU, as measured with the bench's
// list costs (docs/reconcile.md "The first pass: choosing the id lists by cost"):
//
//   - one list of the users of one id (store.WithExternalID, in the record's namespace):
//     the request, and the API server's scan of every ConfigMap of the namespace in its
//     cache for the id label (a label selector has no index);
//   - one list of the namespace's instances, bindings and id claims
//     (store.ListIDUsersIn): a request per page (store.MetaPages), and each of those
//     records' metadata serialised by the API server and decoded and indexed by the
//     client.
const (
	requestCost         = 600
	idListCostPerRecord = 1.2
	nsListCostPerRecord = 25.0
)

// listNamespace says whether the id checks of withWork instances and bindings with work
// in a namespace holding records instances, bindings and id claims cost less by one list
// of the namespace, in pages pages, than by one list of each id.
func listNamespace(withWork, records, pages int) bool {
	perID := float64(withWork) * (requestCost + idListCostPerRecord*float64(records))
	return perID > float64(pages)*requestCost+nsListCostPerRecord*float64(records)
}

// namespaceSizes are how many instances, bindings and id claims each namespace held, as
// this process's last full pass (every namespace's, or one namespace's) or its last list
// of a namespace's id users found them.
type namespaceSizes struct {
	mu sync.Mutex
	n  map[string]int
	// all: n holds every namespace that held any at the last full pass over every
	// namespace; one absent held none.
	all bool
	// below, when not 0: a namespace n does not hold held fewer than below (the sizes
	// another process's full pass marked: store.FullPassSizes).
	below int
}

// noteMarked takes the sizes the marker of another process's full pass over every
// namespace records.
func (z *namespaceSizes) noteMarked(m *store.FullPassSizes) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.n, z.all, z.below = map[string]int{}, false, m.Below
	for ns, n := range m.Sizes {
		z.n[ns] = n
	}
}

// note records what a list found: of every namespace when all, else of the namespaces of
// sizes only.
func (z *namespaceSizes) note(sizes map[string]int, all bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if all || z.n == nil {
		z.n, z.all, z.below = map[string]int{}, all, 0
	}
	for ns, n := range sizes {
		z.n[ns] = n
	}
}

// of is how many records namespace held when last listed; false when no list told.
func (z *namespaceSizes) of(namespace string) (int, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	n, ok := z.n[namespace]
	switch {
	case ok || z.all:
		return n, true
	case z.below > 0:
		// At most below-1: its lists are weighed as if it held that many.
		return z.below - 1, true
	}
	return 0, false
}

// namespacesToList are the namespaces whose id checks cost less by one list of the
// namespace (listNamespace) than by a list per record, by their size when last listed;
// a namespace of unknown size is listed from IDChecksPerNamespace records with work on.
func (z *namespaceSizes) namespacesToList(st *store.Store, items []store.WorkItem) []string {
	per := map[string]int{}
	var order []string
	for _, it := range items {
		if it.Kind == v1alpha1.KindBroker {
			continue
		}
		if per[it.Namespace] == 0 {
			order = append(order, it.Namespace)
		}
		per[it.Namespace]++
	}
	var list []string
	for _, ns := range order {
		k := per[ns]
		n, known := z.of(ns)
		if !known {
			if k >= IDChecksPerNamespace {
				list = append(list, ns)
			}
			continue
		}
		// The namespace holds at least its records with work, and those created since.
		if n = max(n, k); listNamespace(k, n, st.MetaPages(n)) {
			list = append(list, ns)
		}
	}
	return list
}
