package catalog

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Reader reads the catalog's records for the commands that show them (get, describe,
// marketplace, graph, doctor, watch): it has no method that writes. A command changes a
// record only through one of the engine's operations.
type Reader struct{ st *store.Store }

// NewReader reads the records of st.
func NewReader(st *store.Store) *Reader { return &Reader{st: st} }

// Reader reads the records the engine drives.
func (e *Engine) Reader() *Reader { return NewReader(e.cfg.Store) }

// Filter selects records in a list: by broker, class, plan, instance, scope, pending
// label, and a label selector (see store.Filter).
type Filter = store.Filter

// RecordReader gets and lists the records of one kind.
type RecordReader[T v1alpha1.Record] struct{ r store.Records[T] }

// Get reads one record; a missing one is an error IsNotFound says so of.
func (r RecordReader[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	return r.r.Get(ctx, namespace, name)
}

// List lists the records of a namespace ("" for every namespace) that f selects.
func (r RecordReader[T]) List(ctx context.Context, namespace string, f Filter) ([]T, error) {
	return r.r.List(ctx, namespace, f)
}

// WatchChange reports once when the record changes from resourceVersion rv, or is gone.
func (r RecordReader[T]) WatchChange(ctx context.Context, namespace, name, rv string) <-chan bool {
	return r.r.WatchChange(ctx, namespace, name, rv)
}

// Brokers reads Broker records.
func (r *Reader) Brokers() RecordReader[*v1alpha1.Broker] {
	return RecordReader[*v1alpha1.Broker]{r.st.Brokers()}
}

// Classes reads ServiceClass records (with their plans).
func (r *Reader) Classes() RecordReader[*v1alpha1.ServiceClass] {
	return RecordReader[*v1alpha1.ServiceClass]{r.st.Classes()}
}

// PlanSchemas reads the plans' schemas.
func (r *Reader) PlanSchemas() RecordReader[*v1alpha1.ServicePlanSchemas] {
	return RecordReader[*v1alpha1.ServicePlanSchemas]{r.st.PlanSchemas()}
}

// Instances reads ServiceInstance records.
func (r *Reader) Instances() RecordReader[*v1alpha1.ServiceInstance] {
	return RecordReader[*v1alpha1.ServiceInstance]{r.st.Instances()}
}

// Bindings reads ServiceBinding records.
func (r *Reader) Bindings() RecordReader[*v1alpha1.ServiceBinding] {
	return RecordReader[*v1alpha1.ServiceBinding]{r.st.Bindings()}
}

// Access reads the catalog's access rules.
func (r *Reader) Access() RecordReader[*v1alpha1.CatalogAccess] {
	return RecordReader[*v1alpha1.CatalogAccess]{r.st.Access()}
}

// Secret reads a Secret with the user's rights (a binding's credentials for
// --show-secrets, say).
func (r *Reader) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return r.st.GetSecret(ctx, namespace, name)
}

// The errors of reading and writing records, as the commands test them.
var (
	IsNotFound      = store.IsNotFound
	IsAlreadyExists = store.IsAlreadyExists
	IsForbidden     = store.IsForbidden
	IsConflict      = store.IsConflict
	IsInvalid       = store.IsInvalid
	IsCorrupt       = store.IsCorrupt
)

// NameProblem says what is wrong with name as the name of a record of kind k, or "".
func NameProblem(k, name string) string { return store.NameProblem(k, name) }
