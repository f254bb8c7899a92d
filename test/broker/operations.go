package broker

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Async operations complete lazily: every request (and every state read from
// Go) first completes the operations whose DoneAt has passed. There are no
// timers, so a restarted broker picks up where it left off from the saved
// DoneAt times.
func (b *Broker) advanceLocked(now time.Time) {
	for _, inst := range b.state.Instances {
		if op := inst.LastOperation; due(op, now) {
			b.completeInstanceOpLocked(inst, op, now)
		}
	}
	for _, bd := range b.state.Bindings {
		if op := bd.LastOperation; due(op, now) {
			b.completeBindingOpLocked(bd, op, now)
		}
	}
}

// FinishOperations makes every asynchronous operation in progress due now: its next
// poll (or state read) completes it as it would have at its own end.
func (b *Broker) FinishOperations() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	for _, inst := range b.state.Instances {
		if op := inst.LastOperation; op != nil && op.State == osb.StateInProgress && op.DoneAt.After(now) {
			op.DoneAt = now
		}
	}
	for _, bd := range b.state.Bindings {
		if op := bd.LastOperation; op != nil && op.State == osb.StateInProgress && op.DoneAt.After(now) {
			op.DoneAt = now
		}
	}
	b.dirty = true
}

func due(op *Operation, now time.Time) bool {
	return op != nil && op.State == osb.StateInProgress && !op.Stuck && !now.Before(op.DoneAt)
}

func (b *Broker) completeInstanceOpLocked(inst *Instance, op *Operation, now time.Time) {
	b.dirty = true
	inst.UpdatedAt = now
	if f := op.Failure; f != nil {
		op.State = osb.StateFailed
		op.Description = f.Description
		if op.Description == "" {
			op.Description = fmt.Sprintf("%s of instance %s failed", op.Kind, inst.ID)
		}
		op.InstanceUsable, op.UpdateRepeatable = f.InstanceUsable, f.UpdateRepeatable
		op.Pending = nil
		if op.Kind == OpProvision {
			inst.State = InstanceFailed
		} else {
			inst.State = InstanceReady
		}
		if f.InstanceUsable != nil && !*f.InstanceUsable {
			inst.Usable = false
		}
		return
	}
	op.State = osb.StateSucceeded
	switch op.Kind {
	case OpProvision:
		inst.State = InstanceReady
		op.Description = "instance is ready"
	case OpUpdate:
		b.applyUpdateLocked(inst, op.Pending)
		op.Pending = nil
		inst.State = InstanceReady
		op.Description = "update applied"
	case OpDeprovision:
		op.Description = "instance deleted"
		b.deleteInstanceLocked(inst, op, now)
	}
}

func (b *Broker) completeBindingOpLocked(bd *Binding, op *Operation, now time.Time) {
	b.dirty = true
	if f := op.Failure; f != nil {
		op.State = osb.StateFailed
		op.Description = f.Description
		if op.Description == "" {
			op.Description = fmt.Sprintf("%s of binding %s failed", op.Kind, bd.ID)
		}
		if op.Kind == OpBind {
			bd.State = BindingFailed
		} else {
			bd.State = BindingReady
		}
		return
	}
	op.State = osb.StateSucceeded
	switch op.Kind {
	case OpBind:
		bd.State = BindingReady
		op.Description = "binding is ready"
	case OpUnbind:
		op.Description = "binding deleted"
		b.deleteBindingLocked(bd, op, now)
	}
}

func (b *Broker) applyUpdateLocked(inst *Instance, p *PendingUpdate) {
	if p == nil {
		return
	}
	inst.PlanID = p.PlanID
	inst.Parameters = p.Parameters
	inst.MaintenanceInfo = p.MaintenanceInfo
	if p.Context != nil {
		inst.Context = p.Context
	}
	inst.Usable = true
	if info := b.catalog.plan(inst.PlanID); info != nil {
		inst.Metadata = instanceMetadata(info)
	}
}

func (b *Broker) deleteInstanceLocked(inst *Instance, op *Operation, now time.Time) {
	for _, bd := range b.state.bindingsOf(inst.ID) {
		b.deleteBindingLocked(bd, bd.LastOperation, now)
	}
	delete(b.state.Instances, inst.ID)
	b.state.DeletedInstances[inst.ID] = &tombstone{LastOperation: op, DeletedAt: now}
	b.dirty = true
}

func (b *Broker) deleteBindingLocked(bd *Binding, op *Operation, now time.Time) {
	delete(b.state.Bindings, bd.ID)
	b.state.DeletedBindings[bd.ID] = &tombstone{LastOperation: op, DeletedAt: now}
	b.dirty = true
}

