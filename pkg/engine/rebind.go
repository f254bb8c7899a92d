package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Bindings that follow an instance update ("update --rebind", spec.rebindOnUpdate).
//
// The intent is status.rebind of the instance, written before any broker call: by the
// update verb in the same write as the spec it changes ("update --rebind"), or by the
// update step in the write-ahead of the update it sends (spec.rebindOnUpdate). It keeps
// the instance pending (HasPendingWork), so reconcile finishes what an interrupted verb
// started. Once the instance settled the generation it follows, each step of the
// instance (stepRebind) moves the rotation on: it names the binding it rotates next in
// status.rebind.current (a write of the instance), starts that binding's rotation by
// the one rotation path there is (startRotation, keeping the binding's author, as a
// scheduled rotation does), and drives the binding with its own steps: the new id is
// bound, the Secret gets the new credentials in one write, the workloads projected with
// it see them, and only then is the old id unbound. The next binding is taken once the
// old id is gone at the broker, or the rotation failed; a failed rotation leaves the
// binding's Secret and its old id as they were.

// ConditionBindingsRebound is the instance's condition saying how its last rebind went.
const ConditionBindingsRebound = "BindingsRebound"

// Reasons of the rebind's conditions and Events.
const (
	ReasonBindingsRebound       = "BindingsRebound"
	ReasonBindingRotated        = "BindingRotated"
	ReasonBindingRotationFailed = "BindingRotationFailed"
	ReasonRebindSkipped         = "RebindSkipped"
	ReasonRebindRequested       = "RebindRequested"
)

// RebindOnce is the reason of a rebind asked for by "update --rebind".
const RebindOnce = `"update --rebind"`

// NextRebind is the action of an instance's step that rotates its bindings.
const NextRebind = "rotate the bindings after the update"

// ParseRebindPolicy reads a --rebind value (never, always, plan-change, in any case,
// or the spec's own spelling); false when it is none of them.
func ParseRebindPolicy(s string) (v1alpha1.RebindPolicy, bool) {
	norm := strings.ReplaceAll(strings.ToLower(s), "-", "")
	for _, p := range v1alpha1.RebindPolicies {
		if strings.ToLower(string(p)) == norm {
			return p, true
		}
	}
	return "", false
}

// planRebind records in inst, about to be written ahead with an update, the rebind
// that spec.rebindOnUpdate asks for after it: always, or only when the update changes
// the plan (from plan "from" to plan "to"). A rebind already recorded ("update
// --rebind") follows this update instead.
func planRebind(inst *v1alpha1.ServiceInstance, planChange bool, from, to string, now time.Time) {
	if rb := inst.Status.Rebind; rb != nil {
		rb.Generation = max(rb.Generation, inst.Generation)
		rb.AfterUpdate = true
		restartRebind(rb)
		return
	}
	var reason string
	switch inst.Spec.RebindOnUpdate {
	case v1alpha1.RebindAlways:
		reason = "spec.rebindOnUpdate is Always"
	case v1alpha1.RebindPlanChange:
		if !planChange {
			return
		}
		reason = fmt.Sprintf("spec.rebindOnUpdate is PlanChange and the plan changed from %q to %q", from, to)
	default:
		return
	}
	inst.Status.Rebind = &v1alpha1.RebindStatus{Generation: inst.Generation, Reason: reason, AfterUpdate: true, RequestedAt: metav1.NewTime(now)}
}

// restartRebind starts rb over, for an update sent to the broker while it was under way:
// the bindings it rotated (or is rotating) got credentials before that update, so each
// is rotated again once it settled. A rotation under way goes on by the binding's own
// steps, and the binding is taken again once it ended (see nextRebind).
func restartRebind(rb *v1alpha1.RebindStatus) {
	rb.Current, rb.Rotated, rb.Failed, rb.Gone = nil, nil, nil, nil
}

