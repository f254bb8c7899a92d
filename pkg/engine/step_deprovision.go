package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The deprovision step: a deletion or orphan mitigation, which waits for the instance's bindings,
// and the end of an instance the broker no longer holds.

func (e instanceSteps) deprovision(ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation) (Result, error) {
	if prev == nil && inst.DeletionTimestamp != nil && ctx.Value(unownedForgottenKey{}) == nil {
		// Ids inst does not own are never sent for it: they keep its deletion waiting
		// no more.
		if ids := e.auth.UnownedIDs(ctx, inst, instanceIDsAtBroker(inst)); len(ids) > 0 {
			return e.forgetUnownedIDs(ctx, inst, ids)
		}
	}
	deleting := inst.DeletionTimestamp != nil
	mitigating := !deleting
	if deleting {
		e.auth.ReadNamespaceKeysAhead(ctx, instanceIDsAtBroker(inst), inst.Namespace)
		if res, blocked, err := e.waitForAdoptions(ctx, inst); blocked || err != nil {
			return res, err
		}
		if res, blocked, err := e.waitForBindings(ctx, inst); blocked || err != nil {
			return res, err
		}
		// Every id a provision was written ahead for stays listed until the broker
		// confirmed it gone or refused the first request naming it: with none, there
		// is nothing to delete.
		if len(instanceIDsAtBroker(inst)) == 0 {
			return release(e.Engine, ctx, inst, "deprovisioned", false)
		}
	}
	action := actionDeprovision
	if mitigating {
		action = actionOrphanMitigation
	}
	if prev == nil {
		if d := e.retryWait(inst, action); d > 0 {
			return resultOf(e.Engine, inst), nil
		}
	}
	t, err := e.target(ctx, inst)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonBrokerUnavailable, err)
	}
	// Orphan mitigation deletes the id of the failed provision, the one in use; a
	// deletion deletes every id the broker may hold, the one in use first.
	held := instanceIDsAtBroker(inst)
	id := inst.CurrentExternalID()
	if deleting && len(held) > 0 && !slices.Contains(held, id) {
		id = held[0]
	}
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationDeprovision, InstanceID: id, ServiceID: inst.Spec.ClassID,
		PlanID: brokerPlanID(inst), RequestID: e.newRequestID(), StartedAt: metav1.NewTime(e.now()),
	}
	if prev != nil && prev.Type == v1alpha1.OperationDeprovision {
		op.InstanceID, op.ServiceID, op.PlanID = prev.InstanceID, prev.ServiceID, prev.PlanID
		op.RequestID, op.StartedAt = prev.RequestID, prev.StartedAt
	}
	opts, err := e.requestOptions(ctx, inst, op.RequestID, mitigating)
	if err != nil {
		return preCallFailure(e.Engine, ctx, inst, ReasonPlatformUnavailable, err)
	}
	phase, reason, msg := v1alpha1.PhaseDeprovisioning, ReasonDeprovisionRequestInFlight, fmt.Sprintf("sending the deprovision request to broker %q", t.broker.Name)
	if len(held) > 1 {
		msg += fmt.Sprintf(" for instance id %s (the broker may hold %d ids of this instance: %s)", op.InstanceID, len(held), strings.Join(held, ", "))
	}
	if mitigating {
		phase, reason = v1alpha1.PhaseOrphanMitigation, ReasonOrphanMitigationInProgress
		msg = fmt.Sprintf("deleting at broker %q what the failed provision may have created (orphan mitigation)", t.broker.Name)
	}
	req := &osb.DeprovisionRequest{
		RequestOptions: opts, InstanceID: op.InstanceID, ServiceID: op.ServiceID, PlanID: op.PlanID, AcceptsIncomplete: true,
	}
	var resp *osb.DeprovisionResponse
	call := brokerCall{
		op: op, keepsNothing: true, broker: t.broker, osbOp: osb.OpDeprovision,
		phase: phase, reason: reason, msg: msg,
		vet: func(ctx context.Context) error { return e.auth.VetInstanceCall(ctx, inst, t, op.InstanceID, "") },
		call: func(ctx context.Context) (int, error) {
			var callErr error
			resp, callErr = t.client.Deprovision(ctx, req)
			return resp.Status(), bounded(callErr, resp, resp.Status(), "DELETE", "/v2/service_instances/"+op.InstanceID)
		},
	}
	return sendCall(e.Engine, ctx, inst, call, func(stored *v1alpha1.ServiceInstance, act osb.Action, callErr error) (Result, error) {
		if act.Result == osb.ResultSucceeded {
			return e.gone(ctx, stored, op)
		}
		outcome := osb.OutcomeOf(resp.Status(), callErr)
		return finish(e.Engine, ctx, stored, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
			if act.Poll {
				r := ReasonDeprovisionInProgress
				if mitigating {
					r = ReasonOrphanMitigationInProgress
				}
				e.accepted(x, t, resp.Operation, "", r, "the broker is deprovisioning", now)
				return
			}
			e.deleteFailed(x, act, outcome, describe(callErr, resp.Status())+instanceNotFoundNote(x, op.InstanceID, callErr), false, now)
			brokerMayWork(e.Engine, x, outcome, callErr, now)
		})
	})
}

