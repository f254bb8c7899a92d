package osb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// endpointCall invokes one endpoint and reports the HTTP status of a
// successful answer (200 for endpoints whose response has no status field)
// and whether it was async.
type endpointCall func(ctx context.Context, c Client) (status int, async bool, err error)

func endpointCalls() map[string]endpointCall {
	return map[string]endpointCall{
		"catalog": func(ctx context.Context, c Client) (int, bool, error) {
			_, err := c.GetCatalog(ctx, nil)
			return http.StatusOK, false, err
		},
		"provision": func(ctx context.Context, c Client) (int, bool, error) {
			r, err := c.Provision(ctx, &ProvisionRequest{InstanceID: "i", AcceptsIncomplete: true, ServiceID: "s", PlanID: "p", OrganizationGUID: "o", SpaceGUID: "sp"})
			if err != nil {
				return 0, false, err
			}
			return r.StatusCode, r.Async, nil
		},
		"update": func(ctx context.Context, c Client) (int, bool, error) {
			r, err := c.Update(ctx, &UpdateRequest{InstanceID: "i", AcceptsIncomplete: true, ServiceID: "s"})
			if err != nil {
				return 0, false, err
			}
			return r.StatusCode, r.Async, nil
		},
		"deprovision": func(ctx context.Context, c Client) (int, bool, error) {
			r, err := c.Deprovision(ctx, &DeprovisionRequest{InstanceID: "i", AcceptsIncomplete: true, ServiceID: "s", PlanID: "p"})
			if err != nil {
				return 0, false, err
			}
			return r.StatusCode, r.Async, nil
		},
		"last operation": func(ctx context.Context, c Client) (int, bool, error) {
			_, err := c.LastOperation(ctx, &LastOperationRequest{InstanceID: "i", OperationKey: "op"})
			return http.StatusOK, false, err
		},
		"get instance": func(ctx context.Context, c Client) (int, bool, error) {
			_, err := c.GetInstance(ctx, &GetInstanceRequest{InstanceID: "i"})
			return http.StatusOK, false, err
		},
		"bind": func(ctx context.Context, c Client) (int, bool, error) {
			r, err := c.Bind(ctx, &BindRequest{InstanceID: "i", BindingID: "b", AcceptsIncomplete: true, ServiceID: "s", PlanID: "p"})
			if err != nil {
				return 0, false, err
			}
			return r.StatusCode, r.Async, nil
		},
		"unbind": func(ctx context.Context, c Client) (int, bool, error) {
			r, err := c.Unbind(ctx, &UnbindRequest{InstanceID: "i", BindingID: "b", AcceptsIncomplete: true, ServiceID: "s", PlanID: "p"})
			if err != nil {
				return 0, false, err
			}
			return r.StatusCode, r.Async, nil
		},
		"binding last operation": func(ctx context.Context, c Client) (int, bool, error) {
			_, err := c.BindingLastOperation(ctx, &BindingLastOperationRequest{InstanceID: "i", BindingID: "b"})
			return http.StatusOK, false, err
		},
		"get binding": func(ctx context.Context, c Client) (int, bool, error) {
			_, err := c.GetBinding(ctx, &GetBindingRequest{InstanceID: "i", BindingID: "b"})
			return http.StatusOK, false, err
		},
	}
}

type errCheck struct {
	name string
	fn   func(error) bool
}

func errBody(code string) string {
	return fmt.Sprintf(`{"error":%q,"description":"broker specific words"}`, code)
}

// The checks an error answer passes or fails.
var (
	httpErr      = errCheck{"HTTPStatusError", func(err error) bool { _, ok := AsHTTPStatusError(err); return ok }}
	goneErr      = errCheck{"IsGoneError", IsGoneError}
	conflictErr  = errCheck{"IsConflictError", IsConflictError}
	notFoundErr  = errCheck{"IsNotFoundError", IsNotFoundError}
	badReqErr    = errCheck{"IsBadRequestError", IsBadRequestError}
	asyncReqErr  = errCheck{"IsAsyncRequiredError", IsAsyncRequiredError}
	concErr      = errCheck{"IsConcurrencyError", IsConcurrencyError}
	reqAppErr    = errCheck{"IsRequiresAppError", IsRequiresAppError}
	maintErr     = errCheck{"IsMaintenanceInfoConflictError", IsMaintenanceInfoConflictError}
	malformedErr = errCheck{"IsMalformedResponseError", IsMalformedResponseError}
)

