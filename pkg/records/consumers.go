package records

import (
	"context"
	"slices"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// ReadableBindings lists the bindings of namespace ns ("": every namespace) that f
// selects, adding to bad the ConfigMaps it selects that hold no readable record
// (store.Unreadable) instead of failing: anyone who may write a ConfigMap can write one,
// so it stops no listing.
func ReadableBindings(ctx context.Context, st *store.Store, ns string, f store.Filter, bad *[]*store.Error) ([]*v1alpha1.ServiceBinding, error) {
	items, err := st.Bindings().List(ctx, ns, f)
	if b, ok := store.Unreadable(err); ok {
		*bad = append(*bad, b...)
		return items, nil
	}
	return items, err
}

// ListConsumers lists the bindings of inst in other namespaces that st's user may list:
// from every namespace when allowed, else from each namespace the instance is shared
// with and in extra. unseen names the namespaces that could not be read. A ConfigMap
// labelled as a binding of inst that holds no readable record is left out (the engine's
// Consumers also reports it).
func ListConsumers(ctx context.Context, st *store.Store, inst *v1alpha1.ServiceInstance, extra ...string) (bs []*v1alpha1.ServiceBinding, unseen []string, err error) {
	bs, unseen, _, err = ListConsumersUnreadable(ctx, st, inst, extra...)
	return bs, unseen, err
}

// ListConsumersUnreadable is ListConsumers, also returning the ConfigMaps it found
// labelled as bindings of inst that hold no readable record (store.Unreadable): anyone
// who may write a ConfigMap can write one, so it stops no listing and counts as a
// consumer of nothing.
func ListConsumersUnreadable(ctx context.Context, st *store.Store, inst *v1alpha1.ServiceInstance, extra ...string) (bs []*v1alpha1.ServiceBinding, unseen []string, bad []*store.Error, err error) {
	f := store.Filter{Instance: inst.Name, InstanceNamespace: inst.Namespace}
	bs, err = ReadableBindings(ctx, st, "", f, &bad)
	if err == nil || !store.IsForbidden(err) {
		return bs, nil, bad, err
	}
	bs = nil
	namespaces := slices.Clone(inst.Spec.SharedWith)
	for _, ns := range extra {
		if !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	for _, ns := range namespaces {
		items, err := ReadableBindings(ctx, st, ns, f, &bad)
		if store.IsForbidden(err) {
			unseen = append(unseen, ns)
			continue
		}
		if err != nil {
			return nil, nil, bad, err
		}
		bs = append(bs, items...)
	}
	return bs, unseen, bad, nil
}
