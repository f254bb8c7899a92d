package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// ListWork lists the records of namespace ("" for all) that have work to do, reading
// the metadata of no more records than have it, or may have it:
//
//   - the records labelled pending, by a label-selected list: the API server filters
//     them from its cache and sends those alone. The label is what ListPending reads too
//     (it reads every record's labels and keeps those with it), so this list finds the
//     same pending records;
//   - every record of each namespace being deleted (Terminating): the namespace's
//     deletion sets only the deletionTimestamp of its records, which no selector finds.
//
// What it cannot find is a record whose own deletion set only its deletionTimestamp
// ("kubectl delete configmap", a garbage collection) in a namespace that is not being
// deleted: until a step writes it (which labels it pending), only a list of every
// record (ListPendingWithIDs) finds it. Reconcile makes that list periodically.
//
// Listing the namespaces needs the right to list them: without it (or when a namespace
// cannot be read), ListWork fails, and the caller lists every record instead.
func (s *Store) ListWork(ctx context.Context, namespace string) ([]WorkItem, error) {
	if s.meta == nil {
		return nil, errors.New("store: listing records' metadata needs a metadata client (store.New got nil)")
	}
	deleting, err := s.namespacesBeingDeleted(ctx, namespace)
	if err != nil {
		return nil, err
	}
	pending, err := labels.NewRequirement(LabelPending, selection.Equals, []string{"true"})
	if err != nil {
		return nil, err
	}
	var items []WorkItem
	seen := map[string]bool{}
	add := func(m *metav1.ObjectMeta) {
		if metadataBytes(m) > MaxRecordMetadataBytes {
			return
		}
		item, ok := workItem(m)
		if !ok || seen[item.Kind+"/"+item.Namespace+"/"+item.Name] {
			return
		}
		seen[item.Kind+"/"+item.Namespace+"/"+item.Name] = true
		items = append(items, item)
	}
	// The namespaces being deleted first: a record found there is not listed twice.
	for _, ns := range deleting {
		var found []WorkItem
		err := s.eachRecordMetaSelected(ctx, ns, nil, func() { found = nil }, func(m *metav1.ObjectMeta) {
			if item, ok := workItem(m); ok && metadataBytes(m) <= MaxRecordMetadataBytes {
				found = append(found, item)
			}
		})
		if err != nil {
			return nil, err
		}
		for _, it := range found {
			seen[it.Kind+"/"+it.Namespace+"/"+it.Name] = true
		}
		items = append(items, found...)
	}
	start := len(items)
	err = s.eachRecordMetaSelected(ctx, namespace, pending, func() {
		for _, it := range items[start:] {
			delete(seen, it.Kind+"/"+it.Namespace+"/"+it.Name)
		}
		items = items[:start]
	}, add)
	if err != nil {
		return nil, err
	}
	return items, nil
}

// WorkItemOf is the WorkItem of a record's metadata as a watch of the records sees it,
// if it has work to do (labelled pending, or carrying a deletionTimestamp) and its labels
// and annotations are within MaxRecordMetadataBytes: what ListPending would make of it.
func WorkItemOf(m *metav1.ObjectMeta) (WorkItem, bool) {
	if metadataBytes(m) > MaxRecordMetadataBytes {
		return WorkItem{}, false
	}
	return workItem(m)
}

