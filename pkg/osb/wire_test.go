package osb

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const (
	oddInstanceID    = "inst/1 ä?#"
	oddInstancePath  = "inst%2F1%20%C3%A4%3F%23"
	oddBindingID     = "bind..ing%"
	oddBindingPath   = "bind..ing%25"
	oddOperation     = "op 1/+&=ü"
	oddOperationWire = "op%201%2F%2B%26%3D%C3%BC"
)

func k8sContext() *KubernetesContext {
	return &KubernetesContext{
		Platform: PlatformKubernetes, Namespace: "ns1", ClusterID: "cluster-1", InstanceName: "db",
		NamespaceAnnotations: map[string]string{"team": "a"}, InstanceAnnotations: map[string]string{"x": "y"},
	}
}

// wireCase is a call of the client and the request the spec says it sends.
type wireCase struct {
	name      string
	call      func(ctx context.Context, c Client) error
	method    string
	path      string
	query     string
	body      string // "" means no body
	answerFor string // body the broker answers with
}

var wireCases = []wireCase{
	{
		name:   "catalog",
		call:   func(ctx context.Context, c Client) error { _, err := c.GetCatalog(ctx, nil); return err },
		method: http.MethodGet, path: "/v2/catalog",
		answerFor: `{"services":[]}`,
	},
	{
		name: "provision with every field",
		call: func(ctx context.Context, c Client) error {
			_, err := c.Provision(ctx, &ProvisionRequest{
				InstanceID: oddInstanceID, AcceptsIncomplete: true,
				ServiceID: "svc", PlanID: "plan", Context: k8sContext(),
				OrganizationGUID: "org", SpaceGUID: "space",
				Parameters:      json.RawMessage(`{"size":10,"big":12345678901234567890}`),
				MaintenanceInfo: &MaintenanceInfo{Version: "1.2.3", Description: "not read by brokers"},
			})
			return err
		},
		method: http.MethodPut, path: "/v2/service_instances/" + oddInstancePath, query: "accepts_incomplete=true",
		body: `{"service_id":"svc","plan_id":"plan","organization_guid":"org","space_guid":"space",
			"context":{"platform":"kubernetes","namespace":"ns1","clusterid":"cluster-1","instance_name":"db",
				"namespace_annotations":{"team":"a"},"instance_annotations":{"x":"y"}},
			"parameters":{"size":10,"big":12345678901234567890},
			"maintenance_info":{"version":"1.2.3","description":"not read by brokers"}}`,
	},
	{
		name: "provision without accepts_incomplete omits the query",
		call: func(ctx context.Context, c Client) error {
			_, err := c.Provision(ctx, &ProvisionRequest{InstanceID: "i", ServiceID: "svc", PlanID: "plan", OrganizationGUID: "org", SpaceGUID: "space"})
			return err
		},
		method: http.MethodPut, path: "/v2/service_instances/i",
		body: `{"service_id":"svc","plan_id":"plan","organization_guid":"org","space_guid":"space"}`,
	},
	{
		name: "update sends only what is set",
		call: func(ctx context.Context, c Client) error {
			_, err := c.Update(ctx, &UpdateRequest{
				InstanceID: oddInstanceID, AcceptsIncomplete: true, ServiceID: "svc",
				Parameters: json.RawMessage(`{}`),
			})
			return err
		},
		method: http.MethodPatch, path: "/v2/service_instances/" + oddInstancePath, query: "accepts_incomplete=true",
		body: `{"service_id":"svc","parameters":{}}`,
	},
	{
		name: "update with plan change and previous values",
		call: func(ctx context.Context, c Client) error {
			_, err := c.Update(ctx, &UpdateRequest{
				InstanceID: "i", ServiceID: "svc", PlanID: "new", Context: k8sContext(),
				PreviousValues:  &PreviousValues{PlanID: "old", ServiceID: "svc", OrganizationID: "org", SpaceID: "space", MaintenanceInfo: &MaintenanceInfo{Version: "1.0.0"}},
				MaintenanceInfo: &MaintenanceInfo{Version: "2.0.0"},
			})
			return err
		},
		method: http.MethodPatch, path: "/v2/service_instances/i",
		body: `{"service_id":"svc","plan_id":"new",
			"context":{"platform":"kubernetes","namespace":"ns1","clusterid":"cluster-1","instance_name":"db",
				"namespace_annotations":{"team":"a"},"instance_annotations":{"x":"y"}},
			"previous_values":{"plan_id":"old","service_id":"svc","organization_id":"org","space_id":"space","maintenance_info":{"version":"1.0.0"}},
			"maintenance_info":{"version":"2.0.0"}}`,
	},
	{
		name: "deprovision",
		call: func(ctx context.Context, c Client) error {
			_, err := c.Deprovision(ctx, &DeprovisionRequest{InstanceID: oddInstanceID, ServiceID: "svc id", PlanID: "plan&id", AcceptsIncomplete: true})
			return err
		},
		method: http.MethodDelete, path: "/v2/service_instances/" + oddInstancePath,
		query: "service_id=svc%20id&plan_id=plan%26id&accepts_incomplete=true",
	},
	{
		name: "instance last operation with operation percent-encoded",
		call: func(ctx context.Context, c Client) error {
			_, err := c.LastOperation(ctx, &LastOperationRequest{InstanceID: oddInstanceID, ServiceID: "svc", PlanID: "old-plan", OperationKey: oddOperation})
			return err
		},
		method: http.MethodGet, path: "/v2/service_instances/" + oddInstancePath + "/last_operation",
		query:     "service_id=svc&plan_id=old-plan&operation=" + oddOperationWire,
		answerFor: `{"state":"in progress"}`,
	},
	{
		name: "instance last operation without optional parameters",
		call: func(ctx context.Context, c Client) error {
			_, err := c.LastOperation(ctx, &LastOperationRequest{InstanceID: "i"})
			return err
		},
		method: http.MethodGet, path: "/v2/service_instances/i/last_operation",
		answerFor: `{"state":"succeeded"}`,
	},
	{
		name: "get instance",
		call: func(ctx context.Context, c Client) error {
			_, err := c.GetInstance(ctx, &GetInstanceRequest{InstanceID: oddInstanceID, ServiceID: "svc", PlanID: "plan"})
			return err
		},
		method: http.MethodGet, path: "/v2/service_instances/" + oddInstancePath, query: "service_id=svc&plan_id=plan",
	},
	{
		name: "bind with every field",
		call: func(ctx context.Context, c Client) error {
			_, err := c.Bind(ctx, &BindRequest{
				InstanceID: oddInstanceID, BindingID: oddBindingID, AcceptsIncomplete: true,
				ServiceID: "svc", PlanID: "plan", Context: &KubernetesContext{Platform: PlatformKubernetes, Namespace: "ns1", ClusterID: "c"},
				BindResource: &BindResource{AppGUID: "ns-uid", Route: "r"}, AppGUID: "ns-uid",
				Parameters: json.RawMessage(`{"role":"ro"}`), PredecessorBindingID: "old-binding",
			})
			return err
		},
		method: http.MethodPut, path: "/v2/service_instances/" + oddInstancePath + "/service_bindings/" + oddBindingPath,
		query: "accepts_incomplete=true",
		body: `{"service_id":"svc","plan_id":"plan","context":{"platform":"kubernetes","namespace":"ns1","clusterid":"c"},
			"bind_resource":{"app_guid":"ns-uid","route":"r"},"app_guid":"ns-uid","parameters":{"role":"ro"},
			"predecessor_binding_id":"old-binding"}`,
	},
	{
		name: "unbind",
		call: func(ctx context.Context, c Client) error {
			_, err := c.Unbind(ctx, &UnbindRequest{InstanceID: oddInstanceID, BindingID: oddBindingID, ServiceID: "svc", PlanID: "plan"})
			return err
		},
		method: http.MethodDelete, path: "/v2/service_instances/" + oddInstancePath + "/service_bindings/" + oddBindingPath,
		query: "service_id=svc&plan_id=plan",
	},
	{
		name: "binding last operation",
		call: func(ctx context.Context, c Client) error {
			_, err := c.BindingLastOperation(ctx, &BindingLastOperationRequest{InstanceID: "i", BindingID: "b", ServiceID: "svc", PlanID: "plan", OperationKey: oddOperation})
			return err
		},
		method: http.MethodGet, path: "/v2/service_instances/i/service_bindings/b/last_operation",
		query:     "service_id=svc&plan_id=plan&operation=" + oddOperationWire,
		answerFor: `{"state":"succeeded"}`,
	},
	{
		name: "get binding",
		call: func(ctx context.Context, c Client) error {
			_, err := c.GetBinding(ctx, &GetBindingRequest{InstanceID: "i", BindingID: oddBindingID, ServiceID: "svc", PlanID: "plan"})
			return err
		},
		method: http.MethodGet, path: "/v2/service_instances/i/service_bindings/" + oddBindingPath, query: "service_id=svc&plan_id=plan",
	},
}

