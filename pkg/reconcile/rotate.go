package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// rotate starts the rotation of a binding's credentials whose renew_before has passed
// (--rotate-due); false when the item is final (a dry run, a failure).
func (r *Reconciler) rotate(ctx context.Context, t *task, dryRun bool) bool {
	b, ok := t.rec.object().(*v1alpha1.ServiceBinding)
	if !ok || b.DeletionTimestamp != nil || !engine.RotationDue(b, r.now()) {
		return true // rotated meanwhile, or being unbound
	}
	if engine.CheckBindingChangeable(b) != nil || b.Status.Bound.BindingID != b.CurrentExternalID() {
		// An operation (maybe a rotation) is under way: it is driven first, and a
		// rotation still due after it is the next run's.
		t.rotationBlocked = true
		return true
	}
	if dryRun {
		t.it.Outcome, t.it.Detail, t.done = WouldDrive, "rotate the credentials: "+rotationReason(b), true
		return false
	}
	// The binding as it is when the rotation is written: another driver (a second
	// replica, a user's "bind --rotate") may have rotated it, or begun an operation on
	// it, since it was read. It is then driven as it is, and not rotated again.
	id := b.Status.Bound.BindingID
	_, err := r.Engine.RotateScheduled(ctx, b.Namespace, b.Name, func(cur *v1alpha1.ServiceBinding) error {
		if engine.CheckBindingChangeable(cur) != nil || cur.Status.Bound == nil || cur.Status.Bound.BindingID != id ||
			cur.CurrentExternalID() != id || !engine.RotationDue(cur, r.now()) {
			return errChangedMeanwhile
		}
		return nil
	})
	if errors.Is(err, errChangedMeanwhile) {
		t.rotationBlocked = true
		return r.read(ctx, t)
	}
	if err != nil {
		if ctx.Err() != nil {
			t.it.Outcome, t.it.Detail, t.done = InProgress, "interrupted; left pending", true
			return false
		}
		t.it, t.done = failed(t.it, fmt.Errorf("cannot rotate the credentials: %w", err)), true
		return false
	}
	t.it.Rotated = true
	return r.read(ctx, t)
}

// errChangedMeanwhile: the binding changed between the run's read of it and its rotation.
var errChangedMeanwhile = errors.New("the binding changed since it was read")

func rotationReason(b *v1alpha1.ServiceBinding) string {
	return "the broker's renew_before passed at " + b.Status.Bound.RenewBefore.UTC().Format(time.RFC3339)
}

// settled is the item of a record that settled. A binding whose rotation is due and
// was not done in this run says so.
func (r *Reconciler) settled(t *task, o Options) Item {
	it := t.it
	it.Outcome, it.Detail = Done, "ready"
	if b, ok := t.rec.object().(*v1alpha1.ServiceBinding); ok && engine.RotationDue(b, r.now()) {
		it.Outcome = Waiting
		it.Detail = "ready; rotation due: " + rotationReason(b)
		if o.RotateDue && t.rotationBlocked {
			it.Detail += " (an operation was in flight; the next run rotates it)"
		} else if !o.RotateDue {
			it.Detail += ` ("reconcile --rotate-due" rotates it)`
		}
	}
	return it
}
