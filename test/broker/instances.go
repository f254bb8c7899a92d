package broker

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func (b *Broker) getCatalog(c *call) reply {
	b.mu.Lock()
	idx := b.catalog
	b.mu.Unlock()
	rep := reply{status: http.StatusOK, body: idx.body}
	rep.setHeader("ETag", idx.etag)
	if match := c.r.Header.Get("If-None-Match"); match != "" && etagMatches(match, idx.etag) {
		rep.status, rep.body = http.StatusNotModified, nil
	}
	return rep
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// missingFields builds the 400 for absent required fields, naming them all.
func missingFields(names ...string) *reply {
	if len(names) == 0 {
		return nil
	}
	rep := errorReply(http.StatusBadRequest, "", "missing required field(s): %s", strings.Join(names, ", "))
	return &rep
}

func required(pairs ...string) []string {
	var missing []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			missing = append(missing, pairs[i])
		}
	}
	return missing
}

// lookupPlanLocked resolves the ids of a request, as a 400 when they are
// unknown or do not belong together.
func (b *Broker) lookupPlanLocked(serviceID, planID string) (*planInfo, *reply) {
	svc := b.catalog.services[serviceID]
	if svc == nil {
		rep := errorReply(http.StatusBadRequest, "", "service_id %q is not in the broker's catalog", serviceID)
		return nil, &rep
	}
	info := b.catalog.plan(planID)
	if info == nil {
		rep := errorReply(http.StatusBadRequest, "", "plan_id %q is not in the broker's catalog", planID)
		return nil, &rep
	}
	if info.service.ID != svc.ID {
		rep := errorReply(http.StatusBadRequest, "", "plan_id %q (%s) does not belong to service_id %q (%s)", planID, info.plan.Name, serviceID, svc.Name)
		return nil, &rep
	}
	return info, nil
}

func concurrencyError(what string, op *Operation) reply {
	return errorReply(http.StatusUnprocessableEntity, osb.ErrorCodeConcurrencyError,
		"%s has a %s operation in progress; retry when it has finished", what, op.Kind)
}

func asyncRequired(op Op, info *planInfo) reply {
	return errorReply(http.StatusUnprocessableEntity, osb.ErrorCodeAsyncRequired,
		"plan %q only supports %s asynchronously; retry with accepts_incomplete=true", info.plan.Name, op)
}

// maintenanceConflict checks a requested maintenance_info against the plan.
func maintenanceConflict(req *osb.MaintenanceInfo, info *planInfo) *reply {
	if req == nil {
		return nil
	}
	if info.plan.MaintenanceInfo == nil {
		rep := errorReply(http.StatusUnprocessableEntity, osb.ErrorCodeMaintenanceInfoConflict,
			"plan %q has no maintenance_info, but the request sent version %q; re-fetch the catalog", info.plan.Name, req.Version)
		return &rep
	}
	if req.Version != info.plan.MaintenanceInfo.Version {
		rep := errorReply(http.StatusUnprocessableEntity, osb.ErrorCodeMaintenanceInfoConflict,
			"maintenance_info.version %q does not match plan %q's version %q; re-fetch the catalog", req.Version, info.plan.Name, info.plan.MaintenanceInfo.Version)
		return &rep
	}
	return nil
}

func invalidParams(err error) reply {
	return errorReply(http.StatusBadRequest, "", "invalid parameters: %v", err)
}

func (b *Broker) dashboardURL(c *call, info *planInfo, instanceID string) string {
	if !info.behaviour.Dashboard {
		return ""
	}
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/dashboard/%s", scheme, c.r.Host, url.PathEscape(instanceID))
}