func TestWireFormat_EachEndpointSendsSpecRequest(t *testing.T) {
	tests := wireCases
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answer := tc.answerFor
			if answer == "" {
				answer = "{}"
			}
			b := newFakeBroker(t, reply(http.StatusOK, answer))
			c := newTestClient(t, b.URL)

			assert.NilError(t, tc.call(t.Context(), c))

			got := b.last(t)
			assert.Equal(t, got.Method, tc.method)
			assert.Equal(t, got.RawPath, tc.path)
			assert.Equal(t, got.RawQuery, tc.query)
			assert.Equal(t, got.Header.Get(HeaderAPIVersion), "2.17")
			assert.Equal(t, got.Header.Get("Accept"), "application/json")
			assert.Equal(t, got.Header.Get("Authorization"), "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:s3cret-pw")))
			_, err := uuid.Parse(got.Header.Get(HeaderRequestIdentity))
			assert.NilError(t, err, "request identity must be a UUID")
			assert.Equal(t, got.Header.Get(HeaderOriginatingIdentity), "", "no identity configured")
			if tc.body == "" {
				assert.Equal(t, len(got.Body), 0)
				assert.Equal(t, got.Header.Get("Content-Type"), "")
				return
			}
			assert.Equal(t, got.Header.Get("Content-Type"), "application/json")
			assertJSONEqual(t, got.Body, tc.body)
		})
	}
}

