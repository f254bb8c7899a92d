package broker

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// bindResponse is the 200/201 body of a binding.
func bindResponse(bd *Binding) osb.BindResponse {
	return osb.BindResponse{
		Metadata:        bd.Metadata,
		Credentials:     bd.Credentials,
		SyslogDrainURL:  bd.SyslogDrainURL,
		RouteServiceURL: bd.RouteServiceURL,
		VolumeMounts:    bd.VolumeMounts,
		Endpoints:       bd.Endpoints,
	}
}

func (b *Broker) bind(c *call) reply {
	var req osb.BindRequest
	var raw rawFields
	if rep := decodeBody(c.body, &req); rep != nil {
		return *rep
	}
	_ = json.Unmarshal(c.body, &raw)
	if rep := missingFields(required("service_id", req.ServiceID, "plan_id", req.PlanID)...); rep != nil {
		return *rep
	}
	params, rep := decodeParams(raw.Parameters)
	if rep != nil {
		return *rep
	}
	unlock := b.begin(c)
	defer unlock()
	now := time.Now()
	inst := b.state.Instances[c.instanceID]
	if inst == nil {
		return errorReply(http.StatusNotFound, "", "instance %s does not exist", c.instanceID)
	}
	info, rep := b.lookupPlanLocked(req.ServiceID, req.PlanID)
	if rep != nil {
		return *rep
	}
	if req.ServiceID != inst.ServiceID || req.PlanID != inst.PlanID {
		return errorReply(http.StatusBadRequest, "", "service_id/plan_id %q/%q are not those of instance %s (%q/%q)", req.ServiceID, req.PlanID, inst.ID, inst.ServiceID, inst.PlanID)
	}
	if !info.bindable() {
		return errorReply(http.StatusUnprocessableEntity, "", "plan %q of service %q is not bindable", info.plan.Name, info.service.Name)
	}
	appGUID := req.AppGUID
	if req.BindResource != nil && req.BindResource.AppGUID != "" {
		appGUID = req.BindResource.AppGUID
	}
	var bindResource json.RawMessage
	if len(raw.BindResource) > 0 && string(raw.BindResource) != "null" {
		bindResource = raw.BindResource
	}
	reqDigest := digest([]any{req.ServiceID, req.PlanID, appGUID, bindResource, params, req.PredecessorBindingID})
	if rep, done := b.existingBindingLocked(c.bindingID, inst, reqDigest); done {
		return rep
	}
	if op, what := b.state.busyOperation(inst.ID); op != nil {
		return concurrencyError(what, op)
	}
	if inst.State == InstanceFailed || !inst.Usable {
		return errorReply(http.StatusUnprocessableEntity, "", "instance %s is not usable (%s); update or deprovision it", inst.ID, inst.State)
	}
	b.checkPlatformLocked(c, raw.context())
	predecessor, rep := b.predecessorLocked(req.PredecessorBindingID, info, inst)
	if rep != nil {
		return *rep
	}
	if info.behaviour.RequiresApp && appGUID == "" {
		return errorReply(http.StatusUnprocessableEntity, osb.ErrorCodeRequiresApp, "plan %q needs bind_resource.app_guid", info.plan.Name)
	}
	if err := info.bind.validate(params); err != nil {
		return invalidParams(err)
	}
	async := info.behaviour.isAsync(OpBind)
	if async && !c.acceptsIncomplete {
		return asyncRequired(OpBind, info)
	}
	creds, endpoints := makeCredentials(info.service, info.behaviour.Credentials, inst.ID, c.bindingID, predecessor)
	bd := &Binding{
		ID:                   c.bindingID,
		InstanceID:           inst.ID,
		ServiceID:            req.ServiceID,
		PlanID:               req.PlanID,
		AppGUID:              appGUID,
		BindResource:         bindResource,
		Context:              raw.context(),
		Parameters:           info.bind.withDefaults(params),
		PredecessorBindingID: req.PredecessorBindingID,
		Credentials:          creds,
		Metadata:             bindingExpiry(info.behaviour, now),
		Endpoints:            endpoints,
		State:                BindingReady,
		OriginatingIdentity:  c.identity,
		BindDigest:           reqDigest,
		CreatedAt:            now,
	}
	bd.addRequired(info.service, creds, inst.ID)
	bd.LastOperation = b.startOperationLocked(c, OpBind, async, info, req.PlanID, reqDigest, now)
	delete(b.state.DeletedBindings, bd.ID)
	b.state.Bindings[bd.ID] = bd
	b.dirty = true
	if async {
		bd.State = BindingCreating
		bd.LastOperation.Description = "creating binding"
		return jsonReply(http.StatusAccepted, osb.BindResponse{Operation: bd.LastOperation.Key})
	}
	bd.LastOperation.Description = "binding is ready"
	return jsonReply(http.StatusCreated, bindResponse(bd))
}

