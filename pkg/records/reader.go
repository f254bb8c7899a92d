// Package records reads the catalog's records for the commands that show them: the
// readers of each kind, the filters, the selectors and decoding of a watch, the
// marketplace's view, the graph of what uses what, and the predicates of the errors of
// reading. It has nothing that writes: a command changes a record only through one of the
// engine's operations.
package records

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Reader reads the catalog's records for the commands that show them (get, describe,
// marketplace, graph, doctor, watch): it has no method that writes. A command changes a
// record only through one of the engine's operations.
type Reader struct{ st *store.Store }

// NewReader reads the records of st.
func NewReader(st *store.Store) *Reader { return &Reader{st: st} }

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

// ListPages lists the records of a namespace ("" for every namespace) that f selects a
// page at a time: page gets each page's records as they are read (by namespace, then
// name, in the API server's order) and those that do not decode (bad), and keeps what it
// needs of them; the reader keeps none. restart is called when the list starts again
// (its snapshot expired): forget what page was given. An error page returns stops the
// list and is returned.
func (r RecordReader[T]) ListPages(ctx context.Context, namespace string, f Filter, page func(items []T, bad []error) error, restart func()) error {
	return r.r.ListPages(ctx, namespace, f, page, restart)
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
	IsNotFound  = store.IsNotFound
	IsForbidden = store.IsForbidden
	IsCorrupt   = store.IsCorrupt
)

// NameProblem says what is wrong with name as the name of a record of kind k, or "".
func NameProblem(k, name string) string { return store.NameProblem(k, name) }

// FindBroker finds the broker of that name: in the user's namespace (namespace scope)
// and in the catalog namespace (cluster scope), or only in scope when given. A name
// found in both is an InputError asking for --scope; one found in neither a
// *NotFoundError suggesting the closest names.
func (r *Reader) FindBroker(ctx context.Context, catalogNS, userNS, name string, scope v1alpha1.Scope) (*v1alpha1.Broker, error) {
	type place struct {
		ns    string
		scope v1alpha1.Scope
	}
	var places []place
	if scope != v1alpha1.ScopeCluster && userNS != catalogNS {
		places = append(places, place{userNS, v1alpha1.ScopeNamespace})
	}
	if scope != v1alpha1.ScopeNamespace || userNS == catalogNS {
		places = append(places, place{catalogNS, v1alpha1.ScopeCluster})
	}
	var found []*v1alpha1.Broker
	for _, p := range places {
		b, err := r.st.Brokers().Get(ctx, p.ns, name)
		switch {
		case store.IsNotFound(err):
			continue
		case store.IsForbidden(err) && len(places) > 1:
			continue
		case err != nil:
			return nil, err
		}
		if scope == "" || b.Spec.Scope == scope {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
	default:
		return nil, &InputError{fmt.Errorf("broker %q exists in namespace %q (namespace scope) and in %q (cluster scope): say which with --scope namespace or --scope cluster",
			name, userNS, catalogNS)}
	}
	var names []string
	for _, p := range places {
		bs, _ := r.st.Brokers().List(ctx, p.ns, store.Filter{})
		for _, b := range bs {
			names = append(names, b.Name)
		}
	}
	msg := fmt.Sprintf("broker %q not found", name)
	if len(places) == 2 {
		msg += fmt.Sprintf(" in namespace %q or in the catalog namespace %q", userNS, catalogNS)
	} else {
		msg += fmt.Sprintf(" in namespace %q", places[0].ns)
	}
	if s := marketplace.Suggest(name, names); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	} else {
		msg += " (run \"kubectl catalog get brokers\" to list them)"
	}
	return nil, &NotFoundError{msg}
}

// InputError is a mistake in what the user named (a broker name found in two scopes,
// say): the command exits as for a usage error.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// UsageMistake marks the error as a mistake in how the command was invoked.
func (e *InputError) UsageMistake() bool { return true }

// NotFoundError is an object the user named that does not exist; its message says what
// to do.
type NotFoundError struct{ Msg string }

func (e *NotFoundError) Error() string { return e.Msg }
