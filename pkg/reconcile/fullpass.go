package reconcile

import (
	"context"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// listWork is the first pass of a run: the records with work. A full pass lists the
// metadata of every record of the run's namespaces (store.ListPendingWithIDs): it also
// finds the records whose own deletion set only their deletionTimestamp, and indexes
// the OSB ids of every record. The runs between two full passes list only the records
// with work (store.ListWork: those labelled pending and every record of a namespace
// being deleted; and those Options.Deleted gives, records deleted whose deletion no label
// marks, as serve's watch saw them); each namespace whose id checks cost less so
// (namespaceSizes.namespacesToList, by the namespace's size when last listed) has its
// instances and bindings listed once (store.ListIDUsersIn), whose index answers the id
// checks of its records (the others list the users of their id, each). When that list
// cannot be made (the namespaces may not be listed), the run makes a full pass.
func (r *Reconciler) listWork(ctx context.Context, o Options, full bool) ([]store.WorkItem, *store.IDIndex, error) {
	if !full {
		items, err := r.Store.ListWork(ctx, o.Namespace)
		if err == nil {
			items = addWork(items, deletedIn(o))
			busy := r.sizes.namespacesToList(r.Store, items)
			if len(busy) == 0 {
				return items, nil, nil
			}
			more, ids, lerr := r.Store.ListIDUsersIn(ctx, busy)
			if lerr == nil {
				r.sizes.note(ids.Sizes(), false)
				return addWork(items, more), ids, nil
			}
			err = lerr
		}
		if ctx.Err() != nil {
			return nil, nil, err
		}
	}
	start := r.now()
	items, ids, err := r.Store.ListPendingWithIDs(ctx, o.Namespace)
	if err != nil {
		return nil, nil, err
	}
	r.fullPassListed(ctx, o, start, ids)
	return items, ids, nil
}

// fullPassListed notes a full pass that started at start and whose list made ids: its
// time, the namespaces' sizes, and (over every namespace) the marker of the catalog
// namespace.
func (r *Reconciler) fullPassListed(ctx context.Context, o Options, start time.Time, ids *store.IDIndex) {
	r.fullPasses.note(o.Namespace, start)
	sizes := ids.Sizes()
	if _, ok := sizes[o.Namespace]; !ok && o.Namespace != "" {
		sizes[o.Namespace] = 0
	}
	r.sizes.note(sizes, o.Namespace == "")
	if o.Namespace == "" && o.FullPassEvery > 0 && o.CatalogNamespace != "" && !o.DryRun {
		// For the next processes: a run by hand or a CronJob's is a process of its own.
		_ = r.Store.MarkFullPass(ctx, o.CatalogNamespace, start, store.NewFullPassSizes(sizes))
	}
}

// fullPassDue says whether the run lists every record: FullPassEvery is 0, or it has
// passed since the last full pass over the run's namespaces, of this process or (over
// every namespace) as the catalog namespace's marker says (store.LastFullPass); or the
// records have not all been given their id claims yet (the first full pass does it).
func (r *Reconciler) fullPassDue(ctx context.Context, o Options) bool {
	if o.FullPassEvery <= 0 {
		return true
	}
	now := r.now()
	last := r.fullPasses.last(o.Namespace)
	if o.Namespace == "" && o.CatalogNamespace != "" && now.Sub(last) >= o.FullPassEvery {
		if at, sizes := r.Store.LastFullPass(ctx, o.CatalogNamespace); at.After(last) {
			last = at
			if sizes != nil {
				// The namespaces' sizes that full pass found weigh the id lists.
				r.sizes.noteMarked(sizes)
			}
		}
	}
	// A marker dated in the future (a skewed clock) counts as now.
	if last.IsZero() || now.Sub(last) >= o.FullPassEvery {
		return true
	}
	if o.CatalogNamespace == "" {
		return false
	}
	swept, err := r.Store.IDClaimsSwept(ctx, o.CatalogNamespace)
	return err != nil || !swept
}

// fullPassTimes are the times of this process's last full passes, by namespace ("" for
// every namespace).
type fullPassTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (f *fullPassTimes) note(namespace string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at == nil {
		f.at = map[string]time.Time{}
	}
	f.at[namespace] = at
}

// last is when the last full pass over namespace started: one over every namespace
// counts for each.
func (f *fullPassTimes) last(namespace string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.at[namespace]
	if all := f.at[""]; all.After(t) {
		t = all
	}
	return t
}

// IDChecksPerNamespace is how many instances and bindings with work one namespace of
// unknown size (no full pass or list of this process read it) may hold for a run between
// full passes whose id checks each list the records of the namespace that use the
// record's OSB id. From this many on, the run lists the namespace's instances and
// bindings once instead (store.ListIDUsersIn) and answers their checks from that list.
// Of a namespace whose size is known, listNamespace decides. An id label is a key of its
// own per id: no one label selector finds the users of several ids.
const IDChecksPerNamespace = 16

// deletedIn are the records o.Deleted gives, of the run's namespaces.
func deletedIn(o Options) []store.WorkItem {
	if o.Deleted == nil {
		return nil
	}
	var in []store.WorkItem
	for _, it := range o.Deleted() {
		if it.Deleting && (o.Namespace == "" || it.Namespace == o.Namespace) {
			in = append(in, it)
		}
	}
	return in
}

// addWork is items and those of more that items does not hold (by kind, namespace and
// name).
func addWork(items, more []store.WorkItem) []store.WorkItem {
	seen := map[string]bool{}
	for _, it := range items {
		seen[it.Kind+"/"+it.Namespace+"/"+it.Name] = true
	}
	for _, it := range more {
		if !seen[it.Kind+"/"+it.Namespace+"/"+it.Name] {
			seen[it.Kind+"/"+it.Namespace+"/"+it.Name] = true
			items = append(items, it)
		}
	}
	return items
}