// rotatingOnItsOwn reports a binding whose rotation to a new id is under way, started
// by something else than the rebind (bind --rotate, a scheduled rotation, an earlier
// rebind): its new id may have been bound before the update the rebind follows, so it
// is taken once that rotation ended. One whose rotation failed for good is taken at
// once (its rotation is recorded as failed).
func rotatingOnItsOwn(b *v1alpha1.ServiceBinding) bool {
	return b.Status.Bound != nil && b.Status.Bound.BindingID != b.CurrentExternalID() && !terminallyFailed(b)
}

// dropRebindAfterRefusal removes from x, whose update the broker refused for good, a
// rebind that was to follow that update: the broker holds the instance as before, so
// its bindings' credentials stand.
func dropRebindAfterRefusal(x *v1alpha1.ServiceInstance, now time.Time) {
	rb := x.Status.Rebind
	if rb == nil || !rb.AfterUpdate {
		return
	}
	x.Status.Rebind = nil
	setCondition(x, ConditionBindingsRebound, metav1.ConditionFalse, ReasonRebindSkipped,
		fmt.Sprintf("no binding was rotated (asked for by %s): the update was refused, so the broker holds the instance as before and the bindings keep their credentials", rb.Reason), now)
}

// dropRebindOfUnprovisioned removes from inst, failed for good before the broker ever
// provisioned it, the rebind it was to follow: that rebind waits for the instance to
// settle its generation, which a refused provision never does, and the broker holds no
// credentials of it to rotate. It would otherwise be left asked for, and unanswered,
// until the spec changed.
func dropRebindOfUnprovisioned(inst *v1alpha1.ServiceInstance, now time.Time) {
	rb := inst.Status.Rebind
	if rb == nil || inst.Status.Provisioned != nil {
		return
	}
	inst.Status.Rebind = nil
	setCondition(inst, ConditionBindingsRebound, metav1.ConditionFalse, ReasonRebindSkipped,
		fmt.Sprintf("no binding was rotated (asked for by %s): the instance's provision failed, so the broker holds no instance whose bindings could be rotated", rb.Reason), now)
}

// rebindDue reports whether inst, settled for the generation its rebind follows, has
// bindings to rotate now.
func rebindDue(inst *v1alpha1.ServiceInstance) bool {
	rb := inst.Status.Rebind
	return rb != nil && inst.DeletionTimestamp == nil && inst.Status.InFlight == nil && inst.Status.Retry == nil &&
		inst.Status.ObservedGeneration == inst.Generation && inst.Status.Phase == v1alpha1.PhaseReady &&
		min(rb.Generation, inst.Generation) <= inst.Status.ObservedGeneration
}

// rebindCandidate reports whether b is a binding a rebind of inst rotates: one of inst's
// own namespace or of a namespace inst lets bind now (the cross-namespace rule: a
// namespace whose grant was withdrawn is being revoked, not rotated), bound, and not
// being deleted.
func rebindCandidate(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	if b.DeletionTimestamp != nil || b.Status.Bound == nil || b.Status.Bound.BindingID == "" || released(b) {
		// (Released to another cluster, op_release.go: its id is that cluster's.)
		return false
	}
	if ns, name := b.InstanceRef(); ns != inst.Namespace || name != inst.Name {
		return false
	}
	return b.Namespace == inst.Namespace || authority.Lets(inst, b.Namespace)
}

func bindingKey(b *v1alpha1.ServiceBinding) string { return b.Namespace + "/" + b.Name }

// rotation is where a binding's rotation from an old id stands.
type rotation int

const (
	rotationNotStarted rotation = iota
	rotationUnderWay
	rotationDone
	rotationFailed
	rotationGone
)

// rotationOf says where b's rotation away from id "from" stands (cur names the binding
// the rebind rotates).
func rotationOf(b *v1alpha1.ServiceBinding, cur *v1alpha1.RebindTarget) rotation {
	if b == nil || string(b.UID) != cur.UID || b.DeletionTimestamp != nil || released(b) {
		return rotationGone
	}
	st := b.Status
	id := b.CurrentExternalID()
	boundNow := st.Bound != nil && st.Bound.BindingID == id
	switch {
	case id == cur.FromID && boundNow && st.InFlight == nil:
		return rotationNotStarted
	case id != cur.FromID && boundNow && st.InFlight == nil && !slices.Contains(st.Retired, cur.FromID):
		return rotationDone
	case !boundNow && st.InFlight == nil && st.Retry == nil && st.OrphanMitigation == nil && terminallyFailed(b):
		// The bind of the new id stopped with no retry to come: the Secret and the old
		// id are as they were. (A new id whose bind was not sent yet, a rotation just
		// started by another driver or one killed before its write-ahead, is under way:
		// the binding's next step binds it.)
		return rotationFailed
	}
	return rotationUnderWay
}