// statusCase is an answer of an endpoint and the checks its error passes (none: a
// success).
type statusCase struct {
	endpoint string
	status   int
	body     string
	async    bool       // for successes
	want     []errCheck // empty: success expected
}

var statusCases = []statusCase{
	// 1.1 catalog
	{endpoint: "catalog", status: 200, body: `{"services":[]}`},
	{endpoint: "catalog", status: 401, want: []errCheck{httpErr}},
	{endpoint: "catalog", status: 412, body: `{"description":"unsupported version"}`, want: []errCheck{httpErr}},
	{endpoint: "catalog", status: 400, want: []errCheck{httpErr, badReqErr}},

	// 1.2 provision
	{endpoint: "provision", status: 200, body: `{}`},
	{endpoint: "provision", status: 201, body: `{"dashboard_url":"https://d"}`},
	{endpoint: "provision", status: 202, body: `{"operation":"op"}`, async: true},
	{endpoint: "provision", status: 400, body: errBody("BadParams"), want: []errCheck{httpErr, badReqErr}},
	{endpoint: "provision", status: 409, body: `{}`, want: []errCheck{httpErr, conflictErr}},
	{endpoint: "provision", status: 422, body: errBody(ErrorCodeAsyncRequired), want: []errCheck{httpErr, asyncReqErr}},
	{endpoint: "provision", status: 422, body: errBody(ErrorCodeMaintenanceInfoConflict), want: []errCheck{httpErr, maintErr}},
	{endpoint: "provision", status: 500, body: "<html>oops</html>", want: []errCheck{httpErr}},
	{endpoint: "provision", status: 204, want: []errCheck{httpErr}},
	{endpoint: "provision", status: 401, want: []errCheck{httpErr}},
	{endpoint: "provision", status: 412, want: []errCheck{httpErr}},

	// 1.3 update
	{endpoint: "update", status: 200, body: `{}`},
	{endpoint: "update", status: 200, body: `{"dashboard_url":"https://d","metadata":{"labels":{"a":"b"}}}`},
	{endpoint: "update", status: 202, body: `{"operation":"op"}`, async: true},
	{endpoint: "update", status: 400, want: []errCheck{httpErr, badReqErr}},
	{endpoint: "update", status: 422, body: `{"error":"PlanChangeNotSupported","instance_usable":true,"update_repeatable":false}`, want: []errCheck{httpErr}},
	{endpoint: "update", status: 422, body: errBody(ErrorCodeAsyncRequired), want: []errCheck{httpErr, asyncReqErr}},
	{endpoint: "update", status: 422, body: errBody(ErrorCodeMaintenanceInfoConflict), want: []errCheck{httpErr, maintErr}},
	{endpoint: "update", status: 201, body: `{}`, want: []errCheck{httpErr}},
	{endpoint: "update", status: 500, want: []errCheck{httpErr}},

	// 1.4 deprovision
	{endpoint: "deprovision", status: 200, body: `{}`},
	{endpoint: "deprovision", status: 200, body: ``},
	{endpoint: "deprovision", status: 202, body: `{"operation":"op"}`, async: true},
	{endpoint: "deprovision", status: 400, want: []errCheck{httpErr, badReqErr}},
	{endpoint: "deprovision", status: 410, body: `{}`, want: []errCheck{httpErr, goneErr}},
	{endpoint: "deprovision", status: 410, body: ``, want: []errCheck{httpErr, goneErr}},
	{endpoint: "deprovision", status: 422, body: errBody(ErrorCodeAsyncRequired), want: []errCheck{httpErr, asyncReqErr}},
	{endpoint: "deprovision", status: 422, body: errBody(ErrorCodeConcurrencyError), want: []errCheck{httpErr, concErr}},
	{endpoint: "deprovision", status: 500, want: []errCheck{httpErr}},

	// 1.5 instance last operation
	{endpoint: "last operation", status: 200, body: `{"state":"in progress","description":"50%"}`},
	{endpoint: "last operation", status: 200, body: `{"state":"succeeded"}`},
	{endpoint: "last operation", status: 200, body: `{"state":"failed","instance_usable":false,"update_repeatable":true}`},
	{endpoint: "last operation", status: 400, want: []errCheck{httpErr, badReqErr}},
	{endpoint: "last operation", status: 404, want: []errCheck{httpErr, notFoundErr}},
	{endpoint: "last operation", status: 410, want: []errCheck{httpErr, goneErr}},
	{endpoint: "last operation", status: 500, want: []errCheck{httpErr}},

	// 1.6 get instance
	{endpoint: "get instance", status: 200, body: `{"service_id":"s","plan_id":"p"}`},
	{endpoint: "get instance", status: 404, want: []errCheck{httpErr, notFoundErr}},
	{endpoint: "get instance", status: 422, body: errBody(ErrorCodeConcurrencyError), want: []errCheck{httpErr, concErr}},
	{endpoint: "get instance", status: 500, want: []errCheck{httpErr}},

	// 1.7 bind
	{endpoint: "bind", status: 200, body: `{"credentials":{"a":"b"}}`},
	{endpoint: "bind", status: 201, body: `{"credentials":{"a":"b"}}`},
	{endpoint: "bind", status: 201, body: ``},
	{endpoint: "bind", status: 202, body: `{"operation":"op"}`, async: true},
	{endpoint: "bind", status: 400, want: []errCheck{httpErr, badReqErr}},
	{endpoint: "bind", status: 409, want: []errCheck{httpErr, conflictErr}},
	{endpoint: "bind", status: 422, body: errBody(ErrorCodeRequiresApp), want: []errCheck{httpErr, reqAppErr}},
	{endpoint: "bind", status: 422, body: errBody(ErrorCodeConcurrencyError), want: []errCheck{httpErr, concErr}},
	{endpoint: "bind", status: 422, body: errBody(ErrorCodeAsyncRequired), want: []errCheck{httpErr, asyncReqErr}},
	{endpoint: "bind", status: 500, want: []errCheck{httpErr}},

	// 1.8 unbind
	{endpoint: "unbind", status: 200, body: `{}`},
	{endpoint: "unbind", status: 200, body: ``},
	{endpoint: "unbind", status: 202, body: `{"operation":"op"}`, async: true},
	{endpoint: "unbind", status: 400, want: []errCheck{httpErr, badReqErr}},
	{endpoint: "unbind", status: 410, want: []errCheck{httpErr, goneErr}},
	{endpoint: "unbind", status: 422, body: errBody(ErrorCodeAsyncRequired), want: []errCheck{httpErr, asyncReqErr}},
	{endpoint: "unbind", status: 422, body: errBody(ErrorCodeConcurrencyError), want: []errCheck{httpErr, concErr}},
	{endpoint: "unbind", status: 500, want: []errCheck{httpErr}},

	// 1.9 binding last operation
	{endpoint: "binding last operation", status: 200, body: `{"state":"succeeded","description":"done"}`},
	{endpoint: "binding last operation", status: 400, want: []errCheck{httpErr, badReqErr}},
	{endpoint: "binding last operation", status: 404, want: []errCheck{httpErr, notFoundErr}},
	{endpoint: "binding last operation", status: 410, want: []errCheck{httpErr, goneErr}},
	{endpoint: "binding last operation", status: 500, want: []errCheck{httpErr}},

	// 1.10 get binding
	{endpoint: "get binding", status: 200, body: `{"credentials":{"a":"b"},"parameters":{"x":1}}`},
	{endpoint: "get binding", status: 404, want: []errCheck{httpErr, notFoundErr}},
	{endpoint: "get binding", status: 500, want: []errCheck{httpErr}},
}

