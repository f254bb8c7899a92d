package store

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListPendingWithIDsAsListed is ListPendingWithIDs for a caller that acts on the records
// with work while the list is still read. ids, the list's index, is given to started
// before the first page is read; until the list ends it answers (Lookup) only for the
// records of the namespaces the list has passed, and only the checks of ids bound to a
// uid or a namespace, which only a record of the checked record's namespace can hold
// (as an index of some namespaces does: ListIDUsersIn). passed is called with the work
// items of each namespace once the list has read the last record of that namespace, and
// with those of the namespaces not yet passed when the list ends (an item may come
// twice when the list starts over); by then ids answers as ListPendingWithIDs's.
//
// A namespace is passed when the list reads a record of another one: the API server
// lists in the order of the objects' keys (namespace, then name; a page's continue token
// is the last key it read), so that a namespace's records come one after the other. A
// list whose records come out of that order passes no namespace before its end.
func (s *Store) ListPendingWithIDsAsListed(ctx context.Context, namespace string, started func(ids *IDIndex),
	passed func(items []WorkItem)) ([]WorkItem, *IDIndex, error) {
	ids := newIDIndex(namespace)
	ids.listing = true
	started(ids)
	var items []WorkItem
	// from: items of the namespaces not passed yet start there; cur and lastKey are the
	// namespace and key of the last record read; ordered: so far in key order.
	from, cur, lastKey, ordered := 0, "", "", true
	reset := func() {
		items, from, cur, lastKey, ordered = nil, 0, "", "", true
		ids.clear()
	}
	err := s.eachRecordMeta(ctx, namespace, reset, func(m *metav1.ObjectMeta) {
		key := m.Namespace + "/" + m.Name
		if ordered && lastKey != "" && key <= lastKey {
			ordered = false
			ids.unordered()
		}
		lastKey = key
		if ordered && m.Namespace != cur {
			if cur != "" {
				ids.pass(cur)
				if len(items) > from {
					passed(items[from:len(items):len(items)])
				}
				from = len(items)
			}
			cur = m.Namespace
		}
		if n := metadataBytes(m); n > MaxRecordMetadataBytes {
			ids.addOversized(m, n)
			return
		}
		if item, ok := workItem(m); ok {
			items = append(items, item)
		}
		ids.add(m)
	})
	if err != nil {
		ids.unordered()
		return nil, nil, err
	}
	ids.listed()
	if len(items) > from {
		passed(items[from:len(items):len(items)])
	}
	return items, ids, nil
}