// deleteFailed records a failed deprovision (or orphan mitigation): the broker may still
// hold the instance, so it is retried with backoff, visibly, until it succeeds or the
// user abandons the instance.
func (e instanceSteps) deleteFailed(x *v1alpha1.ServiceInstance, act osb.Action, o osb.Outcome, msg string, async bool, now time.Time) {
	if act.InstanceUnusable {
		f := false
		x.Status.Usable = &f
	}
	reason := ReasonDeprovisionCallFailed
	switch {
	case x.DeletionTimestamp == nil && async:
		reason = ReasonOrphanMitigationFailed
	case x.DeletionTimestamp == nil:
		reason = ReasonOrphanMitigationCallFailed
	case act.WaitForOtherOperation:
		reason = ReasonDeprovisionBlockedByConcurrentOperation
	case async:
		reason = ReasonDeprovisionFailed
	}
	removalFailed(e.Engine, x, reason, msg, "deprovision", now)
}

// brokerPlanID is the plan the broker has the instance on: the one provisioned, else the
// one a provision was (or is being) attempted with.
func brokerPlanID(inst *v1alpha1.ServiceInstance) string {
	switch {
	case inst.Status.Provisioned != nil:
		return inst.Status.Provisioned.PlanID
	case inst.Status.InFlight != nil && inst.Status.InFlight.PlanID != "":
		return inst.Status.InFlight.PlanID
	}
	return inst.Spec.PlanID
}

// waitForBindings marks the instance's bindings for deletion and reports whether any is
// left: an instance is never deprovisioned under a binding.
func (e instanceSteps) waitForBindings(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, bool, error) {
	// Bindings of namespaces the instance is shared with go first too, as far as this
	// user may see them (reconcile's ServiceAccount sees every namespace), and so do those
	// of the namespaces it was shared with before and of those that hold a place among its
	// consumers: a driver that may not list one of them leaves the deletion to reconcile.
	// Both lists go out together (inst, read after its deletion mark, names them); they
	// are looked at in turn.
	type listed struct {
		bs     []*v1alpha1.ServiceBinding
		unseen []string
		bad    []*store.Error
	}
	// A deletion's verb started both lists (after the mark) for its drive's first step.
	own, all, started := takeStepBindingLists(ctx, inst)
	if _, adopted := adoptionsOf(inst); adopted {
		// Lists started before this read of the instance may have missed a binding
		// adopted since (adopt_mark.go): they are made again.
		started = false
	}
	consumers := ahead.Start(ctx, func() (listed, error) {
		var l listed
		var err error
		if started {
			// Every namespace's list needs only the instance's name; when the user may
			// not make it, the namespaces the record names are listed.
			a, err := all.Wait()
			if !store.IsForbidden(err) {
				l.bs, l.bad = a.bs, a.bad
				return l, err
			}
		}
		l.bs, l.unseen, l.bad, err = listConsumers(ctx, e.cfg.Store, inst, consumerNamespaces(inst)...)
		return l, err
	})
	var bad []*store.Error
	var bs []*v1alpha1.ServiceBinding
	var err error
	if started {
		var l listedBindings
		l, err = own.Wait()
		bs, bad = l.bs, l.bad
	} else {
		bs, err = readableBindings(ctx, e.cfg.Store, inst.Namespace, store.Filter{Instance: inst.Name}, &bad)
	}
	e.reportUnreadable(ctx, inst, bad)
	if err != nil {
		return Result{}, false, err
	}
	l, err := consumers.Wait()
	e.reportUnreadable(ctx, inst, l.bad)
	others, unseen := l.bs, l.unseen
	if err != nil {
		return Result{}, false, err
	}
	// Only the bindings that count as the instance's consumers are waited for (the
	// cross-namespace rule, authority.Counts): its own namespace's, and those of a
	// namespace it grants, or granted while the broker may hold them. A record of a
	// namespace it never granted is neither waited for nor touched. A ConfigMap this
	// release cannot read (a newer release's format) that carries the catalog's finalizer
	// counts on the same terms: a release that reads it may hold a binding.
	bs, _ = authority.Counted(inst, append(bs, others...))
	var unreadable []string
	for _, se := range append(bad, l.bad...) {
		name := se.Namespace + "/" + se.Name
		if se.Namespace == inst.Namespace {
			name = se.Name
		}
		if !authority.CountsUnreadable(inst, se.Namespace, se.Finalized) || slices.Contains(unreadable, name) {
			continue
		}
		unreadable = append(unreadable, name)
		// Marked for deletion, so that the release that reads it unbinds it.
		if err := e.cfg.Store.Bindings().Delete(ctx, se.Namespace, se.Name); err != nil && !store.IsNotFound(err) && !store.IsForbidden(err) {
			return Result{}, false, err
		}
	}
	if len(bs) == 0 && len(unreadable) == 0 && len(unseen) > 0 {
		// No DELETE while bindings this process cannot list may depend on the instance.
		return e.blockedByUnseenBindings(ctx, inst, unseen)
	}
	if len(bs) == 0 && len(unreadable) == 0 {
		return Result{}, false, nil
	}
	names := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.Namespace == inst.Namespace {
			names = append(names, b.Name)
		} else {
			names = append(names, b.Namespace+"/"+b.Name)
		}
		if b.DeletionTimestamp == nil {
			if err := e.cfg.Store.Bindings().Delete(ctx, b.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
				return Result{}, false, err
			}
		}
	}
	msg := fmt.Sprintf("waiting for its bindings (%s) to be unbound first; they are marked for deletion", strings.Join(names, ", "))
	if len(names) == 0 {
		msg = "waiting for its bindings to be unbound first"
	}
	if len(unreadable) > 0 {
		msg += fmt.Sprintf("; binding record(s) %s carry the catalog's finalizer in a format this release cannot read (a newer release's, or an unreadable spec): they are marked for deletion, and the release that wrote them unbinds them (or, if they are junk, their finalizer is removed by hand)", strings.Join(unreadable, ", "))
	}
	// The unbinds send the instance's id only once it has its id claim.
	e.auth.ClaimOwnID(ctx, v1alpha1.KindServiceInstance, inst, inst.Spec.ExternalID)
	return e.blockedByBindings(ctx, inst, msg)
}