// TestStatusCodes_EveryCodeTheSpecListsPerEndpoint walks the status tables
// of checklist section 1, endpoint by endpoint.
func TestStatusCodes_EveryCodeTheSpecListsPerEndpoint(t *testing.T) {
	tests := statusCases
	calls := endpointCalls()
	all := []errCheck{httpErr, goneErr, conflictErr, notFoundErr, badReqErr, asyncReqErr, concErr, reqAppErr, maintErr, malformedErr}
	for _, tc := range tests {
		name := fmt.Sprintf("%s/%d", tc.endpoint, tc.status)
		if tc.body != "" {
			name += "/" + tc.body
		} else {
			name += "/empty body"
		}
		t.Run(name, func(t *testing.T) {
			b := newFakeBroker(t, reply(tc.status, tc.body))
			c := newTestClient(t, b.URL)

			status, async, err := calls[tc.endpoint](t.Context(), c)

			if len(tc.want) == 0 {
				assert.NilError(t, err)
				assert.Equal(t, status, tc.status)
				assert.Equal(t, async, tc.async)
				return
			}
			assert.Assert(t, err != nil)
			assert.Equal(t, StatusCode(err), tc.status)
			for _, check := range all {
				wanted := false
				for _, w := range tc.want {
					wanted = wanted || w.name == check.name
				}
				assert.Equal(t, check.fn(err), wanted, "%s(%v)", check.name, err)
			}
			assert.Assert(t, !IsNoAnswer(err) && !IsTimeout(err))
			assert.Assert(t, is.Contains(err.Error(), fmt.Sprintf("broker answered %d", tc.status)))
		})
	}
}