// stepRebind takes the rebind of inst, settled, on (see the top of this file): it
// picks the next binding, starts and drives the rotation of the current one, records
// how it ended, and goes on with the next, until a rotation has to wait (an async bind
// or unbind, a retry) or none is left, which ends the rebind. Each binding is done
// before the next is picked, and every change of course is written to the instance
// first, so that the next driver carries on where this one stopped.
func (e instanceSteps) stepRebind(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	for {
		var r Result
		var err error
		if inst.Status.Rebind.Current == nil {
			r, err = e.nextRebind(ctx, inst)
		} else {
			r, err = e.rotateCurrent(ctx, inst)
		}
		if err != nil || r.State != StateWaiting || r.RequeueAfter > 0 || r.Instance == nil ||
			r.Instance.Status.Rebind == nil || !rebindDue(r.Instance) || ctx.Err() != nil {
			return r, err
		}
		inst = r.Instance
	}
}

// rotateCurrent starts and drives the rotation of the binding status.rebind.current
// names, and records how it ended; a rotation under way is left waiting.
func (e instanceSteps) rotateCurrent(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	cur := inst.Status.Rebind.Current
	b, err := e.cfg.Store.Bindings().Get(ctx, cur.Namespace, cur.Name)
	switch {
	case store.IsNotFound(err):
		b = nil
	case store.IsForbidden(err):
		return e.rebindLeftToReconcile(inst, cur.Namespace), nil
	case err != nil:
		return Result{}, err
	}
	state := rotationOf(b, cur)
	if b != nil && !rebindCandidate(inst, b) {
		// Not a binding the instance reaches (the cross-namespace rule), whatever the
		// status names: never touched.
		state = rotationGone
	}
	if state == rotationNotStarted {
		moved, err := e.startRebindRotation(ctx, cur)
		if err != nil {
			if store.IsForbidden(err) {
				return e.rebindLeftToReconcile(inst, cur.Namespace), nil
			}
			if store.IsNotFound(err) {
				return e.rebindOne(ctx, inst, rotationGone, nil, "")
			}
			return Result{}, err
		}
		if moved != nil {
			// Another driver of the rebind started this rotation (or the binding changed)
			// since it was read: where it stands now decides, and it is never started
			// twice.
			if state = rotationOf(moved, cur); state == rotationNotStarted {
				return withRecord(Result{State: StateWaiting, RequeueAfter: max(e.cfg.PollInterval, time.Second),
					Message: fmt.Sprintf("binding %s/%s changed while its rotation was being started", cur.Namespace, cur.Name)}, inst), nil
			}
			b = moved
		}
	}
	if state == rotationNotStarted || state == rotationUnderWay {
		r, err := e.DriveBinding(ctx, cur.Namespace, cur.Name, DriveOptions{StopWhenWaiting: true})
		if err != nil {
			if ctx.Err() != nil {
				return interrupted(inst, ctx.Err())
			}
			if store.IsForbidden(err) {
				return e.rebindLeftToReconcile(inst, cur.Namespace), nil
			}
			return Result{}, err
		}
		b = r.Binding
		if r.State == StateDeleted {
			b = nil
		}
		if state = rotationOf(b, cur); state == rotationUnderWay {
			if r.State == StateNeedsUser || r.NeedsPerson || refusedAtTheLimit(b) {
				// Stopped, or refused in a way only a person can lift (every place under
				// the instance's limit taken, say): the binding keeps its old id and
				// credentials, and its own rotation goes on once that changes; the rebind
				// does not wait for a person, nor for that rotation's retries, each refused
				// the same until a person acts.
				state = rotationFailed
			} else {
				wait := max(r.RequeueAfter, e.cfg.PollInterval, time.Second)
				return withRecord(Result{State: StateWaiting, RequeueAfter: wait,
					Message: fmt.Sprintf("rotating binding %s/%s (%s): %s", cur.Namespace, cur.Name, inst.Status.Rebind.Reason, r.Message)}, inst), nil
			}
		}
	}
	msg := ""
	if state == rotationFailed {
		msg = "the rotation stopped"
		if b != nil {
			if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
				msg = c.Message
			} else if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady); c != nil {
				msg = c.Message
			}
		}
	}
	return e.rebindOne(ctx, inst, state, b, msg)
}