// startOperationLocked creates the operation of a request: finished at once
// when sync, in progress with a key and a completion time when async. Fail
// and stick faults attach to async operations here.
func (b *Broker) startOperationLocked(c *call, kind Op, async bool, info *planInfo, planID, reqDigest string, now time.Time) *Operation {
	op := &Operation{Kind: kind, Async: async, StartedAt: now, RequestDigest: reqDigest, PlanID: planID}
	if !async {
		op.State = osb.StateSucceeded
		return op
	}
	op.Key = b.newOperationKey(kind)
	op.State = osb.StateInProgress
	op.Description = fmt.Sprintf("%s in progress", kind)
	op.DoneAt = now.Add(b.asyncDelayLocked(info))
	b.operationFaultLocked(c, op)
	return op
}

func (b *Broker) asyncDelayLocked(info *planInfo) time.Duration {
	switch {
	case b.asyncDelay > 0:
		return b.asyncDelay
	case info != nil && info.behaviour.AsyncDelay > 0:
		return time.Duration(info.behaviour.AsyncDelay)
	default:
		return defaultAsyncDelay
	}
}

// operationFaultLocked applies a fail or stick fault matching the call to op.
func (b *Broker) operationFaultLocked(c *call, op *Operation) {
	f, ok := b.faults.take(c.key, func(f *Fault) bool { return f.actsOnOperation() })
	if !ok {
		return
	}
	if c.rec.Fault == "" {
		c.rec.Fault = f.ID
	} else {
		c.rec.Fault += "," + f.ID
	}
	b.dirty = true
	switch f.Action {
	case ActionStickOperation:
		op.Stuck = true
	case ActionFailOperation:
		op.Failure = &OperationFailure{Description: f.Description, InstanceUsable: f.InstanceUsable, UpdateRepeatable: f.UpdateRepeatable}
		if c.op == OpLastOperation || c.op == OpBindingLastOperation {
			// Polling is already under way: fail now rather than at DoneAt.
			op.Stuck = false
			op.DoneAt = op.StartedAt
		}
	}
}

// lastOperationReply answers a poll of op. Retry-After comes with answers
// that are still in progress.
func (b *Broker) lastOperationReply(op *Operation, info *planInfo, withInstanceFields bool, now time.Time) reply {
	resp := osb.LastOperationResponse{State: op.State, Description: op.Description}
	if withInstanceFields && op.State == osb.StateFailed {
		resp.InstanceUsable, resp.UpdateRepeatable = op.InstanceUsable, op.UpdateRepeatable
	}
	rep := jsonReply(http.StatusOK, resp)
	if op.State == osb.StateInProgress {
		if ra := b.retryAfter(info); ra > 0 {
			rep.setHeader(osb.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(ra.Seconds()))))
		}
	}
	return rep
}

func (b *Broker) retryAfter(info *planInfo) time.Duration {
	switch {
	case b.opts.RetryAfter < 0:
		return 0
	case b.opts.RetryAfter > 0:
		return b.opts.RetryAfter
	case info != nil:
		return time.Duration(info.behaviour.RetryAfter)
	default:
		return 0
	}
}

// checkPollLocked compares the operation and plan a poll names with what the
// broker issued. A different operation is refused; a missing one, or a
// plan_id other than the pre-update plan, is tolerated but recorded.
func (b *Broker) checkPollLocked(c *call, what string, op *Operation) *reply {
	sent, hasOp := c.query["operation"]
	switch {
	case hasOp && op.Key != "" && sent[0] != op.Key:
		rep := errorReply(http.StatusBadRequest, "", "operation %q is not the last operation of %s (expected the operation value the broker returned, percent-encoded)", sent[0], what)
		return &rep
	case hasOp && op.Key == "" && sent[0] != "":
		rep := errorReply(http.StatusBadRequest, "", "operation %q is not known for %s, whose last operation was synchronous", sent[0], what)
		return &rep
	case !hasOp && op.Key != "":
		b.violateLocked("poll of %s without the operation %q the broker returned", what, op.Key)
	}
	if p := c.query.Get("plan_id"); p != "" && op.PlanID != "" && p != op.PlanID {
		b.violateLocked("poll of %s names plan_id %q; the operation started on plan %q (after a plan change the platform must send the old plan)", what, p, op.PlanID)
	}
	return nil
}

func instanceMetadata(info *planInfo) *osb.InstanceMetadata {
	return &osb.InstanceMetadata{
		Labels: map[string]any{
			"test-broker.kubectl-catalog.io/service": info.service.Name,
			"test-broker.kubectl-catalog.io/plan":    info.plan.Name,
		},
		Attributes: map[string]any{"region": "local", "tier": info.plan.Name},
	}
}

// mergeParams applies update parameters to the current ones: keys sent
// replace keys stored, keys not sent stay, as platforms send only what the
// user changed.
func mergeParams(cur, upd map[string]any) map[string]any {
	if cur == nil && upd == nil {
		return nil
	}
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, upd)
	return out
}

func boolPtr(v bool) *bool { return &v }
