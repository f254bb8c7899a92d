package engine

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// The checks of a record's status before a step acts on it: a status is anyone's to write who
// may update the record's ConfigMap.

// ReasonRefusedInconsistentStatus: the record's status contradicts itself (an update in
// flight for an instance never provisioned, an operation of no known type, a call
// without the OSB id it is about). A status is free to write for anyone who may update
// the record's ConfigMap, so it is read as untrusted input: such a record is refused,
// visibly, and no call is made from it.
const ReasonRefusedInconsistentStatus = "RefusedInconsistentStatus"

// inconsistentStatus is the refusal of a record whose operation in flight (the part of
// the status a step acts on) cannot be what the engine wrote, or nil. fix says what the
// user does about it.
func inconsistentStatus(kind, name string, op *v1alpha1.Operation, types []v1alpha1.OperationType, why string) error {
	if op == nil {
		return nil
	}
	switch {
	case !slices.Contains(types, op.Type):
		why = fmt.Sprintf("status.inFlight has an operation of unknown type %q", op.Type)
	case op.InstanceID == "":
		why = "status.inFlight names no instance id"
	}
	if why == "" {
		return nil
	}
	return refused(ReasonRefusedInconsistentStatus,
		"%s %q has an inconsistent status (%s), which the engine never writes: nothing is sent to the broker from it; remove status.inFlight from the record's ConfigMap, or drop the record without the broker (\"kubectl catalog %s %s --abandon\")",
		kind, name, why, map[string]string{"instance": "deprovision", "binding": "unbind"}[kind], name)
}

// checkInstanceStatus refuses an instance whose operation in flight cannot be acted on.
func checkInstanceStatus(inst *v1alpha1.ServiceInstance) error {
	op := inst.Status.InFlight
	why := ""
	if op != nil && op.Type == v1alpha1.OperationUpdate && inst.Status.Provisioned == nil {
		why = "an update in flight for an instance that was never provisioned"
	}
	return inconsistentStatus("instance", inst.Name, op,
		[]v1alpha1.OperationType{v1alpha1.OperationProvision, v1alpha1.OperationUpdate, v1alpha1.OperationDeprovision}, why)
}

// checkBindingStatus refuses a binding whose operation in flight cannot be acted on.
func checkBindingStatus(b *v1alpha1.ServiceBinding) error {
	op := b.Status.InFlight
	why := ""
	if op != nil && op.BindingID == "" {
		why = "status.inFlight names no binding id"
	}
	return inconsistentStatus("binding", b.Name, op, []v1alpha1.OperationType{v1alpha1.OperationBind, v1alpha1.OperationUnbind}, why)
}

// ReasonRefusedUserProvidedChange: spec.userProvided was added to an instance a broker
// holds, or removed from a user-provided one; neither is a change an instance can make.
const ReasonRefusedUserProvidedChange = "RefusedUserProvidedChange"

// heldAtBroker reports whether inst's status says a broker may hold something of it.
func heldAtBroker(inst *v1alpha1.ServiceInstance) bool {
	st := &inst.Status
	return st.Provisioned != nil || len(st.ExternalIDs) > 0 || st.InFlight != nil || st.OrphanMitigation != nil
}

// wasUserProvided reports whether inst's status is a user-provided instance's (or the
// refusal of its change).
func wasUserProvided(inst *v1alpha1.ServiceInstance) bool {
	if heldAtBroker(inst) {
		return false
	}
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionRefused); c != nil && c.Reason == ReasonRefusedUserProvidedChange {
		return true
	}
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == ReasonUserProvided
}