func (b *Broker) provision(c *call) reply {
	var req osb.ProvisionRequest
	var raw rawFields
	if rep := decodeBody(c.body, &req); rep != nil {
		return *rep
	}
	_ = json.Unmarshal(c.body, &raw)
	if rep := missingFields(required("service_id", req.ServiceID, "plan_id", req.PlanID,
		"organization_guid", req.OrganizationGUID, "space_guid", req.SpaceGUID)...); rep != nil {
		return *rep
	}
	params, rep := decodeParams(raw.Parameters)
	if rep != nil {
		return *rep
	}
	unlock := b.begin(c)
	defer unlock()
	now := time.Now()
	info, rep := b.lookupPlanLocked(req.ServiceID, req.PlanID)
	if rep != nil {
		return *rep
	}
	var miVersion string
	if req.MaintenanceInfo != nil {
		miVersion = req.MaintenanceInfo.Version
	}
	reqDigest := digest([]any{req.ServiceID, req.PlanID, req.OrganizationGUID, req.SpaceGUID, params, miVersion})
	if inst := b.state.Instances[c.instanceID]; inst != nil {
		switch {
		case inst.ProvisionDigest != reqDigest:
			return errorReply(http.StatusConflict, "", "instance %s already exists with different attributes", c.instanceID)
		case inst.State == InstanceProvisioning:
			return jsonReply(http.StatusAccepted, osb.ProvisionResponse{DashboardURL: inst.DashboardURL, Operation: inst.LastOperation.Key, Metadata: inst.Metadata})
		case inst.State == InstanceDeprovisioning:
			return concurrencyError("instance "+c.instanceID, inst.LastOperation)
		case inst.State == InstanceFailed:
			// Retrying a failed provision runs it again from scratch.
			delete(b.state.Instances, c.instanceID)
		default:
			return jsonReply(http.StatusOK, osb.ProvisionResponse{DashboardURL: inst.DashboardURL, Metadata: inst.Metadata})
		}
	}
	b.checkPlatformLocked(c, raw.context())
	if rep := maintenanceConflict(req.MaintenanceInfo, info); rep != nil {
		return *rep
	}
	async := info.behaviour.isAsync(OpProvision)
	if async && !c.acceptsIncomplete {
		return asyncRequired(OpProvision, info)
	}
	if err := info.create.validate(params); err != nil {
		return invalidParams(err)
	}
	mi := info.plan.MaintenanceInfo
	if req.MaintenanceInfo != nil {
		mi = req.MaintenanceInfo
	}
	inst := &Instance{
		ID:                  c.instanceID,
		ServiceID:           req.ServiceID,
		PlanID:              req.PlanID,
		OrganizationGUID:    req.OrganizationGUID,
		SpaceGUID:           req.SpaceGUID,
		Context:             raw.context(),
		Parameters:          info.create.withDefaults(params),
		MaintenanceInfo:     mi,
		DashboardURL:        b.dashboardURL(c, info, c.instanceID),
		Metadata:            instanceMetadata(info),
		State:               InstanceReady,
		Usable:              true,
		OriginatingIdentity: c.identity,
		ProvisionDigest:     reqDigest,
		CreatedAt:           now,
		UpdatedAt:           now,
	}
	inst.LastOperation = b.startOperationLocked(c, OpProvision, async, info, req.PlanID, reqDigest, now)
	delete(b.state.DeletedInstances, c.instanceID)
	b.state.Instances[c.instanceID] = inst
	b.dirty = true
	resp := osb.ProvisionResponse{DashboardURL: inst.DashboardURL, Metadata: inst.Metadata}
	if async {
		inst.State = InstanceProvisioning
		inst.LastOperation.Description = "provisioning"
		resp.Operation = inst.LastOperation.Key
		return jsonReply(http.StatusAccepted, resp)
	}
	inst.LastOperation.Description = "instance is ready"
	return jsonReply(http.StatusCreated, resp)
}