// errRebindMoved: the binding a rebind names is no longer bound under the id it rotates
// from, as it was read (another driver of the rebind started the rotation meanwhile).
var errRebindMoved = errors.New("the binding moved on since it was read")

// startRebindRotation starts the rotation of the binding cur names, as startRotation
// does, only while that binding (its uid) is still bound under cur.FromID with nothing
// in flight: two drivers of one rebind that both read it before either started never
// rotate it twice. moved is the binding as it is now when it had moved on (nothing was
// written then).
func (e instanceSteps) startRebindRotation(ctx context.Context, cur *v1alpha1.RebindTarget) (moved *v1alpha1.ServiceBinding, err error) {
	b, err := e.cfg.Store.Bindings().UpdateWithRetry(ctx, cur.Namespace, cur.Name, func(b *v1alpha1.ServiceBinding) error {
		if string(b.UID) != cur.UID || b.DeletionTimestamp != nil || b.Status.InFlight != nil || released(b) ||
			b.CurrentExternalID() != cur.FromID || b.Status.Bound == nil || b.Status.Bound.BindingID != cur.FromID {
			moved = b.DeepCopy()
			return errRebindMoved
		}
		b.Status.Predecessor = &v1alpha1.BindingReference{Name: b.Name, ExternalID: b.CurrentExternalID(), PlanID: b.Status.Bound.PlanID}
		b.Status.ExternalID = e.recordBoundID(b.UID)
		return nil
	})
	if errors.Is(err, errRebindMoved) {
		return moved, nil
	}
	if err != nil {
		return nil, err
	}
	ev := NewEvent(cur.Namespace, store.ConfigMapName(v1alpha1.KindServiceBinding, cur.Name), EventNormal, "RotationRequested", "Rotation",
		"new credentials are to be bound under a new binding id; the replaced ones are unbound once the Secret holds the new ones")
	ev.UID = b.GetUID()
	e.event(ctx, ev)
	return nil, nil
}

// rebindLeftToReconcile is the step of a rebind whose driver may not read or write the
// bindings of namespace ns: reconcile, which may, rotates them.
func (e instanceSteps) rebindLeftToReconcile(inst *v1alpha1.ServiceInstance, ns string) Result {
	return withRecord(Result{State: StateWaiting, RequeueAfter: e.cfg.PollInterval,
		Message: fmt.Sprintf("you may not change the bindings of namespace %q: reconcile rotates them", ns)}, inst)
}