func TestWireFormat_OperationKeyRoundTripsThroughStandardQueryParsing(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusOK, `{"state":"in progress"}`))
	c := newTestClient(t, b.URL)

	_, err := c.LastOperation(t.Context(), &LastOperationRequest{InstanceID: "i", OperationKey: oddOperation})
	assert.NilError(t, err)

	q, err := url.ParseQuery(b.last(t).RawQuery)
	assert.NilError(t, err)
	assert.Equal(t, q.Get("operation"), oddOperation)
}

func TestWireFormat_BrokerURLPathPrefixIsKept(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusOK, `{"services":[]}`))
	c := newTestClient(t, b.URL+"/brokers/one/")

	_, err := c.GetCatalog(t.Context(), nil)
	assert.NilError(t, err)
	assert.Equal(t, b.last(t).RawPath, "/brokers/one/v2/catalog")
}

func TestRequestIdentity_IsFreshPerRequestUnlessCallerSetsOne(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusOK, `{"services":[]}`))
	c := newTestClient(t, b.URL)

	for range 2 {
		_, err := c.GetCatalog(t.Context(), nil)
		assert.NilError(t, err)
	}
	_, err := c.GetCatalog(t.Context(), &CatalogRequest{RequestOptions: RequestOptions{RequestIdentity: "my-request-id"}})
	assert.NilError(t, err)

	reqs := b.requests()
	first, second := reqs[0].Header.Get(HeaderRequestIdentity), reqs[1].Header.Get(HeaderRequestIdentity)
	assert.Assert(t, first != "" && second != "")
	assert.Assert(t, first != second, "each request needs its own identity")
	assert.Equal(t, reqs[2].Header.Get(HeaderRequestIdentity), "my-request-id")
}

func TestOriginatingIdentity_ConfiguredOverriddenOrOmitted(t *testing.T) {
	configured := &OriginatingIdentity{Username: "alice", UID: "u-1", Groups: []string{"dev"}, Extra: map[string][]string{"scope": {"a", "b"}}}
	override := &OriginatingIdentity{Username: "bob", UID: "u-2"}
	tests := []struct {
		name string
		cfg  *OriginatingIdentity
		opts RequestOptions
		want *OriginatingIdentity // nil: header absent
	}{
		{name: "none configured sends none"},
		{name: "client-level identity is sent", cfg: configured, want: configured},
		{name: "per-request identity overrides", cfg: configured, opts: RequestOptions{OriginatingIdentity: override},
			want: &OriginatingIdentity{Username: "bob", UID: "u-2", Groups: []string{}, Extra: map[string][]string{}}},
		{name: "omitted for non-user requests", cfg: configured, opts: RequestOptions{OmitOriginatingIdentity: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t, nil)
			c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.OriginatingIdentity = tc.cfg })

			_, err := c.Deprovision(t.Context(), &DeprovisionRequest{RequestOptions: tc.opts, InstanceID: "i", ServiceID: "s", PlanID: "p"})
			assert.NilError(t, err)

			header := b.last(t).Header.Get(HeaderOriginatingIdentity)
			if tc.want == nil {
				assert.Equal(t, header, "")
				return
			}
			platform, id, err := ParseOriginatingIdentity(header)
			assert.NilError(t, err)
			assert.Equal(t, platform, PlatformKubernetes)
			assert.DeepEqual(t, id, tc.want)
		})
	}
}

