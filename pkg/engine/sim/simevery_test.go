package sim

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// staleSvcatInstance reports an instance record made again by "migrate svcat" from a
// svcat instance whose id was deprovisioned since (deletedOnce): a user deleted the
// migrated record (kubectl delete of its ConfigMap) while svcat's old objects were kept
// (a binding of it not migrated yet, no --cleanup), reconcile deprovisioned it, and a
// later run made the record again from svcat's word. The broker holds nothing under its
// id, so a call for it (an update, the maintainer's upgrade) is answered "no such
// instance" for ever; it waits for a person ("deprovision --abandon"), as the binding
// of staleSvcatBinding does. Only while it is not being deleted: a deletion's DELETE is
// answered gone and settles it.
func (w *world) staleSvcatInstance(x *v1alpha1.ServiceInstance) bool {
	if !w.migrateOn || x.DeletionTimestamp != nil || x.Annotations[store.AnnotationMigratedFrom] == "" {
		return false
	}
	for _, o := range w.migration.objects {
		if o.kind != "ServiceInstance" || o.ns != x.Namespace || o.name != x.Name || x.Annotations[store.AnnotationMigratedFrom] != o.origin() {
			continue
		}
		if x.Spec.ExternalID != o.id || !w.deletedOnce(o.id) {
			return false
		}
		_, held := w.ledger.Instance(o.id)
		return !held
	}
	return false
}

// bindsStaleSvcatInstance reports a binding of an instance that staleSvcatInstance
// reports, not bound: the broker holds no instance for its bind, which is answered "no
// such instance" for ever. It waits for a person with its instance.
func (w *world) bindsStaleSvcatInstance(b *v1alpha1.ServiceBinding) bool {
	if !w.migrateOn || b.Status.Bound != nil {
		return false
	}
	ns, name := b.InstanceRef()
	x, err := w.checker.Instances().Get(context.Background(), ns, name)
	return err == nil && w.staleSvcatInstance(x)
}