func TestErrorCodes_MatchOnCodeNeverOnDescription(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(error) bool
		want  bool
	}{
		{"concurrency with brokerapi's own description", `{"error":"ConcurrencyError","description":"instance is being updated and cannot be retrieved"}`, IsConcurrencyError, true},
		{"async required without description", `{"error":"AsyncRequired"}`, IsAsyncRequiredError, true},
		{"requires app with other description", `{"error":"RequiresApp","description":"no app"}`, IsRequiresAppError, true},
		{"maintenance conflict", `{"error":"MaintenanceInfoConflict","description":"x"}`, IsMaintenanceInfoConflictError, true},
		{"description naming the code is not the code", `{"description":"AsyncRequired"}`, IsAsyncRequiredError, false},
		{"brokerapi app guid error without RequiresApp key", `{"description":"app_guid is a required field but was not provided"}`, IsRequiresAppError, false},
		{"code of the wrong type is ignored", `{"error":42}`, IsConcurrencyError, false},
		{"codes are case-sensitive", `{"error":"concurrencyerror"}`, IsConcurrencyError, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t, reply(http.StatusUnprocessableEntity, tc.body))
			_, err := newTestClient(t, b.URL).Bind(t.Context(), &BindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})
			assert.Equal(t, tc.check(err), tc.want, "%v", err)
		})
	}
}

func TestHTTPStatusError_CarriesErrorBodyFields(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusBadRequest, `{"error":"Invalid","description":"size too big","instance_usable":false,"update_repeatable":true,"extra":1}`))
	_, err := newTestClient(t, b.URL).Update(t.Context(), &UpdateRequest{InstanceID: "db-1", ServiceID: "s"})

	he, ok := AsHTTPStatusError(err)
	assert.Assert(t, ok)
	assert.DeepEqual(t, *he, HTTPStatusError{
		Method: "PATCH", Path: "/v2/service_instances/db-1", StatusCode: 400,
		ErrorCode: "Invalid", Description: "size too big",
		InstanceUsable: ptr(false), UpdateRepeatable: ptr(true),
	})
	assert.Equal(t, err.Error(), "osb: PATCH /v2/service_instances/db-1: broker answered 400 Bad Request: Invalid: size too big")
}

