package records

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// PendingRecord is a record with work to do, as ListPending sees it: its kind, namespace,
// name and whether it is being deleted (metadata only; read it in full with Get).
type PendingRecord = store.WorkItem

// ListPending lists the records of namespace ("" for every namespace) that have work to
// do: those labelled pending or being deleted (see store.Store.ListPending).
func (r *Reader) ListPending(ctx context.Context, namespace string) ([]PendingRecord, error) {
	return r.st.ListPending(ctx, namespace)
}

// OversizedRecord is a record's ConfigMap whose labels and annotations hold more than
// store.MaxRecordMetadataBytes: reconcile neither reads nor indexes it.
type OversizedRecord = store.OversizedRecord

// ListPendingAndOversized is ListPending, and also the records the same list left out
// for the size of their labels and annotations.
func (r *Reader) ListPendingAndOversized(ctx context.Context, namespace string) ([]PendingRecord, []OversizedRecord, error) {
	items, idx, err := r.st.ListPendingWithIDs(ctx, namespace)
	if err != nil || idx == nil {
		return items, nil, err
	}
	return items, idx.Oversized(), nil
}

// InstancesOf lists the instances of broker b's classes: in every namespace for a
// cluster-scoped broker, in b's namespace otherwise. Records that cannot be read are
// left out and named in the error, with the others returned.
func (r *Reader) InstancesOf(ctx context.Context, b *v1alpha1.Broker) ([]*v1alpha1.ServiceInstance, error) {
	ns := b.Namespace
	if b.Spec.Scope == v1alpha1.ScopeCluster {
		ns = ""
	}
	return r.st.Instances().List(ctx, ns, store.Filter{Broker: b.Name, Scope: b.Spec.Scope})
}

// UnverifiedCounts counts, per namespace, the records of namespace ("" for all) not
// stamped with token, the trust policy's token now in force: those AdoptAuthorship is
// for (see store.Store.UnverifiedCounts).
func (r *Reader) UnverifiedCounts(ctx context.Context, namespace, token string) (map[string]int, error) {
	return r.st.UnverifiedCounts(ctx, namespace, token)
}

// StampedCounts counts, per namespace, the records of namespace ("" for all) stamped with
// token: those that lose their verified author when that token is no longer the one in
// force (see store.Store.StampedCounts).
func (r *Reader) StampedCounts(ctx context.Context, namespace, token string) (map[string]int, error) {
	return r.st.StampedCounts(ctx, namespace, token)
}