func TestOriginatingIdentity_HeaderHasAllFourProfileKeys(t *testing.T) {
	v, err := OriginatingIdentity{Username: "alice"}.HeaderValue()
	assert.NilError(t, err)
	raw, err := base64.StdEncoding.DecodeString(v[len("kubernetes "):])
	assert.NilError(t, err)
	assert.Equal(t, string(raw), `{"username":"alice","uid":"","groups":[],"extra":{}}`)
}

func TestParseOriginatingIdentity_RejectsMalformedHeaders(t *testing.T) {
	for _, h := range []string{"", "kubernetes", "kubernetes !!!", "kubernetes " + base64.StdEncoding.EncodeToString([]byte("[1]")), "cloudfoundry " + base64.StdEncoding.EncodeToString([]byte("{"))} {
		_, _, err := ParseOriginatingIdentity(h)
		assert.Assert(t, err != nil, "header %q", h)
	}
	platform, id, err := ParseOriginatingIdentity("cloudfoundry " + base64.StdEncoding.EncodeToString([]byte(`{"user_id":"x"}`)))
	assert.NilError(t, err)
	assert.Equal(t, platform, "cloudfoundry")
	assert.Assert(t, id == nil)
}

func TestAuth_BasicBearerOrNone(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*ClientConfig)
		want string
	}{
		{name: "basic", cfg: func(c *ClientConfig) { c.BasicAuth = &BasicAuth{Username: "u", Password: "p:w"} }, want: "Basic dTpwOnc="},
		{name: "bearer", cfg: func(c *ClientConfig) { c.BasicAuth, c.BearerToken = nil, "tok-123" }, want: "Bearer tok-123"},
		{name: "none", cfg: func(c *ClientConfig) { c.BasicAuth = nil }, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t, reply(http.StatusOK, `{"services":[]}`))
			c := newTestClient(t, b.URL, tc.cfg)
			_, err := c.GetCatalog(t.Context(), nil)
			assert.NilError(t, err)
			assert.Equal(t, b.last(t).Header.Get("Authorization"), tc.want)
		})
	}
}

func TestAuth_RefusedCredentialsAreReportedAs401(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusUnauthorized, `{"description":"bad credentials"}`))
	c := newTestClient(t, b.URL)

	_, err := c.GetCatalog(t.Context(), nil)

	assert.Assert(t, IsUnauthorizedError(err))
	assert.Assert(t, !IsNoAnswer(err))
}

func TestUserAgent_DefaultAndConfigured(t *testing.T) {
	b := newFakeBroker(t, reply(http.StatusOK, `{"services":[]}`))
	_, err := newTestClient(t, b.URL).GetCatalog(t.Context(), nil)
	assert.NilError(t, err)
	assert.Equal(t, b.last(t).Header.Get("User-Agent"), DefaultUserAgent)

	_, err = newTestClient(t, b.URL, func(c *ClientConfig) { c.UserAgent = "kubectl-catalog/1.0" }).GetCatalog(t.Context(), nil)
	assert.NilError(t, err)
	assert.Equal(t, b.last(t).Header.Get("User-Agent"), "kubectl-catalog/1.0")
}