// nextRebind names the next binding to rotate in inst's status (write-ahead of its
// rotation), or ends the rebind when none is left.
func (e instanceSteps) nextRebind(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	rb := inst.Status.Rebind
	listed, unseen, err := listBindingsOf(ctx, e.cfg.Store, inst)
	if err != nil {
		return Result{}, err
	}
	done := func(k string) bool {
		return slices.Contains(rb.Rotated, k) || slices.Contains(rb.Failed, k) || slices.Contains(rb.Gone, k)
	}
	var next, busy *v1alpha1.ServiceBinding
	for _, b := range listed {
		if !rebindCandidate(inst, b) || done(bindingKey(b)) {
			continue
		}
		if rotatingOnItsOwn(b) {
			if busy == nil || bindingKey(b) < bindingKey(busy) {
				busy = b
			}
			continue
		}
		if next == nil || bindingKey(b) < bindingKey(next) {
			next = b
		}
	}
	if next == nil && busy != nil {
		// That rotation is driven on here as its own steps would (reconcile drives it
		// too), and the binding is taken once it ended.
		msg := fmt.Sprintf("binding %s is being rotated (%s): it is rotated again once that rotation ended", bindingKey(busy), rb.Reason)
		// It waits as long as that binding waits (a retry's backoff), not a poll
		// interval: a run by hand would otherwise look at it again and again.
		wait := max(e.cfg.PollInterval, time.Second)
		r, err := e.DriveBinding(ctx, busy.Namespace, busy.Name, DriveOptions{StopWhenWaiting: true})
		if err == nil && r.State == StateWaiting {
			wait = max(wait, r.RequeueAfter)
		}
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return interrupted(inst, ctx.Err())
			case store.IsForbidden(err):
				return e.rebindLeftToReconcile(inst, busy.Namespace), nil
			case !store.IsNotFound(err):
				return Result{}, err
			}
		}
		if err != nil || r.Binding == nil || !rotatingOnItsOwn(r.Binding) || !(r.State == StateNeedsUser || r.NeedsPerson || refusedAtTheLimit(r.Binding)) {
			return withRecord(Result{State: StateWaiting, RequeueAfter: wait, Message: msg}, inst), nil
		}
		// That rotation stopped, or was refused in a way only a person can lift (every
		// place under the instance's limit taken, say: a rotation an earlier rebind
		// recorded as failed goes on on its own): the rebind takes the binding as its
		// current, whose rotation is then recorded as failed (it keeps its old id and
		// credentials), rather than wait for a person for ever.
		next = r.Binding
	}
	if next == nil {
		var blind []string
		for _, ns := range unseen {
			if ns == inst.Namespace || authority.Lets(inst, ns) {
				blind = append(blind, ns)
			}
		}
		if len(blind) > 0 && !isReconcile(ctx) {
			return e.rebindLeftToReconcile(inst, strings.Join(blind, ", ")), nil
		}
		if len(blind) > 0 {
			// Reconcile was refused the list too (an admission refusal, a role being
			// changed): the rebind never ends over bindings it did not see; it lists
			// them again.
			return withRecord(Result{State: StateWaiting, RequeueAfter: max(e.cfg.PollInterval, time.Second),
				Message: fmt.Sprintf("cannot list the bindings of namespace %q to rotate them (%s): the rebind goes on once they can be listed (reconcile needs to list ConfigMaps there)",
					strings.Join(blind, ", "), rb.Reason)}, inst), nil
		}
		return e.endRebind(ctx, inst)
	}
	x := inst.DeepCopy()
	from := next.Status.Bound.BindingID
	x.Status.Rebind.Current = &v1alpha1.RebindTarget{Namespace: next.Namespace, Name: next.Name, UID: string(next.UID), FromID: from}
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e.Engine, ctx, inst, nil)
	}
	if err != nil {
		return Result{}, err
	}
	return withRecord(Result{State: StateWaiting, Message: fmt.Sprintf("rotating binding %s (%s)", bindingKey(next), rb.Reason)}, stored), nil
}

// refusedAtTheLimit reports a binding whose last bind was refused because every place
// under its instance's limit is taken, which only a person lifts (a binding unbound, the
// limit raised); its retries look again now and then.
func refusedAtTheLimit(b *v1alpha1.ServiceBinding) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ReasonRefusedLimitReached
}