func TestHTTPStatusError_NonJSONBodyShowsAnExcerpt(t *testing.T) {
	page := "<html>\n<body>" + strings.Repeat("x", 1000) + "</body></html>"
	b := newFakeBroker(t, reply(http.StatusBadGateway, page))
	_, err := newTestClient(t, b.URL).GetCatalog(t.Context(), nil)

	he, ok := AsHTTPStatusError(err)
	assert.Assert(t, ok)
	assert.Equal(t, he.ErrorCode, "")
	assert.Equal(t, len(he.BodyExcerpt), excerptLimit)
	assert.Assert(t, !strings.ContainsAny(he.BodyExcerpt, "\n\r"))
	assert.Assert(t, is.Contains(err.Error(), `broker answered 502 Bad Gateway: body "<html> <body>xxx`))
}

func TestErrors_MentionMethodAndPathButNeverCredentials(t *testing.T) {
	const secret = "top-secret-password"
	for _, status := range []int{400, 500} {
		b := newFakeBroker(t, reply(status, `{"description":"nope"}`))
		c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.BasicAuth = &BasicAuth{Username: "alice", Password: secret} })
		_, err := c.GetBinding(t.Context(), &GetBindingRequest{InstanceID: "i-1", BindingID: "b-1", ServiceID: "s", PlanID: "p"})
		assert.ErrorContains(t, err, "GET /v2/service_instances/i-1/service_bindings/b-1:")
		assert.Assert(t, !strings.Contains(err.Error(), secret))
		assert.Assert(t, !strings.Contains(err.Error(), "alice"))
	}
	// No answer at all: the transport error must not repeat the URL either.
	b := newFakeBroker(t, nil)
	url := b.URL
	b.Close()
	c := newTestClient(t, url, func(cfg *ClientConfig) { cfg.BearerToken, cfg.BasicAuth = secret, nil })
	_, err := c.GetCatalog(t.Context(), nil)
	assert.ErrorContains(t, err, "GET /v2/catalog:")
	assert.Assert(t, !strings.Contains(err.Error(), secret))
	assert.Assert(t, !strings.Contains(err.Error(), "?"), "no query or URL in %v", err)
}

func TestMalformedResponses_SuccessStatusWithUndecodableBody(t *testing.T) {
	tests := []struct {
		endpoint string
		status   int
		body     string
	}{
		{"catalog", 200, `not json`},
		{"catalog", 200, `{}`},
		{"catalog", 200, `{"services":{}}`},
		{"catalog", 200, `{"services":[]} trailing`},
		{"provision", 201, `<html>`},
		{"provision", 202, `{"operation":5}`},
		{"provision", 200, `null`},
		{"update", 200, `[]`},
		{"deprovision", 200, `"ok"`},
		{"deprovision", 202, `{"operation":`},
		{"last operation", 200, `{}`},
		{"last operation", 200, `{"state":"done"}`},
		{"last operation", 200, ``},
		{"get instance", 200, ``},
		{"bind", 201, `{"credentials":"secret"}`},
		{"bind", 200, `{"endpoints":[{"host":"h","ports":[443]}]}`},
		{"unbind", 200, `xx`},
		{"binding last operation", 200, `{"state":1}`},
		{"get binding", 200, `{"volume_mounts":{}}`},
	}
	calls := endpointCalls()
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d/%s", tc.endpoint, tc.status, tc.body), func(t *testing.T) {
			b := newFakeBroker(t, reply(tc.status, tc.body))
			_, _, err := calls[tc.endpoint](t.Context(), newTestClient(t, b.URL))

			var me *MalformedResponseError
			assert.Assert(t, errors.As(err, &me), "got %v", err)
			assert.Equal(t, me.StatusCode, tc.status)
			assert.Equal(t, StatusCode(err), tc.status)
			assert.Assert(t, is.Contains(err.Error(), fmt.Sprintf("malformed %d answer", tc.status)))
		})
	}
}

func TestUnexpected2xx_IsReportedWithItsStatus(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusNoContent, ""))
	_, err := newTestClient(t, b.URL).Bind(t.Context(), &BindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})
	assert.Equal(t, StatusCode(err), http.StatusNoContent)
	a := Decide(OpBind, OutcomeOf(0, err))
	assert.Assert(t, a.OrphanMitigation)
}
