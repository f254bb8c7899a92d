package engine

import (
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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
	now := e.now()
	if l, ok := store.LeaseOf(inst); ok && l.Holder != e.cfg.Holder && l.Live(now) {
		return NextStep{Action: NextPoll, At: l.ExpiresAt, ClaimedBy: l.Holder}
	}
	at := func(action string) time.Time {
		if d := e.retryWait(inst, action); d > 0 {
			return now.Add(d)
		}
		return time.Time{}
	}
	deleting := inst.DeletionTimestamp != nil
	if op := inst.Status.InFlight; op != nil {
		if op.Async {
			n := NextStep{Action: NextPoll}
			if op.NextPollAt != nil && now.Before(op.NextPollAt.Time) {
				n.At = op.NextPollAt.Time
			}
			return n
		}
		if !deleting || op.Type == v1alpha1.OperationDeprovision {
			return NextStep{Action: NextResend, At: at(string(op.Type))}
		}
	}
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
	now := e.now()
	if l, ok := store.LeaseOf(b); ok && l.Holder != e.cfg.Holder && l.Live(now) {
		return NextStep{Action: NextPoll, At: l.ExpiresAt, ClaimedBy: l.Holder}
	}
	at := func(action string) time.Time {
		if d := e.retryWait(b, action); d > 0 {
			return now.Add(d)
		}
		return time.Time{}
	}
	deleting := b.DeletionTimestamp != nil
	st := b.Status
	if op := st.InFlight; op != nil {
		if op.Async {
			n := NextStep{Action: NextPoll}
			if op.NextPollAt != nil && now.Before(op.NextPollAt.Time) {
				n.At = op.NextPollAt.Time
			}
			return n
		}
		if !deleting || op.Type == v1alpha1.OperationUnbind {
			return NextStep{Action: NextResend, At: at(string(op.Type))}
		}
	}
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
