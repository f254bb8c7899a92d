package store

import (
	"context"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// idListsAtOnce is how many namespaces' lists ListIDUsersIn makes at once.
const idListsAtOnce = 4

// ListIDUsersIn lists, for each of namespaces, the metadata of its instances, bindings
// and their id claims (one label-selected list of the namespace, page by page; up to
// idListsAtOnce namespaces at once), and indexes their OSB id labels as
// ListPendingWithIDs does, for these namespaces only (IDIndex.Lookup then answers for
// the records of these namespaces the ids bound to their uid or namespace, which only a
// record of the same namespace can hold). It also returns the instances and bindings
// with work the lists read: a record whose own deletion set only its deletionTimestamp
// is among them.
//
// An OSB id label is a key of its own per id, and a label selector is a conjunction of
// requirements: no one selector finds the records labelled with any of several ids, so
// the id checks of many records of a namespace are answered by one list of the
// namespace's instances and bindings rather than by one list per record.
func (s *Store) ListIDUsersIn(ctx context.Context, namespaces []string) ([]WorkItem, *IDIndex, error) {
	kinds, err := labels.NewRequirement(LabelKind, selection.In,
		[]string{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding,
			idClaimKind(v1alpha1.KindServiceInstance), idClaimKind(v1alpha1.KindServiceBinding)})
	if err != nil {
		return nil, nil, err
	}
	sel := labels.NewSelector().Add(*kinds).String()
	namespaces = slices.Compact(slices.Sorted(slices.Values(namespaces)))
	type listed struct {
		items []WorkItem
		ids   *IDIndex
		err   error
	}
	out := make([]listed, len(namespaces))
	sem := make(chan struct{}, idListsAtOnce)
	var wg sync.WaitGroup
	for i, ns := range namespaces {
		if ns == "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			l := &out[i]
			reset := func() { l.items, l.ids = nil, newIDIndex("") }
			reset()
			l.err = s.eachMetaPage(ctx, ns, sel, reset, func(m *metav1.ObjectMeta) {
				if n := metadataBytes(m); n > MaxRecordMetadataBytes {
					l.ids.addOversized(m, n)
					return
				}
				if item, ok := workItem(m); ok {
					l.items = append(l.items, item)
				}
				l.ids.add(m)
			})
		}()
	}
	wg.Wait()
	ids := newIDIndex("")
	ids.within = map[string]bool{}
	var items []WorkItem
	for i, ns := range namespaces {
		if ns == "" {
			continue
		}
		if out[i].err != nil {
			return nil, nil, out[i].err
		}
		ids.within[ns] = true
		ids.merge(out[i].ids)
		items = append(items, out[i].items...)
	}
	return items, ids, nil
}

// Partial reports whether x covers only some namespaces (ListIDUsersIn): it answers the
// checks of ids bound to a uid or a namespace for the records of those namespaces, and
// nothing else (no id claims are made or released on its word).
func (x *IDIndex) Partial() bool {
	if x == nil {
		return false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.within != nil || x.listing
}

// merge adds to x what o indexed, a list of other namespaces than x's.
func (x *IDIndex) merge(o *IDIndex) {
	at := make([]uint32, o.recs.n)
	for i := range uint32(o.recs.n) {
		r := *o.recs.at(i)
		name := o.names.get(r.name, r.nameLen)
		r.ns, r.name = x.nss.of(o.nss.name(r.ns)), x.names.add(name)
		if uid, ok := o.otherUIDs[r.uid]; ok {
			x.keepUID(uid)
		}
		at[i] = x.recs.add(r)
		x.byUID[r.uid] = at[i]
	}
	for k, i := range o.first {
		if _, taken := x.first[k]; taken {
			x.more[k] = append(x.more[k], at[i])
		} else {
			x.first[k] = at[i]
		}
		for _, j := range o.more[k] {
			x.more[k] = append(x.more[k], at[j])
		}
	}
	maps.Copy(x.claims, o.claims)
	for ns, n := range o.indexed {
		x.indexed[ns] += n
	}
	maps.Copy(x.incomplete, o.incomplete)
	x.oversized = append(x.oversized, o.oversized...)
}

// Listed is how many instances and bindings the list (or lists) of x held.
func (x *IDIndex) Listed() int {
	if x == nil {
		return 0
	}
	return x.recs.n
}

// Sizes is how many instances, bindings and id claims the list (or lists) of x held in
// each namespace: what a list of a namespace's id users reads there (ListIDUsersIn).
func (x *IDIndex) Sizes() map[string]int {
	if x == nil {
		return nil
	}
	n := map[string]int{}
	for i := range uint32(x.recs.n) {
		n[x.nss.name(x.recs.at(i).ns)]++
	}
	for k := range x.claims {
		n[k.Namespace]++
	}
	for ns := range x.within {
		n[ns] += 0
	}
	return n
}