// rebindOne records how the rotation of the current binding ended, with an Event on the
// instance (and on the binding when it failed), and clears status.rebind.current.
func (e instanceSteps) rebindOne(ctx context.Context, inst *v1alpha1.ServiceInstance, state rotation, b *v1alpha1.ServiceBinding, msg string) (Result, error) {
	x := inst.DeepCopy()
	rb := x.Status.Rebind
	cur := rb.Current
	key := cur.Namespace + "/" + cur.Name
	var events []Event
	instEvent := func(typ, reason, note string) {
		ev := NewEvent(inst.Namespace, store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name), typ, reason, "Rebind", note)
		ev.UID = inst.GetUID()
		events = append(events, ev)
	}
	switch state {
	case rotationDone:
		rb.Rotated = append(rb.Rotated, key)
		secret := ""
		if b != nil {
			secret = fmt.Sprintf(": new credentials in Secret %q under binding id %s", b.Spec.SecretName, b.CurrentExternalID())
		}
		instEvent(EventNormal, ReasonBindingRotated, fmt.Sprintf("binding %s rotated after the update (%s)%s; its old binding id %s is unbound", key, rb.Reason, secret, cur.FromID))
	case rotationFailed:
		rb.Failed = append(rb.Failed, key)
		note := fmt.Sprintf("the rotation of binding %s after the update (%s) failed: %s; it keeps its old credentials (binding id %s) in its Secret", key, rb.Reason, msg, cur.FromID)
		instEvent(EventWarning, ReasonBindingRotationFailed, note)
		if b != nil {
			ev := NewEvent(b.Namespace, store.ConfigMapName(v1alpha1.KindServiceBinding, b.Name), EventWarning, ReasonBindingRotationFailed, "Rebind",
				fmt.Sprintf("the rotation that follows the update of instance %s/%s failed: %s; the Secret %q keeps the old credentials (binding id %s)", inst.Namespace, inst.Name, msg, b.Spec.SecretName, cur.FromID))
			ev.UID = b.GetUID()
			events = append(events, ev)
		}
	default:
		rb.Gone = append(rb.Gone, key)
	}
	rb.Current = nil
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e.Engine, ctx, inst, nil)
	}
	if err != nil {
		return Result{}, err
	}
	for _, ev := range events {
		e.event(ctx, ev)
	}
	return withRecord(Result{State: StateWaiting, Message: fmt.Sprintf("binding %s done; next binding", key)}, stored), nil
}

// endRebind removes status.rebind from inst, saying in its BindingsRebound condition
// and an Event what was rotated, what failed, and why.
func (e instanceSteps) endRebind(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, error) {
	x := inst.DeepCopy()
	rb := x.Status.Rebind
	x.Status.Rebind = nil
	now := e.now()
	status, typ := metav1.ConditionTrue, EventNormal
	var msg string
	switch {
	case len(rb.Rotated)+len(rb.Failed) == 0:
		msg = fmt.Sprintf("no binding to rotate (asked for by %s)", rb.Reason)
	default:
		msg = fmt.Sprintf("bindings rotated after the update (%s): %s", rb.Reason, listOrNone(rb.Rotated))
	}
	if len(rb.Failed) > 0 {
		status, typ = metav1.ConditionFalse, EventWarning
		msg += fmt.Sprintf("; rotation failed, old credentials kept: %s", strings.Join(rb.Failed, ", "))
	}
	reason := ReasonBindingsRebound
	if status == metav1.ConditionFalse {
		reason = ReasonBindingRotationFailed
	}
	setCondition(x, ConditionBindingsRebound, status, reason, msg, now)
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e.Engine, ctx, inst, nil)
	}
	if err != nil {
		return Result{}, err
	}
	ev := NewEvent(inst.Namespace, store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name), typ, reason, "Rebind", msg)
	ev.UID = inst.GetUID()
	e.event(ctx, ev)
	return resultOf(e.Engine, stored), nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// RebindOutcome is what the BindingsRebound condition of inst says, for a verb to
// print; empty when it has none for the instance's generation.
func RebindOutcome(inst *v1alpha1.ServiceInstance) (msg string, ok bool) {
	if inst == nil {
		return "", false
	}
	c := meta.FindStatusCondition(inst.Status.Conditions, ConditionBindingsRebound)
	if c == nil {
		return "", false
	}
	return c.Message, c.Status == metav1.ConditionTrue
}

// boundPlanOf is the plan the broker bound id of b under, when the record knows it (the
// binding's current id, or the one a rotation replaces): an unbind names that plan,
// not the one the instance has moved to since. Empty for a binding bound by an earlier
// release, whose unbind names the instance's plan.
func boundPlanOf(b *v1alpha1.ServiceBinding, id string) string {
	if bs := b.Status.Bound; bs != nil && bs.BindingID == id {
		return bs.PlanID
	}
	if p := b.Status.Predecessor; p != nil && p.ExternalID == id {
		return p.PlanID
	}
	return ""
}
