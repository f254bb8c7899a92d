package sim

import (
	"context"
	"flag"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// --abandon (-sim.abandon): the users of dev also deprovision and unbind with --abandon,
// which drops the records (an instance's with its bindings' in its namespace) without
// calling the broker: what the broker holds stays there, unknown to the catalog, as the
// user asked. The ids a record held when an abandoning process dropped it are left out of
// invariants (1), (3) and (10); every other invariant holds as before, the processes
// that race the abandon included.

var abandon = flag.Bool("sim.abandon", false, "let the users deprovision and unbind with --abandon")

// abandonTask is a task of a user of dev with --abandon, or false.
func (w *world) abandonTask(e *engine.Engine, ns, inst, bind string) (string, func(context.Context) error, bool) {
	if !*abandon || w.rng.IntN(12) > 0 {
		return "", nil, false
	}
	if w.rng.IntN(2) == 0 {
		return "deprovision --abandon " + inst, func(ctx context.Context) error {
			_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: ns, Name: inst, Abandon: true})
			return err
		}, true
	}
	return "unbind --abandon " + bind, func(ctx context.Context) error {
		_, err := e.Unbind(ctx, engine.UnbindRequest{Namespace: ns, Bindings: []string{bind}, Abandon: true})
		return err
	}, true
}

// abandoning reports whether the process that moved last runs an --abandon.
func (w *world) abandoning() bool {
	return w.last != nil && strings.Contains(w.last.task, "--abandon")
}

// abandonedID reports an id left at the broker by an --abandon: an abandoned record's,
// or a binding of an abandoned instance's.
func (w *world) abandonedID(id, instanceID string) bool {
	return w.abandoned[id] || instanceID != "" && w.abandoned[instanceID]
}

// instanceAbandoned reports a binding whose instance's record an --abandon dropped and
// that is not there again.
func (w *world) instanceAbandoned(b *v1alpha1.ServiceBinding) bool {
	ns, name := b.InstanceRef()
	if !w.abandonedRecords[ns+"/"+store.ConfigMapName(v1alpha1.KindServiceInstance, name)] {
		return false
	}
	_, err := w.checker.Instances().Get(context.Background(), ns, name)
	return store.IsNotFound(err)
}

// abandonedThenUnshared reports a binding of another namespace whose instance's record
// an --abandon dropped and that is there again (provisioned anew, under the same name)
// without sharing it with the binding's namespace: the grant went with the dropped
// record, so the engine refuses the binding (RefusedNotShared), whatever the broker
// holds of it, until the owner shares the instance again or the binding is dropped with
// "unbind --abandon". It waits for a person.
func (w *world) abandonedThenUnshared(b *v1alpha1.ServiceBinding) bool {
	ns, name := b.InstanceRef()
	if ns == b.Namespace || !w.abandonedRecords[ns+"/"+store.ConfigMapName(v1alpha1.KindServiceInstance, name)] {
		return false
	}
	inst, err := w.checker.Instances().Get(context.Background(), ns, name)
	if err != nil || slices.Contains(inst.Spec.SharedWith, b.Namespace) {
		return false
	}
	st := &b.Status.OperationStatus
	if r := st.Retry; r != nil && r.Reason == "RefusedNotShared" {
		return true
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRefused)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "RefusedNotShared"
}
