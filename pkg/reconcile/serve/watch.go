package serve

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// MetadataWatcher lists and watches ConfigMaps as metadata only (PartialObjectMetadata)
// in the namespace reconciled ("" for all): metadata.Interface's
// Resource(configmaps).Namespace(ns) is one.
type MetadataWatcher interface {
	List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// watchSelector selects the records that can have work: brokers, instances and
// bindings (the same records store.ListPending looks at).
func watchSelector() string {
	req, err := labels.NewRequirement(store.LabelKind, selection.In,
		[]string{v1alpha1.KindBroker, v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding})
	if err != nil {
		panic(err) // constant input
	}
	return labels.NewSelector().Add(*req).String()
}

// metaHasWork says whether a record's metadata marks work to do, as ListPending decides it.
func metaHasWork(m *metav1.ObjectMeta) bool {
	return m.Labels[store.LabelPending] == "true" || m.DeletionTimestamp != nil
}

// recordWatch tells the serving loop when a record starts to have work: it is created
// pending, becomes pending, or gets a deletionTimestamp. It is a list and a watch of
// the records' metadata, resumed from the last resourceVersion seen and listed afresh
// when that is too old (410 Expired). Records that stay pending do not trigger it:
// every step of a run writes to the record it drives (claims, status), and those
// writes must not start another run.
type recordWatch struct {
	records MetadataWatcher
	trigger func()
	logf    func(format string, args ...any)
	// backoff bounds the wait before a watch is retried after an error.
	minBackoff, maxBackoff time.Duration
	pageSize               int64

	// withWork holds the records known to have work, by uid.
	withWork map[types.UID]bool

	// deleted holds the records last seen carrying a deletionTimestamp, by uid: a run
	// between full passes drives them (Deleted), although a deletion the engine did not
	// write ("kubectl delete configmap") sets no label its list of the records with
	// work selects.
	mu      sync.Mutex
	deleted map[types.UID]store.WorkItem
}

// Deleted are the records the watch last saw carrying a deletionTimestamp, until it sees
// them gone or no longer deleted (reconcile.Options.Deleted).
func (w *recordWatch) Deleted() []store.WorkItem {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]store.WorkItem, 0, len(w.deleted))
	for _, it := range w.deleted {
		out = append(out, it)
	}
	return out
}

// seen notes m's deletion, or its end (gone: the record's ConfigMap was deleted).
func (w *recordWatch) seen(m *metav1.ObjectMeta, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deleted == nil {
		w.deleted = map[types.UID]store.WorkItem{}
	}
	if it, ok := store.WorkItemOf(m); ok && it.Deleting && !gone {
		w.deleted[m.UID] = it
		return
	}
	delete(w.deleted, m.UID)
}

// run lists and watches until ctx is done.
func (w *recordWatch) run(ctx context.Context) {
	sel := watchSelector()
	rv := ""
	backoff := w.minBackoff
	listed := false
	failing := false
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			rv, err = w.list(ctx, sel)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if !failing {
					w.logf("watching the records failed, relying on the interval until it works again: %v", err)
					failing = true
				}
				backoff = w.sleep(ctx, backoff)
				continue
			}
			if listed {
				// Events may have been missed while the watch was down: whatever
				// became pending then was not seen. A run finds it.
				w.trigger()
			}
			listed = true
		}
		timeout := int64(300 + rand.IntN(300))
		opts := metav1.ListOptions{
			LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true,
			// The API server ends the watch after this; it is resumed from rv. Spread,
			// so that many reconcilers do not re-watch at once.
			TimeoutSeconds: &timeout,
		}
		wi, err := w.records.Watch(ctx, opts)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = ""
				continue
			}
			if !failing {
				w.logf("watching the records failed, relying on the interval until it works again: %v", err)
				failing = true
			}
			backoff = w.sleep(ctx, backoff)
			continue
		}
		if failing {
			w.logf("watching the records again")
			failing = false
		}
		var expired bool
		rv, expired = w.consume(ctx, wi, rv)
		wi.Stop()
		if expired {
			rv = ""
			continue
		}
		backoff = w.minBackoff
	}
}

// list lists the records' metadata page by page, records which have work, and returns
// the list's resourceVersion to watch from.
func (w *recordWatch) list(ctx context.Context, sel string) (string, error) {
	opts := metav1.ListOptions{LabelSelector: sel, Limit: w.pageSize}
	withWork := map[types.UID]bool{}
	deleted := map[types.UID]store.WorkItem{}
	rv := ""
	for {
		list, err := w.records.List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			opts.Continue, rv, withWork, deleted = "", "", map[types.UID]bool{}, map[types.UID]store.WorkItem{}
			continue
		}
		if err != nil {
			return "", err
		}
		if rv == "" {
			rv = list.ResourceVersion
		}
		for i := range list.Items {
			m := &list.Items[i].ObjectMeta
			if metaHasWork(m) {
				withWork[m.UID] = true
			}
			if it, ok := store.WorkItemOf(m); ok && it.Deleting {
				deleted[m.UID] = it
			}
		}
		if list.Continue == "" {
			w.withWork = withWork
			w.mu.Lock()
			w.deleted = deleted
			w.mu.Unlock()
			return rv, nil
		}
		opts.Continue = list.Continue
	}
}

// consume reads events until the watch ends, and returns the last resourceVersion
// seen, and whether it has expired.
func (w *recordWatch) consume(ctx context.Context, wi watch.Interface, rv string) (string, bool) {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv, false
		case ev, ok = <-wi.ResultChan():
		}
		if !ok {
			return rv, false
		}
		if ev.Type == watch.Error {
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return rv, true
			}
			w.logf("watching the records: %v", err)
			return rv, false
		}
		m, ok := objectMeta(ev.Object)
		if !ok {
			continue
		}
		if m.ResourceVersion != "" {
			rv = m.ResourceVersion
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			w.seen(m, false)
			if metaHasWork(m) {
				if !w.withWork[m.UID] {
					w.withWork[m.UID] = true
					w.trigger()
				}
			} else {
				delete(w.withWork, m.UID)
			}
		case watch.Deleted:
			w.seen(m, true)
			delete(w.withWork, m.UID)
		}
	}
}

// objectMeta is the metadata of a watched object (PartialObjectMetadata from the
// metadata client; any object with metadata otherwise).
func objectMeta(obj any) (*metav1.ObjectMeta, bool) {
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		return &o.ObjectMeta, true
	case interface{ GetObjectMeta() metav1.Object }:
		if m, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return m, true
		}
	}
	return nil, false
}

// sleep waits for backoff (with jitter) or until ctx is done, and returns the next
// backoff.
func (w *recordWatch) sleep(ctx context.Context, backoff time.Duration) time.Duration {
	d := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return min(2*backoff, w.maxBackoff)
}
