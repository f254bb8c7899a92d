package engine

import (
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// A broker answers 404 to a call naming an instance it does not hold: an update's PATCH
// or a bind's PUT for an instance it never had or no longer has (a record "migrate
// svcat" made again from svcat's objects after the instance was deprovisioned, an
// instance the broker lost with its state). The engine does not take a 404 for "gone"
// (a broker that lost its state for a while, or a URL that reaches another service,
// answers it too): the call is retried with backoff, as every other client error. The
// message says what the 404 means and the command that ends it, so that the condition
// and "describe" show the way out.

// instanceNotFoundNote is what the message of a call about inst under id, answered
// callErr, adds: "" but for a 404.
func instanceNotFoundNote(inst *v1alpha1.ServiceInstance, id string, callErr error) string {
	if !osb.IsNotFoundError(callErr) {
		return ""
	}
	if inst.DeletionTimestamp != nil {
		// removalFailed names "deprovision --abandon".
		return fmt.Sprintf("; the broker may hold no instance under id %s, but a 404 is not the 410 Gone that OSB answers for that, which would end the deletion", id)
	}
	return fmt.Sprintf("; the broker holds no instance under id %s (a record migrated again from svcat's objects after its deprovision, or an instance the broker lost): to end this, remove the record with %s (the broker answers its DELETE gone) or drop it without the broker with %s",
		id, hint.Quoted(inst.Namespace, "deprovision", inst.Name), hint.Quoted(inst.Namespace, "deprovision", inst.Name, "--abandon"))
}

// bindingNotFoundNote is what the message of a call about b under op, answered callErr,
// adds: "" but for a 404.
func bindingNotFoundNote(b *v1alpha1.ServiceBinding, op *v1alpha1.Operation, callErr error) string {
	if !osb.IsNotFoundError(callErr) {
		return ""
	}
	if op.Type == v1alpha1.OperationUnbind {
		// removalFailed names "unbind --abandon" for a deletion.
		return fmt.Sprintf("; the broker may hold no binding under id %s (or no instance under id %s), but a 404 is not the 410 Gone that OSB answers for that, which would end the deletion", op.BindingID, op.InstanceID)
	}
	instNS, inst := b.InstanceRef()
	return fmt.Sprintf("; the broker holds no instance under id %s (instance %q: migrated again from svcat's objects after its deprovision, or lost by the broker): to end this, remove the instance with %s, which removes this binding first, or drop this binding without the broker with %s",
		op.InstanceID, inst, hint.Quoted(instNS, "deprovision", inst), hint.Quoted(b.Namespace, "unbind", b.Name, "--abandon"))
}