// namespacesBeingDeleted are the namespaces of namespace ("" for all) that are being
// deleted (Terminating, or carrying a deletionTimestamp).
func (s *Store) namespacesBeingDeleted(ctx context.Context, namespace string) ([]string, error) {
	gone := func(ns *corev1.Namespace) bool {
		return ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating
	}
	if namespace != "" {
		ns, err := s.core.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, apiError("get", "Namespace", "", namespace, err)
		}
		if gone(ns) {
			return []string{namespace}, nil
		}
		return nil, nil
	}
	var out []string
	opts := metav1.ListOptions{Limit: s.pageSize}
	for {
		list, err := s.core.CoreV1().Namespaces().List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			out, opts.Continue = nil, ""
			continue
		}
		if err != nil {
			return nil, apiError("list", "Namespace", "", "", err)
		}
		for i := range list.Items {
			if gone(&list.Items[i]) {
				out = append(out, list.Items[i].Name)
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// eachRecordMetaSelected is eachRecordMeta for the records (not the id claims) that
// also match req, when req is not nil.
func (s *Store) eachRecordMetaSelected(ctx context.Context, namespace string, req *labels.Requirement, reset func(), visit func(*metav1.ObjectMeta)) error {
	kinds, err := labels.NewRequirement(LabelKind, selection.In,
		[]string{v1alpha1.KindBroker, v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding})
	if err != nil {
		return err
	}
	sel := labels.NewSelector().Add(*kinds)
	if req != nil {
		sel = sel.Add(*req)
	}
	return s.eachMetaPage(ctx, namespace, sel.String(), reset, visit)
}

// FullPassMarker is the ConfigMap, in the catalog namespace, whose annotation
// AnnotationFullPassAt says when reconcile last listed every record of every namespace
// (ListPendingWithIDs): the runs in between list only the records with work (ListWork).
// Only those who may write the catalog namespace's ConfigMaps can set it.
const FullPassMarker = "catalog-reconcile-full-pass"

// AnnotationFullPassAt is when the last full pass of reconcile over every namespace
// started (RFC 3339).
const AnnotationFullPassAt = Prefix + "full-pass-at"

// AnnotationFullPassSizes is how many instances, bindings and id claims the largest
// namespaces held at the last full pass over every namespace (JSON, FullPassSizes): what
// a run between full passes weighs its id lists by.
const AnnotationFullPassSizes = Prefix + "full-pass-sizes"

// FullPassSizes are namespaces' sizes (instances, bindings and id claims) a full pass
// found: Sizes names the largest, and every namespace it does not name held fewer than
// Below.
type FullPassSizes struct {
	Below int            `json:"below"`
	Sizes map[string]int `json:"sizes"`
}

// The sizes a marker keeps: of namespaces of minMarkedSize records or more, at most
// maxMarkedSizes of them (the largest; some 60 KB), so that the marker stays far within
// what a ConfigMap's annotations may hold.
const (
	minMarkedSize  = 64
	maxMarkedSizes = 2000
)

// NewFullPassSizes is what a marker keeps of sizes, every namespace's (IDIndex.Sizes of
// a full pass over every namespace).
func NewFullPassSizes(sizes map[string]int) *FullPassSizes {
	type nsSize struct {
		ns string
		n  int
	}
	var big []nsSize
	for ns, n := range sizes {
		if n >= minMarkedSize {
			big = append(big, nsSize{ns, n})
		}
	}
	slices.SortFunc(big, func(a, b nsSize) int { return cmp.Or(b.n-a.n, strings.Compare(a.ns, b.ns)) })
	out := &FullPassSizes{Below: minMarkedSize, Sizes: map[string]int{}}
	if len(big) > maxMarkedSizes {
		out.Below = big[maxMarkedSizes].n + 1
		big = big[:maxMarkedSizes]
	}
	for _, b := range big {
		out.Sizes[b.ns] = b.n
	}
	return out
}

// LastFullPass is when the last full pass over every namespace started, as
// FullPassMarker says, and the namespaces' sizes it found (nil when it does not say);
// zero when there is none or it cannot be read.
func (s *Store) LastFullPass(ctx context.Context, catalogNamespace string) (time.Time, *FullPassSizes) {
	cm, err := s.core.CoreV1().ConfigMaps(catalogNamespace).Get(ctx, FullPassMarker, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, cm.Annotations[AnnotationFullPassAt])
	if err != nil {
		return time.Time{}, nil
	}
	var sizes *FullPassSizes
	if raw := cm.Annotations[AnnotationFullPassSizes]; raw != "" {
		sizes = &FullPassSizes{}
		if json.Unmarshal([]byte(raw), sizes) != nil || sizes.Below <= 0 {
			sizes = nil
		}
	}
	return t, sizes
}

// MarkFullPass records in FullPassMarker that a full pass over every namespace started
// at, and the namespaces' sizes it found (none when sizes is nil).
func (s *Store) MarkFullPass(ctx context.Context, catalogNamespace string, at time.Time, sizes *FullPassSizes) error {
	cms := s.core.CoreV1().ConfigMaps(catalogNamespace)
	want := at.UTC().Format(time.RFC3339)
	annotations := map[string]string{AnnotationFullPassAt: want}
	if sizes != nil {
		raw, err := json.Marshal(sizes)
		if err != nil {
			return err
		}
		annotations[AnnotationFullPassSizes] = string(raw)
	}
	cm, err := cms.Get(ctx, FullPassMarker, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: catalogNamespace, Name: FullPassMarker, Labels: map[string]string{LabelManagedBy: ManagedBy},
			Annotations: annotations,
		}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if prev, perr := time.Parse(time.RFC3339, cm.Annotations[AnnotationFullPassAt]); perr == nil && !prev.Before(at.Truncate(time.Second)) {
		return nil
	}
	cm = cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	delete(cm.Annotations, AnnotationFullPassSizes)
	maps.Copy(cm.Annotations, annotations)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
