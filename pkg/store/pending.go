package store

import (
	"context"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// configMapsResource is the resource the metadata client lists.
func configMapsResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
}

// WorkItem is a record with work to do, as ListPending sees it: metadata only.
type WorkItem struct {
	// Kind is the record kind (v1alpha1.KindServiceInstance, ...).
	Kind            string
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	// Pending: the record is labelled pending.
	Pending bool
	// Deleting: the record carries a deletionTimestamp (deleted by the CLI, by "kubectl
	// delete", or by its namespace being deleted).
	Deleting bool
	// Lease is the record's claim, if it has a readable one (it may have expired).
	Lease *Lease
}

// ListPending lists the records of namespace (all namespaces when namespace is "") that
// have work to do: those labelled pending or carrying a deletionTimestamp. It reads
// metadata only (PartialObjectMetadata), page by page, and only of the kinds that can have
// work (brokers, instances, bindings); read the items in full with Get. A deletion sets
// only deletionTimestamp, not the pending label, which is why this is one metadata list
// and not a label-selected list of full records.
func (s *Store) ListPending(ctx context.Context, namespace string) ([]WorkItem, error) {
	if s.meta == nil {
		return nil, errors.New("store: ListPending needs a metadata client (store.New got nil)")
	}
	req, err := labels.NewRequirement(LabelKind, selection.In,
		[]string{v1alpha1.KindBroker, v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding})
	if err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{LabelSelector: labels.NewSelector().Add(*req).String(), Limit: s.pageSize}
	var items []WorkItem
	for {
		list, err := s.meta.Resource(configMapsResource()).Namespace(namespace).List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			items, opts.Continue, opts.Limit = nil, "", 0
			continue
		}
		if err != nil {
			return nil, apiError("list", "", namespace, "", err)
		}
		for i := range list.Items {
			if item, ok := workItem(&list.Items[i].ObjectMeta); ok {
				items = append(items, item)
			}
		}
		if list.Continue == "" {
			return items, nil
		}
		opts.Continue = list.Continue
	}
}

// workItem is the WorkItem of a record's metadata, if it has work to do.
func workItem(m *metav1.ObjectMeta) (WorkItem, bool) {
	kind := m.Labels[LabelKind]
	name, ok := strings.CutPrefix(m.Name, configMapPrefix(kind))
	if !ok || configMapPrefix(kind) == "" {
		return WorkItem{}, false
	}
	item := WorkItem{
		Kind: kind, Namespace: m.Namespace, Name: name, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Pending: m.Labels[LabelPending] == "true", Deleting: m.DeletionTimestamp != nil,
	}
	if !item.Pending && !item.Deleting {
		return WorkItem{}, false
	}
	if l, ok := LeaseOf(m); ok {
		item.Lease = &l
	}
	return item, true
}