// existingBindingLocked is the answer to a bind of a binding id the broker knows
// (done), unless the binding failed: a retry then runs it again from scratch.
func (b *Broker) existingBindingLocked(bindingID string, inst *Instance, reqDigest string) (rep reply, done bool) {
	bd := b.state.Bindings[bindingID]
	if bd == nil {
		return reply{}, false
	}
	switch {
	case bd.InstanceID != inst.ID:
		return errorReply(http.StatusConflict, "", "binding %s already exists on another instance", bd.ID), true
	case bd.BindDigest != reqDigest:
		return errorReply(http.StatusConflict, "", "binding %s already exists with different attributes", bd.ID), true
	case bd.State == BindingCreating:
		return jsonReply(http.StatusAccepted, osb.BindResponse{Operation: bd.LastOperation.Key}), true
	case bd.State == BindingDeleting:
		return concurrencyError("binding "+bd.ID, bd.LastOperation), true
	case bd.State == BindingFailed:
		// Retrying a failed bind runs it again from scratch.
		delete(b.state.Bindings, bd.ID)
		return reply{}, false
	default:
		return jsonReply(http.StatusOK, bindResponse(bd)), true
	}
}

// predecessorLocked is the binding a rotating bind replaces, if it names one.
func (b *Broker) predecessorLocked(id string, info *planInfo, inst *Instance) (*Binding, *reply) {
	if id == "" {
		return nil, nil
	}
	if !info.plan.BindingRotatable {
		rep := errorReply(http.StatusBadRequest, "", "predecessor_binding_id is only allowed for binding_rotatable plans, and plan %q is not", info.plan.Name)
		return nil, &rep
	}
	predecessor := b.state.Bindings[id]
	if predecessor == nil || predecessor.InstanceID != inst.ID || predecessor.State != BindingReady {
		rep := errorReply(http.StatusBadRequest, "", "predecessor_binding_id %q is not a ready binding of instance %s", id, inst.ID)
		return nil, &rep
	}
	return predecessor, nil
}

// addRequired gives the binding what its service requires: a syslog drain, a route
// service, a volume mount.
func (bd *Binding) addRequired(svc *osb.Service, creds map[string]any, instanceID string) {
	for _, r := range svc.Requires {
		switch r {
		case osb.RequiresSyslogDrain:
			bd.SyslogDrainURL = "syslog-tls://" + creds["host"].(string) + ":6514"
		case osb.RequiresRouteForwarding:
			bd.RouteServiceURL = "https://" + creds["host"].(string) + "/route"
		case osb.RequiresVolumeMount:
			bd.VolumeMounts = []osb.VolumeMount{volumeMount(instanceID)}
		}
	}
}

