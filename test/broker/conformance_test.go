package broker

import (
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Section 8 of the project's OSB checklist, "Broker-side conformance the test
// broker must show", walked row by row over real HTTP.

type endpoint struct {
	name, method, path string
	body               any
}

func allEndpoints() []endpoint {
	pg, hobby := DemoPostgresServiceID, DemoPostgresHobbyPlanID
	return []endpoint{
		{"catalog", http.MethodGet, "/v2/catalog", nil},
		{"provision", http.MethodPut, instancePath("i1"), provisionBody(pg, hobby, nil)},
		{"update", http.MethodPatch, instancePath("i1"), map[string]any{"service_id": pg}},
		{"deprovision", http.MethodDelete, deletePath(instancePath("i1"), pg, hobby, false), nil},
		{"get instance", http.MethodGet, instancePath("i1"), nil},
		{"last operation", http.MethodGet, lastOpPath(instancePath("i1"), "", "", ""), nil},
		{"bind", http.MethodPut, bindingPath("i1", "b1"), bindBody(pg, hobby, nil)},
		{"unbind", http.MethodDelete, deletePath(bindingPath("i1", "b1"), pg, hobby, false), nil},
		{"get binding", http.MethodGet, bindingPath("i1", "b1"), nil},
		{"binding last operation", http.MethodGet, lastOpPath(bindingPath("i1", "b1"), "", "", ""), nil},
	}
}

func TestEveryEndpoint_WithoutAcceptableVersionHeader_Answers412(t *testing.T) {
	b, c := startBroker(t)
	versions := []struct {
		name string
		opt  reqOpt
		want int
	}{
		{"missing", withoutVersion(), http.StatusPreconditionFailed},
		{"major 3", withVersion("3.0"), http.StatusPreconditionFailed},
		{"malformed", withVersion("two"), http.StatusPreconditionFailed},
		{"no minor", withVersion("2"), http.StatusPreconditionFailed},
	}
	for _, ep := range allEndpoints() {
		for _, v := range versions {
			t.Run(ep.name+"/"+v.name, func(t *testing.T) {
				r := c.do(ep.method, ep.path, ep.body, v.opt).expect(t, v.want)
				assert.Check(t, is.Contains(r.errBody(t).Description, "2.17"))
			})
		}
	}
	assert.Check(t, is.Len(b.Instances(), 0), "a 412 must leave the broker unchanged")
}

func TestEveryEndpoint_OlderMinorVersion_IsAccepted(t *testing.T) {
	_, c := startBroker(t)
	c.do(http.MethodGet, "/v2/catalog", nil, withVersion("2.13")).expect(t, http.StatusOK)
}

func TestEveryEndpoint_WithBadOrMissingAuth_Answers401(t *testing.T) {
	b, c := startBroker(t)
	auths := []struct {
		name string
		opt  reqOpt
	}{
		{"none", withoutAuth()},
		{"wrong password", withBasic(testUser, "nope")},
		{"wrong user", withBasic("someone", testPass)},
		{"wrong bearer", withBearer("nope")},
		{"bearer scheme with basic secret", withHeader("Authorization", "Bearer "+testPass)},
	}
	for _, ep := range allEndpoints() {
		for _, a := range auths {
			t.Run(ep.name+"/"+a.name, func(t *testing.T) {
				r := c.do(ep.method, ep.path, ep.body, a.opt).expect(t, http.StatusUnauthorized)
				assert.Check(t, r.header.Get("WWW-Authenticate") != "")
			})
		}
	}
	assert.Check(t, is.Len(b.Instances(), 0), "a 401 must leave the broker unchanged")
}

func TestAuth_BasicAndBearerAreBothAccepted(t *testing.T) {
	_, c := startBroker(t)
	c.do(http.MethodGet, "/v2/catalog", nil, withBasic(testUser, testPass)).expect(t, http.StatusOK)
	c.do(http.MethodGet, "/v2/catalog", nil, withBearer(testToken)).expect(t, http.StatusOK)
	c.do(http.MethodGet, "/v2/catalog", nil, withHeader("Authorization", "bearer "+testToken)).expect(t, http.StatusOK)
}

func TestAuth_BearerOnlyBroker_RefusesBasic(t *testing.T) {
	_, c := startBroker(t, func(o *Options) { o.Username, o.Password = "", "" })
	c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusUnauthorized)
	c.do(http.MethodGet, "/v2/catalog", nil, withBearer(testToken)).expect(t, http.StatusOK)
}