func TestRequestValidation_RefusesToSendWhatTheSpecRequires(t *testing.T) {
	tests := []struct {
		name   string
		call   func(ctx context.Context, c Client) error
		reason string
	}{
		{"provision without ids", func(ctx context.Context, c Client) error {
			_, err := c.Provision(ctx, &ProvisionRequest{})
			return err
		}, "instance id is required; service_id is required; plan_id is required; organization_guid is required; space_guid is required"},
		{"provision with non-object parameters", func(ctx context.Context, c Client) error {
			_, err := c.Provision(ctx, &ProvisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p", OrganizationGUID: "o", SpaceGUID: "s", Parameters: json.RawMessage(`[1]`)})
			return err
		}, "parameters must be a JSON object"},
		{"provision with dot-dot id", func(ctx context.Context, c Client) error {
			_, err := c.Provision(ctx, &ProvisionRequest{InstanceID: "..", ServiceID: "s", PlanID: "p", OrganizationGUID: "o", SpaceGUID: "s"})
			return err
		}, `instance id ".." is not a usable id`},
		{"nil provision", func(ctx context.Context, c Client) error { _, err := c.Provision(ctx, nil); return err }, "request is nil"},
		{"update without service", func(ctx context.Context, c Client) error {
			_, err := c.Update(ctx, &UpdateRequest{InstanceID: "i"})
			return err
		}, "service_id is required"},
		{"deprovision without plan", func(ctx context.Context, c Client) error {
			_, err := c.Deprovision(ctx, &DeprovisionRequest{InstanceID: "i", ServiceID: "s"})
			return err
		}, "plan_id is required"},
		{"last operation without instance", func(ctx context.Context, c Client) error {
			_, err := c.LastOperation(ctx, &LastOperationRequest{})
			return err
		}, "instance id is required"},
		{"get instance with dot id", func(ctx context.Context, c Client) error {
			_, err := c.GetInstance(ctx, &GetInstanceRequest{InstanceID: "."})
			return err
		}, `instance id "." is not a usable id`},
		{"bind without binding id", func(ctx context.Context, c Client) error {
			_, err := c.Bind(ctx, &BindRequest{InstanceID: "i", ServiceID: "s", PlanID: "p"})
			return err
		}, "binding id is required"},
		{"unbind without service and plan", func(ctx context.Context, c Client) error {
			_, err := c.Unbind(ctx, &UnbindRequest{InstanceID: "i", BindingID: "b"})
			return err
		}, "service_id is required; plan_id is required"},
		{"binding last operation without binding", func(ctx context.Context, c Client) error {
			_, err := c.BindingLastOperation(ctx, &BindingLastOperationRequest{InstanceID: "i"})
			return err
		}, "binding id is required"},
		{"get binding without ids", func(ctx context.Context, c Client) error {
			_, err := c.GetBinding(ctx, &GetBindingRequest{})
			return err
		}, "instance id is required; binding id is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t, nil)
			c := newTestClient(t, b.URL)

			err := tc.call(t.Context(), c)

			var ie *InvalidRequestError
			assert.Assert(t, errors.As(err, &ie), "got %v", err)
			assert.Equal(t, ie.Reason, tc.reason)
			assert.Equal(t, len(b.requests()), 0, "nothing may reach the broker")
			assert.Assert(t, Decide(OpProvision, OutcomeOf(0, err)).Terminal)
		})
	}
}

func TestNewClient_RejectsInvalidConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  *ClientConfig
		want string
	}{
		{"nil", nil, "client config is nil"},
		{"empty URL", &ClientConfig{}, "broker URL is empty"},
		{"bad scheme", &ClientConfig{URL: "ftp://x"}, `scheme "ftp"`},
		{"no host", &ClientConfig{URL: "http://"}, "no host"},
		{"credentials in URL", &ClientConfig{URL: "https://u:hunter2@x"}, "contains credentials"},
		{"query in URL", &ClientConfig{URL: "https://x/?a=b"}, "query or fragment"},
		{"basic and bearer", &ClientConfig{URL: "https://x", BasicAuth: &BasicAuth{Username: "u"}, BearerToken: "t"}, "both basic auth and a bearer token"},
		{"basic without user", &ClientConfig{URL: "https://x", BasicAuth: &BasicAuth{Password: "p"}}, "needs a username"},
		{"bearer with newline", &ClientConfig{URL: "https://x", BearerToken: "a\nb"}, "line break"},
		{"bad CA", &ClientConfig{URL: "https://x", CAData: []byte("not pem")}, "no PEM certificate"},
		{"client and transport", &ClientConfig{URL: "https://x", HTTPClient: &http.Client{}, Transport: http.DefaultTransport}, "both HTTPClient and Transport"},
		{"transport with CA", &ClientConfig{URL: "https://x", Transport: http.DefaultTransport, InsecureSkipVerify: true}, "cannot be combined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(tc.cfg)
			assert.ErrorContains(t, err, tc.want)
			assert.Assert(t, is.Contains(err.Error(), "osb: "))
			assert.Assert(t, !strings.Contains(err.Error(), "hunter2"), "credentials leaked: %v", err)
		})
	}
}
