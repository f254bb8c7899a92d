package reconcile

import (
	"cmp"
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A record waiting on an asynchronous operation costs a run a read of it, the claim
// before its first poll and the outcome after its last. The read is saved: the run lists
// the instances and bindings labelled pending in full, once (a page per 500 records,
// store.Records.List, which remembers their specs as a read does), and a record's first
// visit takes its copy from that list. The copy may be older than the record by the
// time a worker takes it up, so it is acted on only where the first write the step makes
// is guarded by its resourceVersion before anything is sent: a poll, whose claim
// (engine's claimToPoll) conflicts when anyone wrote the record since the list, and is
// then read again as before. Any other step, and any decision not to step (claimed by
// someone else, not due, needing the user), is made on the record read on its own.

const (
	// listedCopiesMin is how many instances (or bindings) with work a run needs before
	// it lists them in full: fewer are read one at a time. A list filters every
	// ConfigMap of the run's namespaces from the API server's cache and sends each
	// pending record of them, its shard's or not; a few reads cost less.
	listedCopiesMin = 16
	// listedCopiesMax bounds the copies a run keeps: past it, the records are read one
	// at a time, as the run takes them up, and not kept all at once.
	listedCopiesMax = 4096
)

// listCopies gives the instances and bindings of todo their copies from one list of the
// records labelled pending of the run's namespaces, for the kinds with enough of them.
// A list that fails leaves the records to be read one at a time.
func (r *Reconciler) listCopies(ctx context.Context, o Options, todo []work) {
	if o.DryRun {
		return
	}
	at := map[string]int{}
	count := map[string]int{}
	for i, w := range todo {
		if w.kind == v1alpha1.KindServiceInstance || w.kind == v1alpha1.KindServiceBinding {
			at[w.key()] = i
			count[w.kind]++
		}
	}
	keep := func(kind string, x engineRecord) {
		w := work{kind: kind, namespace: x.GetNamespace(), name: x.GetName()}
		if i, ok := at[w.key()]; ok {
			todo[i].listed = x
		}
	}
	listed := func(kind string) bool {
		return count[kind] >= cmp.Or(o.ListedCopiesMin, listedCopiesMin) && count[kind] <= listedCopiesMax
	}
	if listed(v1alpha1.KindServiceInstance) {
		insts, _ := r.Store.Instances().List(ctx, o.Namespace, store.Filter{PendingOnly: true})
		for _, x := range insts {
			keep(v1alpha1.KindServiceInstance, x)
		}
	}
	if listed(v1alpha1.KindServiceBinding) {
		bindings, _ := r.Store.Bindings().List(ctx, o.Namespace, store.Filter{PendingOnly: true})
		for _, x := range bindings {
			keep(v1alpha1.KindServiceBinding, x)
		}
	}
}

// pollsListedCopy reports whether t's record, read from the run's list, is stepped on
// that copy: its next step is a poll due now, no one holds a live claim on it, and the
// copy carries no claim of this run's holder (a claim the poll would renew without a
// write). Never in a dry run, nor for a rotation.
func (r *Reconciler) pollsListedCopy(t *task, o Options, first bool) bool {
	if o.DryRun || first && t.w.rotate {
		return false
	}
	next := t.rec.next()
	if next.Action != engine.NextPoll || next.ClaimedBy != "" || next.NeedsUser || !next.Due(r.now()) {
		return false
	}
	obj := t.rec.object()
	if op := obj.OpStatus().InFlight; op == nil || !op.Async {
		return false
	}
	if l, ok := store.LeaseOf(obj); ok && l.Holder == r.Engine.Holder() {
		return false
	}
	return true
}