func (b *Broker) update(c *call) reply {
	var req osb.UpdateRequest
	var raw rawFields
	if rep := decodeBody(c.body, &req); rep != nil {
		return *rep
	}
	_ = json.Unmarshal(c.body, &raw)
	if rep := missingFields(required("service_id", req.ServiceID)...); rep != nil {
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
	if req.ServiceID != inst.ServiceID {
		return errorReply(http.StatusBadRequest, "", "service_id %q is not the service of instance %s (%q)", req.ServiceID, inst.ID, inst.ServiceID)
	}
	target := req.PlanID
	if target == "" {
		target = inst.PlanID
	}
	info, rep := b.lookupPlanLocked(req.ServiceID, target)
	if rep != nil {
		return *rep
	}
	var miVersion string
	if req.MaintenanceInfo != nil {
		miVersion = req.MaintenanceInfo.Version
	}
	reqDigest := digest([]any{target, params, miVersion, raw.context()})
	if op, what := b.state.busyOperation(inst.ID); op != nil {
		if op.Kind == OpUpdate && op.RequestDigest == reqDigest && what == "instance "+inst.ID {
			return jsonReply(http.StatusAccepted, osb.UpdateResponse{Operation: op.Key})
		}
		return concurrencyError(what, op)
	}
	if inst.State == InstanceFailed {
		return errorReply(http.StatusUnprocessableEntity, "", "instance %s failed to provision and cannot be updated; deprovision it", inst.ID)
	}
	b.checkPlatformLocked(c, raw.context())
	// The identical request of the update last applied names the plan before it: a
	// platform re-sends an update whose answer it did not get.
	resent := inst.LastOperation != nil && inst.LastOperation.Kind == OpUpdate && inst.LastOperation.RequestDigest == reqDigest
	if pv := req.PreviousValues; pv != nil && pv.PlanID != "" && pv.PlanID != inst.PlanID && !(resent && pv.PlanID == inst.LastOperation.PlanID) {
		b.violateLocked("update of instance %s sends previous_values.plan_id %q; the instance has plan %q", inst.ID, pv.PlanID, inst.PlanID)
	}
	if target != inst.PlanID {
		updateable := info.service.PlanUpdateable != nil && *info.service.PlanUpdateable
		if cur := b.catalog.plan(inst.PlanID); cur != nil {
			updateable = cur.planUpdateable()
		}
		if !updateable {
			return errorReply(http.StatusUnprocessableEntity, "", "plan %q of instance %s is not plan_updateable: the plan cannot be changed", inst.PlanID, inst.ID)
		}
	}
	if rep := maintenanceConflict(req.MaintenanceInfo, info); rep != nil {
		return *rep
	}
	// An update without parameters keeps the instance's: the update schema, which
	// may ask for parameters together, judges the parameters an update sends.
	if params != nil {
		if err := info.update.validate(params); err != nil {
			return invalidParams(err)
		}
	}
	pending := &PendingUpdate{PlanID: target, Parameters: mergeParams(inst.Parameters, params), MaintenanceInfo: inst.MaintenanceInfo, Context: raw.context()}
	switch {
	case req.MaintenanceInfo != nil:
		pending.MaintenanceInfo = req.MaintenanceInfo
	case target != inst.PlanID:
		pending.MaintenanceInfo = info.plan.MaintenanceInfo
	}
	noop := target == inst.PlanID && reflect.DeepEqual(pending.Parameters, inst.Parameters) &&
		reflect.DeepEqual(pending.MaintenanceInfo, inst.MaintenanceInfo) &&
		(pending.Context == nil || string(pending.Context) == string(inst.Context))
	if noop {
		return jsonReply(http.StatusOK, osb.UpdateResponse{})
	}
	async := info.behaviour.isAsync(OpUpdate)
	if async && !c.acceptsIncomplete {
		return asyncRequired(OpUpdate, info)
	}
	op := b.startOperationLocked(c, OpUpdate, async, info, inst.PlanID, reqDigest, now)
	inst.LastOperation = op
	inst.UpdatedAt = now
	b.dirty = true
	if async {
		op.Pending = pending
		op.Description = "updating"
		inst.State = InstanceUpdating
		return jsonReply(http.StatusAccepted, osb.UpdateResponse{Operation: op.Key})
	}
	b.applyUpdateLocked(inst, pending)
	op.Description = "update applied"
	return jsonReply(http.StatusOK, osb.UpdateResponse{Metadata: inst.Metadata})
}

func (b *Broker) deprovision(c *call) reply {
	serviceID, planID := c.query.Get("service_id"), c.query.Get("plan_id")
	if rep := missingFields(required("service_id (query)", serviceID, "plan_id (query)", planID)...); rep != nil {
		return *rep
	}
	unlock := b.begin(c)
	defer unlock()
	now := time.Now()
	inst := b.state.Instances[c.instanceID]
	if inst == nil {
		return reply{status: http.StatusGone, body: []byte("{}")}
	}
	info := b.catalog.plan(inst.PlanID)
	halted := false
	if op, what := b.state.busyOperation(inst.ID); op != nil {
		switch {
		case op.Kind == OpDeprovision && what == "instance "+inst.ID:
			return jsonReply(http.StatusAccepted, osb.DeprovisionResponse{Operation: op.Key})
		case op.Kind == OpProvision && info != nil && info.behaviour.HaltProvisionOnDelete:
			op.State = osb.StateFailed
			op.Description = "provisioning was halted by a deprovision request"
			inst.State = InstanceFailed
			halted = true
			b.dirty = true
		default:
			return concurrencyError(what, op)
		}
	}
	if serviceID != inst.ServiceID || planID != inst.PlanID {
		b.violateLocked("deprovision of instance %s names service_id %q plan_id %q; the instance has %q / %q", inst.ID, serviceID, planID, inst.ServiceID, inst.PlanID)
	}
	if bs := b.state.bindingsOf(inst.ID); len(bs) > 0 {
		ids := make([]string, len(bs))
		for i, x := range bs {
			ids[i] = x.ID
		}
		b.violateLocked("deprovision of instance %s while it still has bindings %v (the platform must unbind first); they are deleted with it", inst.ID, ids)
	}
	async := info != nil && info.behaviour.isAsync(OpDeprovision)
	if async && !c.acceptsIncomplete {
		if halted {
			// The halt must not be half-applied by a refused request.
			inst.State = InstanceProvisioning
			inst.LastOperation.State = osb.StateInProgress
		}
		return asyncRequired(OpDeprovision, info)
	}
	if !async && halted {
		// Spec: a sync delete during provisioning leaves the provision
		// reported as failed.
		b.deleteInstanceLocked(inst, inst.LastOperation, now)
		return jsonReply(http.StatusOK, osb.EmptyResponse{})
	}
	op := b.startOperationLocked(c, OpDeprovision, async, info, inst.PlanID, "", now)
	inst.LastOperation = op
	b.dirty = true
	if async {
		op.Description = "deprovisioning"
		inst.State = InstanceDeprovisioning
		return jsonReply(http.StatusAccepted, osb.DeprovisionResponse{Operation: op.Key})
	}
	op.Description = "instance deleted"
	b.deleteInstanceLocked(inst, op, now)
	return jsonReply(http.StatusOK, osb.EmptyResponse{})
}

func (b *Broker) instanceLastOperation(c *call) reply {
	unlock := b.begin(c)
	defer unlock()
	now := time.Now()
	what := "instance " + c.instanceID
	inst := b.state.Instances[c.instanceID]
	if inst == nil {
		return b.tombstoneReply(c, what, b.state.DeletedInstances[c.instanceID], true)
	}
	op := inst.LastOperation
	if op == nil {
		return errorReply(http.StatusNotFound, "", "%s has no operation", what)
	}
	if rep := b.checkPollLocked(c, what, op); rep != nil {
		return *rep
	}
	if op.State == osb.StateInProgress {
		b.operationFaultLocked(c, op)
		if due(op, now) {
			b.completeInstanceOpLocked(inst, op, now)
		}
	}
	return b.lastOperationReply(op, b.catalog.plan(op.PlanID), true, now)
}

// tombstoneReply answers a poll for a deleted resource: 410 once a delete has
// finished, which the platform must take as success.
func (b *Broker) tombstoneReply(c *call, what string, t *tombstone, instanceFields bool) reply {
	if t == nil {
		return errorReply(http.StatusNotFound, "", "%s does not exist", what)
	}
	if op := t.LastOperation; op != nil && op.Kind != OpDeprovision && op.Kind != OpUnbind {
		// A provision halted by a sync delete still reports its failure.
		if rep := b.checkPollLocked(c, what, op); rep == nil {
			return b.lastOperationReply(op, nil, instanceFields, time.Now())
		}
	}
	return reply{status: http.StatusGone, body: []byte("{}")}
}

func (b *Broker) getInstance(c *call) reply {
	unlock := b.begin(c)
	defer unlock()
	inst := b.state.Instances[c.instanceID]
	if inst == nil {
		return errorReply(http.StatusNotFound, "", "instance %s does not exist", c.instanceID)
	}
	if svc := b.catalog.services[inst.ServiceID]; svc != nil && !svc.InstancesRetrievable {
		return errorReply(http.StatusBadRequest, "", "service %q does not declare instances_retrievable, so its instances cannot be fetched", svc.Name)
	}
	switch inst.State {
	case InstanceProvisioning:
		return errorReply(http.StatusNotFound, "", "instance %s is still being provisioned", inst.ID)
	case InstanceUpdating:
		return errorReply(http.StatusUnprocessableEntity, osb.ErrorCodeConcurrencyError, "instance %s is being updated and cannot be retrieved", inst.ID)
	}
	if s := c.query.Get("service_id"); s != "" && s != inst.ServiceID {
		b.violateLocked("fetch of instance %s names service_id %q; the instance has %q", inst.ID, s, inst.ServiceID)
	}
	resp := osb.GetInstanceResponse{
		ServiceID:       inst.ServiceID,
		PlanID:          inst.PlanID,
		DashboardURL:    inst.DashboardURL,
		MaintenanceInfo: inst.MaintenanceInfo,
		Metadata:        inst.Metadata,
	}
	if inst.Parameters != nil {
		resp.Parameters, _ = json.Marshal(inst.Parameters)
	}
	return jsonReply(http.StatusOK, resp)
}

// serveDashboard is the page behind dashboard_url: a read-only summary, so
// the demo's links lead somewhere. It shows no credentials.
func (b *Broker) serveDashboard(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/dashboard/")
	inst, ok := b.Instance(id)
	if !ok {
		http.Error(w, "no such instance", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><title>Instance %s</title><h1>Instance %s</h1><p>Service %s, plan %s: %s</p>\n",
		html.EscapeString(inst.ID), html.EscapeString(inst.ID), html.EscapeString(inst.ServiceID),
		html.EscapeString(inst.PlanID), html.EscapeString(string(inst.State)))
}
