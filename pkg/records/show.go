package records

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/graph"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// What get, describe, marketplace and the watches read beyond the records themselves:
// the marketplace's view of the classes, the access rules, the Secrets records own, and
// the ConfigMaps the records are kept in.

// Lease is a claim on a record: who drives it, until when (see store.Lease).
type Lease = store.Lease

// LeaseOf returns the claim on a record, if it has one.
func LeaseOf(obj metav1.Object) (Lease, bool) { return store.LeaseOf(obj) }

// IsNotOwned reports whether err is a Secret the record does not own, so it is not read.
var IsNotOwned = store.IsNotOwned

// OwnedBy reports whether secret is the credentials Secret of binding b.
func OwnedBy(secret *corev1.Secret, b *v1alpha1.ServiceBinding) bool { return store.OwnedBy(secret, b) }

// ConfigMapName is the name of the ConfigMap that keeps the record of kind k named name
// (the object the record's events are about).
func ConfigMapName(k, name string) string { return store.ConfigMapName(k, name) }

// Selector is the label selector of the ConfigMaps keeping the records of kind k that f
// selects, for a watch of them.
func Selector(k string, f Filter) (string, error) { return store.Selector(k, f) }

// DecodeRecord reads the record a ConfigMap keeps; it is an error IsCorrupt says so of
// when the ConfigMap does not hold a readable record.
func DecodeRecord(cm *corev1.ConfigMap) (v1alpha1.Record, error) { return store.Decode(cm) }

// OwnedSecret reads the Secret name of rec's namespace when rec owns it (the credentials
// of a user-provided instance); one it does not own is an error IsNotOwned says so of,
// and is not returned.
func (r *Reader) OwnedSecret(ctx context.Context, rec v1alpha1.Record, name string) (*corev1.Secret, error) {
	return r.st.ReadOwnedSecret(ctx, rec, name)
}

// MarketClasses lists the classes namespace sees (its own brokers' and the cluster
// brokers'), access rules aside, with the same partial-result rule as List.
func (r *Reader) MarketClasses(ctx context.Context, namespace string, f Filter, opts ...marketplace.Option) ([]*v1alpha1.ServiceClass, error) {
	return marketplace.ListClasses(ctx, r.st, namespace, f, opts...)
}

// Offerings lists what namespace may provision: the marketplace's classes and plans that
// the access rules let it see.
func (r *Reader) Offerings(ctx context.Context, namespace string, f marketplace.Filter, opts ...marketplace.Option) ([]marketplace.Offering, error) {
	return marketplace.List(ctx, r.st, namespace, f, opts...)
}

// ResolveOffering finds the class (and plan, when planName is given) namespace may
// provision from; its errors say why none is found (see marketplace.Resolve).
func (r *Reader) ResolveOffering(ctx context.Context, namespace, className, planName string, opts ...marketplace.Option) (*marketplace.Resolution, error) {
	return marketplace.Resolve(ctx, r.st, namespace, className, planName, opts...)
}

// AccessRules reads the catalog's access rules (none when there is no CatalogAccess
// record).
func (r *Reader) AccessRules(ctx context.Context, opts ...marketplace.Option) (marketplace.Rules, error) {
	return marketplace.LoadRules(ctx, r.st, opts...)
}

// Consumers lists the bindings other namespaces hold of inst (see ListConsumers);
// unseen names the namespaces that could not be read.
func (r *Reader) Consumers(ctx context.Context, inst *v1alpha1.ServiceInstance, extra ...string) (bs []*v1alpha1.ServiceBinding, unseen []string, err error) {
	return ListConsumers(ctx, r.st, inst, extra...)
}

// ConsumersAhead starts the list of the bindings every namespace holds of instance
// namespace/name, which needs only its name, so that it goes out with the read of the
// record; the function returned gives what Consumers gives for the record once read:
// the list started or, when the user may not list every namespace, the lists of the
// namespaces the record is shared with.
func (r *Reader) ConsumersAhead(ctx context.Context, namespace, name string) func(*v1alpha1.ServiceInstance) ([]*v1alpha1.ServiceBinding, []string, error) {
	f := store.Filter{Instance: name, InstanceNamespace: namespace}
	all := ahead.Start(ctx, func() ([]*v1alpha1.ServiceBinding, error) {
		var bad []*store.Error
		return ReadableBindings(ctx, r.st, "", f, &bad)
	})
	return func(inst *v1alpha1.ServiceInstance) ([]*v1alpha1.ServiceBinding, []string, error) {
		bs, err := all.Wait()
		if store.IsForbidden(err) || inst.Name != name || inst.Namespace != namespace {
			return ListConsumers(ctx, r.st, inst)
		}
		return bs, nil, err
	}
}

// Graph reads the instances and bindings (and, with core, the workloads using their
// Secrets) that o selects, and assembles what uses what (see graph.Build).
func (r *Reader) Graph(ctx context.Context, core kubernetes.Interface, o graph.Options) (*graph.Graph, error) {
	return graph.Build(ctx, core, r.st, o)
}

// RotationDue reports whether the broker's renew_before for the binding's credentials
// has passed.
func RotationDue(b *v1alpha1.ServiceBinding, now time.Time) bool {
	bs := b.Status.Bound
	return bs != nil && bs.RenewBefore != nil && !now.Before(bs.RenewBefore.Time)
}