func (b *Broker) unbind(c *call) reply {
	serviceID, planID := c.query.Get("service_id"), c.query.Get("plan_id")
	if rep := missingFields(required("service_id (query)", serviceID, "plan_id (query)", planID)...); rep != nil {
		return *rep
	}
	unlock := b.begin(c)
	defer unlock()
	now := time.Now()
	bd := b.state.Bindings[c.bindingID]
	if bd == nil || bd.InstanceID != c.instanceID {
		return reply{status: http.StatusGone, body: []byte("{}")}
	}
	if op := bd.LastOperation; op != nil && op.State == osb.StateInProgress {
		if op.Kind == OpUnbind {
			return jsonReply(http.StatusAccepted, osb.UnbindResponse{Operation: op.Key})
		}
		return concurrencyError("binding "+bd.ID, op)
	}
	if inst := b.state.Instances[bd.InstanceID]; inst != nil && inst.LastOperation != nil && inst.LastOperation.State == osb.StateInProgress {
		return concurrencyError("instance "+inst.ID, inst.LastOperation)
	}
	if serviceID != bd.ServiceID || planID != bd.PlanID {
		b.violateLocked("unbind of binding %s names service_id %q plan_id %q; the binding has %q / %q", bd.ID, serviceID, planID, bd.ServiceID, bd.PlanID)
	}
	info := b.catalog.plan(bd.PlanID)
	async := info != nil && info.behaviour.isAsync(OpUnbind)
	if async && !c.acceptsIncomplete {
		return asyncRequired(OpUnbind, info)
	}
	op := b.startOperationLocked(c, OpUnbind, async, info, bd.PlanID, "", now)
	bd.LastOperation = op
	b.dirty = true
	if async {
		op.Description = "deleting binding"
		bd.State = BindingDeleting
		return jsonReply(http.StatusAccepted, osb.UnbindResponse{Operation: op.Key})
	}
	op.Description = "binding deleted"
	b.deleteBindingLocked(bd, op, now)
	return jsonReply(http.StatusOK, osb.EmptyResponse{})
}

func (b *Broker) bindingLastOperation(c *call) reply {
	unlock := b.begin(c)
	defer unlock()
	now := time.Now()
	what := "binding " + c.bindingID
	bd := b.state.Bindings[c.bindingID]
	if bd == nil || bd.InstanceID != c.instanceID {
		return b.tombstoneReply(c, what, b.state.DeletedBindings[c.bindingID], false)
	}
	op := bd.LastOperation
	if op == nil {
		return errorReply(http.StatusNotFound, "", "%s has no operation", what)
	}
	if rep := b.checkPollLocked(c, what, op); rep != nil {
		return *rep
	}
	if op.State == osb.StateInProgress {
		b.operationFaultLocked(c, op)
		if due(op, now) {
			b.completeBindingOpLocked(bd, op, now)
		}
	}
	return b.lastOperationReply(op, b.catalog.plan(bd.PlanID), false, now)
}

func (b *Broker) getBinding(c *call) reply {
	unlock := b.begin(c)
	defer unlock()
	bd := b.state.Bindings[c.bindingID]
	if bd == nil || bd.InstanceID != c.instanceID {
		return errorReply(http.StatusNotFound, "", "binding %s does not exist on instance %s", c.bindingID, c.instanceID)
	}
	if svc := b.catalog.services[bd.ServiceID]; svc != nil && !svc.BindingsRetrievable {
		return errorReply(http.StatusBadRequest, "", "service %q does not declare bindings_retrievable, so its bindings cannot be fetched", svc.Name)
	}
	switch bd.State {
	case BindingCreating:
		return errorReply(http.StatusNotFound, "", "binding %s is still being created", bd.ID)
	case BindingFailed:
		return errorReply(http.StatusNotFound, "", "binding %s failed to be created", bd.ID)
	}
	r := bindResponse(bd)
	resp := osb.GetBindingResponse{
		Metadata:        r.Metadata,
		Credentials:     r.Credentials,
		SyslogDrainURL:  r.SyslogDrainURL,
		RouteServiceURL: r.RouteServiceURL,
		VolumeMounts:    r.VolumeMounts,
		Endpoints:       r.Endpoints,
	}
	if bd.Parameters != nil {
		resp.Parameters, _ = json.Marshal(bd.Parameters)
	}
	return jsonReply(http.StatusOK, resp)
}