// consumerNamespaces are the namespaces other than inst's where bindings of inst may be
// although its grant no longer names them: those it was shared with before
// (status.sharedBefore) and those holding a place among its consumers
// (status.consumers). A name that cannot be a namespace is left out (the status is
// untrusted input).
func consumerNamespaces(inst *v1alpha1.ServiceInstance) []string {
	var out []string
	add := func(ns string) {
		if ns != inst.Namespace && !slices.Contains(out, ns) && len(validation.IsDNS1123Label(ns)) == 0 {
			out = append(out, ns)
		}
	}
	for _, ns := range inst.Status.SharedBefore {
		add(ns)
	}
	for _, c := range inst.Status.Consumers {
		add(c.Namespace)
	}
	return out
}

// rememberGrants adds the namespaces of x's grant to those it was ever shared with
// (status.sharedBefore), which an unshare does not remove: a deletion then looks for
// bindings there too.
func rememberGrants(x *v1alpha1.ServiceInstance) {
	for _, ns := range x.Spec.SharedWith {
		if !slices.Contains(x.Status.SharedBefore, ns) {
			x.Status.SharedBefore = append(x.Status.SharedBefore, ns)
		}
	}
	slices.Sort(x.Status.SharedBefore)
}

// blockedByUnseenBindings leaves the deletion of inst waiting because bindings in the
// namespaces unseen, which this process may not list, may still depend on it: a reconcile
// that sees every namespace finishes it.
func (e instanceSteps) blockedByUnseenBindings(ctx context.Context, inst *v1alpha1.ServiceInstance, unseen []string) (Result, bool, error) {
	msg := fmt.Sprintf(`bindings in namespace(s) %s may still use it, and this command may not list them: "kubectl catalog reconcile" (which sees every namespace) unbinds them, then deprovisions it`, strings.Join(unseen, ", "))
	return e.blockedByBindings(ctx, inst, msg)
}

// blockedByBindings records that the deletion of inst waits for bindings, as msg says.
func (e instanceSteps) blockedByBindings(ctx context.Context, inst *v1alpha1.ServiceInstance, msg string) (Result, bool, error) {
	x := inst.DeepCopy()
	now := e.now()
	x.Status.Phase = v1alpha1.PhaseDeprovisioning
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonDeprovisionBlockedByExistingBindings, msg, now)
	store.ClearClaim(x, e.cfg.Holder)
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		res, err := reread(e.Engine, ctx, inst, nil)
		return res, true, err
	}
	if err != nil {
		return Result{}, true, err
	}
	return Result{Instance: stored, State: StateWaiting, RequeueAfter: e.cfg.PollInterval, Message: msg}, true, nil
}

