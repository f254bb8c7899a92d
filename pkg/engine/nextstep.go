package engine

import (
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Actions a NextStep names.
const (
	NextPoll            = "poll the operation"
	NextResend          = "re-send the interrupted call"
	NextDeprovision     = "deprovision"
	NextMitigate        = "orphan mitigation (deprovision)"
	NextRemoveFinalizer = "remove the finalizer (never provisioned)"
	NextProvision       = "provision"
	NextUpdateOrSettle  = "update if the spec changed, else mark ready"
	NextNothing         = "nothing (needs the user)"
)

// NextStep is what StepInstance would do with a record now, found without calling a
// broker or writing anything: reconcile uses it to leave records that are not due alone
// and to say what --dry-run would do.
type NextStep struct {
	// Action is one of the Next* constants.
	Action string
	// At is when the step is due; zero means now.
	At time.Time
	// ClaimedBy names another driver holding a live claim (the step waits until At).
	ClaimedBy string
	// NeedsUser: a terminal failure; no step does anything until the spec changes.
	NeedsUser bool
}

// Due reports whether the step may be taken at now.
func (n NextStep) Due(now time.Time) bool { return !n.NeedsUser && !now.Before(n.At) }

// NextStep says what StepInstance would do with inst, in StepInstance's order.
func (e *Engine) NextStep(inst *v1alpha1.ServiceInstance) NextStep {
	return nextStep(e, instanceSteps{e}, inst)
}

// nextFresh says what instanceSteps.fresh would do with inst.
func (instanceSteps) nextFresh(inst *v1alpha1.ServiceInstance, deleting bool, at func(string) time.Time) NextStep {
	if deleting {
		if len(instanceIDsAtBroker(inst)) == 0 {
			return NextStep{Action: NextRemoveFinalizer}
		}
		return NextStep{Action: NextDeprovision, At: at(actionDeprovision)}
	}
	if inst.Status.OrphanMitigation != nil {
		return NextStep{Action: NextMitigate, At: at(actionOrphanMitigation)}
	}
	if inst.Status.Provisioned == nil {
		if terminallyFailed(inst) {
			return NextStep{Action: NextNothing, NeedsUser: true}
		}
		return NextStep{Action: NextProvision, At: at(actionProvision)}
	}
	if rebindDue(inst) && inst.Spec.PlanID == inst.Status.Provisioned.PlanID {
		return NextStep{Action: NextRebind}
	}
	return NextStep{Action: NextUpdateOrSettle, At: at(actionUpdate)}
}

// Actions of a binding's NextStep.
const (
	NextBind    = "bind"
	NextUnbind  = "unbind"
	NextRetire  = "unbind the credentials a rotation replaced"
	NextProject = "project the Secret into workloads, then mark ready"
	NextRelease = "remove the finalizer (never bound)"
)

// NextBindingStep says what StepBinding would do with b, in StepBinding's order, like
// NextStep.
func (e *Engine) NextBindingStep(b *v1alpha1.ServiceBinding) NextStep {
	return nextStep(e, bindingSteps{e}, b)
}

// nextFresh says what bindingSteps.fresh would do with b.
func (bindingSteps) nextFresh(b *v1alpha1.ServiceBinding, deleting bool, at func(string) time.Time) NextStep {
	st := b.Status
	switch {
	case deleting && len(bindingIDsAtBroker(b)) == 0:
		return NextStep{Action: NextRelease}
	case deleting:
		return NextStep{Action: NextUnbind, At: at(actionUnbind)}
	case st.OrphanMitigation != nil:
		return NextStep{Action: NextMitigate, At: at(actionOrphanMitigation)}
	case len(st.Retired) > 0:
		return NextStep{Action: NextRetire, At: at(actionUnbind)}
	case st.Bound == nil || st.Bound.BindingID != b.CurrentExternalID():
		if terminallyFailed(b) {
			return NextStep{Action: NextNothing, NeedsUser: true}
		}
		return NextStep{Action: NextBind, At: at(actionBind)}
	}
	return NextStep{Action: NextProject, At: at(actionBind)}
}