func TestCatalog_Answers200WithServicesAndWithoutBrokerBehaviour(t *testing.T) {
	_, c := startBroker(t)
	r := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	var cat osb.CatalogResponse
	r.decode(t, &cat)
	assert.Check(t, is.Len(cat.Services, 4))
	assert.Check(t, !strings.Contains(string(r.body), BehaviourKey), "behaviour must not be served")
	assert.Check(t, is.Equal(r.header.Get("Content-Type"), "application/json"))

	etag := r.header.Get("ETag")
	assert.Assert(t, etag != "")
	c.do(http.MethodGet, "/v2/catalog", nil, withHeader("If-None-Match", etag)).expect(t, http.StatusNotModified)
}

func TestCatalog_EmptyCatalog_Answers200WithEmptyList(t *testing.T) {
	_, c := startBroker(t, func(o *Options) { o.Catalog = &Catalog{} })
	r := c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	assert.Equal(t, strings.TrimSpace(string(r.body)), `{"services":[]}`)
}

func TestRequestIdentity_IsEchoedOnEveryAnswer(t *testing.T) {
	_, c := startBroker(t)
	for _, tc := range []struct {
		name string
		opts []reqOpt
		want int
	}{
		{"success", nil, http.StatusOK},
		{"401", []reqOpt{withoutAuth()}, http.StatusUnauthorized},
		{"412", []reqOpt{withoutVersion()}, http.StatusPreconditionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append(tc.opts, withHeader(osb.HeaderRequestIdentity, "req-"+tc.name))
			r := c.do(http.MethodGet, "/v2/catalog", nil, opts...).expect(t, tc.want)
			assert.Equal(t, r.header.Get(osb.HeaderRequestIdentity), "req-"+tc.name)
		})
	}
}

func TestOriginatingIdentity_IsDecodedAndRecorded(t *testing.T) {
	b, c := startBroker(t)
	user := map[string]any{"username": "alice", "uid": "u-1", "groups": []string{"dev"}, "extra": map[string][]string{"team": {"a"}}}
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil),
		withHeader(osb.HeaderOriginatingIdentity, originatingIdentity("kubernetes", user))).expect(t, http.StatusCreated)

	reqs := b.RequestsFor(OpProvision)
	assert.Assert(t, is.Len(reqs, 1))
	k, ok := reqs[0].OriginatingIdentity.Kubernetes()
	assert.Assert(t, ok)
	assert.Check(t, is.Equal(k.Username, "alice"))
	assert.Check(t, is.DeepEqual(k.Groups, []string{"dev"}))
	inst, _ := b.Instance("i1")
	assert.Check(t, is.Equal(inst.OriginatingIdentity.Platform, "kubernetes"))
	assert.Check(t, is.Len(b.Violations(), 0))
}

func TestOriginatingIdentity_PlatformDifferentFromContext_IsAViolation(t *testing.T) {
	b, c := startBroker(t)
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, nil),
		withHeader(osb.HeaderOriginatingIdentity, originatingIdentity("cloudfoundry", map[string]any{"user_id": "x"}))).expect(t, http.StatusCreated)
	assert.Assert(t, is.Len(b.Violations(), 1))
	assert.Check(t, is.Contains(b.Violations()[0], "context.platform"))
}

func TestRouting_UnknownPathAndMethod(t *testing.T) {
	_, c := startBroker(t)
	c.do(http.MethodGet, "/v2/nothing", nil).expect(t, http.StatusNotFound)
	r := c.do(http.MethodPost, "/v2/catalog", nil).expect(t, http.StatusMethodNotAllowed)
	assert.Check(t, is.Equal(r.header.Get("Allow"), "GET"))
	c.do(http.MethodPost, instancePath("i1"), nil).expect(t, http.StatusMethodNotAllowed)
}

func TestIDs_WithReservedCharacters_ArePercentDecoded(t *testing.T) {
	b, c := startBroker(t)
	id := "weird id/with slash"
	c.provisionSync(id, DemoPostgresServiceID, DemoPostgresHobbyPlanID)
	_, ok := b.Instance(id)
	assert.Check(t, ok)
}