// gone finishes a deprovision the broker confirmed (200, or 410 Gone) for op's instance
// id: a deletion releases the record once no other id may be held at the broker;
// orphan mitigation forgets what the broker held and schedules the provision again,
// under a new id (OSB ids are not reused: a broker may refuse a deleted id with 409).
func (e instanceSteps) gone(ctx context.Context, inst *v1alpha1.ServiceInstance, op *v1alpha1.Operation) (Result, error) {
	id := op.InstanceID
	if inst.DeletionTimestamp != nil {
		rest := slices.DeleteFunc(instanceIDsAtBroker(inst), func(x string) bool { return x == id })
		if len(rest) == 0 {
			return release(e.Engine, ctx, inst, "deprovisioned", true)
		}
		return finish(e.Engine, ctx, inst, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
			forgetExternalID(&x.Status.OperationStatus, id)
			x.Status.InFlight = nil
			if id == x.CurrentExternalID() {
				x.Status.Provisioned, x.Status.OrphanMitigation = nil, nil
			}
			if r := x.Status.Retry; r != nil && actionOf(r.Reason) == actionDeprovision {
				x.Status.Retry = nil
			}
			x.Status.Phase = v1alpha1.PhaseDeprovisioning
			setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonDeprovisionInProgress,
				fmt.Sprintf("the broker deleted instance id %s; deleting the other ids it may hold (%s)", id, strings.Join(rest, ", ")), now)
		})
	}
	om := inst.Status.OrphanMitigation
	return finish(e.Engine, ctx, inst, op.RequestID, func(x *v1alpha1.ServiceInstance, now time.Time) {
		forgetExternalID(&x.Status.OperationStatus, id)
		x.Status.Provisioned, x.Status.OrphanMitigation, x.Status.InFlight = nil, nil, nil
		if id == x.CurrentExternalID() {
			x.Status.ExternalID = e.recordBoundID(x.UID)
		}
		setCondition(x, v1alpha1.ConditionOrphanMitigation, metav1.ConditionFalse, ReasonOrphanMitigationSucceeded,
			"the broker confirmed it holds nothing of the failed provision", now)
		msg := "provision failed"
		if om != nil {
			msg = om.Message
		}
		if om == nil || om.RetryAfter {
			// Keep counting provision attempts: the backoff grows across mitigations.
			if x.Status.Retry != nil && actionOf(x.Status.Retry.Reason) == actionProvision {
				x.Status.Retry.Attempts--
			}
			e.retryLater(x, ReasonProvisionCallFailed, msg+"; orphan mitigation done, provisioning again under a new instance id", false, now)
			return
		}
		e.terminalFailure(x, ReasonProvisionFailed, msg, now)
	})
}

// forgetUnownedIDs forgets ids, OSB ids inst's status lists as held at the broker that
// inst does not own (authority.UnownedIDs), with a Warning Event and a condition naming
// inst and the ids, then goes on with the deprovision: they never keep inst's deletion
// waiting (see the binding's forgetUnownedIDs). Only what a status names is forgotten:
// an id its spec names that it does not own stays, refused (RefusedIDNotOwned).
func (e instanceSteps) forgetUnownedIDs(ctx context.Context, inst *v1alpha1.ServiceInstance, ids []string) (Result, error) {
	ctx = context.WithValue(ctx, unownedForgottenKey{}, true)
	x := inst.DeepCopy()
	for _, id := range ids {
		forgetExternalID(&x.Status.OperationStatus, id)
		if op := x.Status.InFlight; op != nil && op.InstanceID == id {
			x.Status.InFlight = nil
		}
		if x.Status.ExternalID == id {
			x.Status.ExternalID = ""
		}
	}
	left := e.auth.UnownedIDs(ctx, x, instanceIDsAtBroker(x))
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(left, id) })
	if len(ids) == 0 {
		return e.deprovision(ctx, inst, nil)
	}
	msg := authority.ForgottenIDsMessage(v1alpha1.KindServiceInstance, inst, ids)
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonUnownedIDsForgotten, msg, e.now())
	stored, err := e.cfg.Store.Instances().Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e.Engine, ctx, inst, nil)
	}
	if err != nil {
		return Result{}, err
	}
	ev := NewEvent(inst.Namespace, store.ConfigMapName(v1alpha1.KindServiceInstance, inst.Name), EventWarning, ReasonUnownedIDsForgotten, "Deprovision", msg)
	ev.UID = inst.GetUID()
	e.event(ctx, ev)
	return e.deprovision(ctx, stored, nil)
}
