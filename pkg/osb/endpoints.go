package osb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ---------------------------------------------------------------------------
// Validation

type checker struct {
	op     string
	reason []string
}

func (v *checker) id(name, value string) {
	switch value {
	case "":
		v.reason = append(v.reason, name+" is required")
	case ".", "..":
		// Escaping leaves dots alone and servers resolve dot segments, so
		// such an id would address another resource.
		v.reason = append(v.reason, fmt.Sprintf("%s %q is not a usable id", name, value))
	}
}

func (v *checker) required(name, value string) {
	if value == "" {
		v.reason = append(v.reason, name+" is required")
	}
}

func (v *checker) object(name string, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		v.reason = append(v.reason, name+" must be a JSON object")
	}
}

func (v *checker) err() error {
	if len(v.reason) == 0 {
		return nil
	}
	return &InvalidRequestError{Op: v.op, Reason: strings.Join(v.reason, "; ")}
}

func nilRequest(op string) error {
	return &InvalidRequestError{Op: op, Reason: "request is nil"}
}

// ---------------------------------------------------------------------------
// Endpoints

func (c *client) GetCatalog(ctx context.Context, req *CatalogRequest) (*CatalogResponse, error) {
	cat := &CatalogResponse{Services: []Service{}}
	err := c.WalkCatalog(ctx, req, func(s *Service) error {
		cat.Services = append(cat.Services, *s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cat, nil
}

func (c *client) Provision(ctx context.Context, req *ProvisionRequest) (*ProvisionResponse, error) {
	if req == nil {
		return nil, nilRequest("Provision")
	}
	v := checker{op: "Provision"}
	v.id("instance id", req.InstanceID)
	v.required("service_id", req.ServiceID)
	v.required("plan_id", req.PlanID)
	v.required("organization_guid", req.OrganizationGUID)
	v.required("space_guid", req.SpaceGUID)
	v.object("parameters", req.Parameters)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Provision", method: http.MethodPut, path: instancePath(req.InstanceID),
		query: []queryParam{boolParam("accepts_incomplete", req.AcceptsIncomplete)},
		body:  req, opts: req.RequestOptions, maxBytes: c.maxResponse,
	}
	out, a, err := send[ProvisionResponse](ctx, c, cl, true, http.StatusOK, http.StatusCreated, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	out.DashboardURL = withoutURLPasswords(out.DashboardURL)
	out.StatusCode, out.Async = a.status, a.async()
	return out, nil
}

func (c *client) Update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error) {
	if req == nil {
		return nil, nilRequest("Update")
	}
	v := checker{op: "Update"}
	v.id("instance id", req.InstanceID)
	v.required("service_id", req.ServiceID)
	v.object("parameters", req.Parameters)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Update", method: http.MethodPatch, path: instancePath(req.InstanceID),
		query: []queryParam{boolParam("accepts_incomplete", req.AcceptsIncomplete)},
		body:  req, opts: req.RequestOptions, maxBytes: c.maxResponse,
	}
	out, a, err := send[UpdateResponse](ctx, c, cl, true, http.StatusOK, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	out.DashboardURL = withoutURLPasswords(out.DashboardURL)
	out.StatusCode, out.Async = a.status, a.async()
	return out, nil
}

func (c *client) Deprovision(ctx context.Context, req *DeprovisionRequest) (*DeprovisionResponse, error) {
	if req == nil {
		return nil, nilRequest("Deprovision")
	}
	v := checker{op: "Deprovision"}
	v.id("instance id", req.InstanceID)
	v.required("service_id", req.ServiceID)
	v.required("plan_id", req.PlanID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Deprovision", method: http.MethodDelete, path: instancePath(req.InstanceID),
		query: deleteQuery(req.ServiceID, req.PlanID, req.AcceptsIncomplete),
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	out, a, err := send[DeprovisionResponse](ctx, c, cl, true, http.StatusOK, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	out.StatusCode, out.Async = a.status, a.async()
	return out, nil
}

func (c *client) LastOperation(ctx context.Context, req *LastOperationRequest) (*LastOperationResponse, error) {
	if req == nil {
		return nil, nilRequest("LastOperation")
	}
	v := checker{op: "LastOperation"}
	v.id("instance id", req.InstanceID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "LastOperation", method: http.MethodGet, path: instancePath(req.InstanceID) + "/last_operation",
		query: []queryParam{{"service_id", req.ServiceID}, {"plan_id", req.PlanID}, {"operation", req.OperationKey}},
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	return c.lastOperation(ctx, cl)
}

func (c *client) BindingLastOperation(ctx context.Context, req *BindingLastOperationRequest) (*LastOperationResponse, error) {
	if req == nil {
		return nil, nilRequest("BindingLastOperation")
	}
	v := checker{op: "BindingLastOperation"}
	v.id("instance id", req.InstanceID)
	v.id("binding id", req.BindingID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "BindingLastOperation", method: http.MethodGet, path: bindingPath(req.InstanceID, req.BindingID) + "/last_operation",
		query: []queryParam{{"service_id", req.ServiceID}, {"plan_id", req.PlanID}, {"operation", req.OperationKey}},
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	return c.lastOperation(ctx, cl)
}

func (c *client) lastOperation(ctx context.Context, cl call) (*LastOperationResponse, error) {
	a, err := c.do(ctx, cl, http.StatusOK)
	if err != nil {
		return nil, err
	}
	lo, err := DecodeLastOperation(a.body)
	if err != nil {
		return nil, c.malformed(cl, a, err)
	}
	lo.RetryAfter = ParseRetryAfter(a.header.Get(HeaderRetryAfter), c.now())
	lo.Description = withoutURLPasswords(lo.Description)
	return lo, nil
}

func (c *client) GetInstance(ctx context.Context, req *GetInstanceRequest) (*GetInstanceResponse, error) {
	if req == nil {
		return nil, nilRequest("GetInstance")
	}
	v := checker{op: "GetInstance"}
	v.id("instance id", req.InstanceID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "GetInstance", method: http.MethodGet, path: instancePath(req.InstanceID),
		query: []queryParam{{"service_id", req.ServiceID}, {"plan_id", req.PlanID}},
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	out, _, err := send[GetInstanceResponse](ctx, c, cl, false, http.StatusOK)
	if err != nil {
		return nil, err
	}
	out.DashboardURL = withoutURLPasswords(out.DashboardURL)
	return out, nil
}

func (c *client) Bind(ctx context.Context, req *BindRequest) (*BindResponse, error) {
	if req == nil {
		return nil, nilRequest("Bind")
	}
	v := checker{op: "Bind"}
	v.id("instance id", req.InstanceID)
	v.id("binding id", req.BindingID)
	v.required("service_id", req.ServiceID)
	v.required("plan_id", req.PlanID)
	v.object("parameters", req.Parameters)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Bind", method: http.MethodPut, path: bindingPath(req.InstanceID, req.BindingID),
		query: []queryParam{boolParam("accepts_incomplete", req.AcceptsIncomplete)},
		body:  req, opts: req.RequestOptions, maxBytes: c.maxResponse,
	}
	a, err := c.do(ctx, cl, http.StatusOK, http.StatusCreated, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	out, err := DecodeBindResponse(a.body)
	if err != nil {
		return nil, c.malformed(cl, a, err)
	}
	out.StatusCode, out.Async = a.status, a.async()
	return out, nil
}

func (c *client) Unbind(ctx context.Context, req *UnbindRequest) (*UnbindResponse, error) {
	if req == nil {
		return nil, nilRequest("Unbind")
	}
	v := checker{op: "Unbind"}
	v.id("instance id", req.InstanceID)
	v.id("binding id", req.BindingID)
	v.required("service_id", req.ServiceID)
	v.required("plan_id", req.PlanID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Unbind", method: http.MethodDelete, path: bindingPath(req.InstanceID, req.BindingID),
		query: deleteQuery(req.ServiceID, req.PlanID, req.AcceptsIncomplete),
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	out, a, err := send[UnbindResponse](ctx, c, cl, true, http.StatusOK, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	out.StatusCode, out.Async = a.status, a.async()
	return out, nil
}

func (c *client) GetBinding(ctx context.Context, req *GetBindingRequest) (*GetBindingResponse, error) {
	if req == nil {
		return nil, nilRequest("GetBinding")
	}
	v := checker{op: "GetBinding"}
	v.id("instance id", req.InstanceID)
	v.id("binding id", req.BindingID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "GetBinding", method: http.MethodGet, path: bindingPath(req.InstanceID, req.BindingID),
		query: []queryParam{{"service_id", req.ServiceID}, {"plan_id", req.PlanID}},
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	out, _, err := send[GetBindingResponse](ctx, c, cl, false, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// send does cl and decodes the accepted answer's body, an object (empty counts as
// {} where emptyOK), into a new T.
func send[T any](ctx context.Context, c *client, cl call, emptyOK bool, ok ...int) (*T, *answer, error) {
	a, err := c.do(ctx, cl, ok...)
	if err != nil {
		return nil, nil, err
	}
	var out T
	if err := decodeObject(a.body, emptyOK, &out); err != nil {
		return nil, nil, c.malformed(cl, a, err)
	}
	return &out, a, nil
}

// async reports whether the broker accepted the call to finish it later.
func (a *answer) async() bool { return a.status == http.StatusAccepted }

// deleteQuery is the query of the two deletes, Deprovision and Unbind.
func deleteQuery(serviceID, planID string, acceptsIncomplete bool) []queryParam {
	return []queryParam{
		{"service_id", serviceID}, {"plan_id", planID},
		boolParam("accepts_incomplete", acceptsIncomplete),
	}
}
