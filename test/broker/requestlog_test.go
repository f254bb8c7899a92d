package broker

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func TestRequestLog_RecordsRequestsAndAnswers(t *testing.T) {
	b, c := startBroker(t)
	c.do(http.MethodPut, instancePath("i1")+"?accepts_incomplete=true", provisionBody(DemoPostgresServiceID, DemoPostgresHobbyPlanID, map[string]any{"storage_gb": 2}),
		withHeader(osb.HeaderRequestIdentity, "rid-1")).expect(t, http.StatusCreated)
	reqs := b.Requests()
	assert.Assert(t, is.Len(reqs, 1))
	r := reqs[0]
	assert.Check(t, is.Equal(r.Seq, 1))
	assert.Check(t, is.Equal(r.Op, OpProvision))
	assert.Check(t, is.Equal(r.InstanceID, "i1"))
	assert.Check(t, is.Equal(r.Method, http.MethodPut))
	assert.Check(t, is.Equal(r.Path, "/v2/service_instances/i1"))
	assert.Check(t, is.DeepEqual(r.Query["accepts_incomplete"], []string{"true"}))
	assert.Check(t, is.Equal(r.APIVersion, "2.17"))
	assert.Check(t, is.Equal(r.RequestIdentity, "rid-1"))
	assert.Check(t, is.Equal(r.Status, http.StatusCreated))
	var body map[string]any
	assert.NilError(t, r.DecodeBody(&body))
	assert.Check(t, is.Equal(body["plan_id"], DemoPostgresHobbyPlanID))
	var resp osb.ProvisionResponse
	assert.NilError(t, r.DecodeResponse(&resp))
	assert.Check(t, resp.DashboardURL != "")

	b.ClearRequests()
	assert.Check(t, is.Len(b.Requests(), 0))
}

func TestRequestLog_RedactsCredentials(t *testing.T) {
	b, c := startBroker(t)
	params := map[string]any{"admin_password": "hunter2-param", "nested": map[string]any{"api_token": "tok-param"},
		"upstream": "redis://user:pw-in-url@cache.internal:6379"}
	c.do(http.MethodPut, instancePath("i1"), provisionBody(DemoRedisServiceID, DemoRedisSmallPlanID, params)).expect(t, http.StatusCreated)
	var bind osb.BindResponse
	c.do(http.MethodPut, bindingPath("i1", "b1"), bindBody(DemoRedisServiceID, DemoRedisSmallPlanID, nil)).expect(t, http.StatusCreated).decode(t, &bind)
	c.do(http.MethodGet, "/v2/catalog", nil, withBearer(testToken)).expect(t, http.StatusOK)

	all, err := json.Marshal(b.Requests())
	assert.NilError(t, err)
	secrets := []string{
		"hunter2-param", "tok-param", "pw-in-url", testPass, testToken,
		base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testPass)),
		bind.Credentials["password"].(string),
	}
	for _, s := range secrets {
		assert.Check(t, !strings.Contains(string(all), s), "the log leaks %q", s)
	}
	reqs := b.Requests()
	assert.Check(t, is.DeepEqual(reqs[0].Header["Authorization"], []string{"Basic " + Redacted}))
	assert.Check(t, is.DeepEqual(reqs[2].Header["Authorization"], []string{"Bearer " + Redacted}))
	var logged map[string]any
	assert.NilError(t, reqs[1].DecodeResponse(&logged))
	assert.Check(t, is.Equal(logged["credentials"], Redacted))
	assert.Check(t, is.Contains(string(reqs[0].Body), "cache.internal"), "non-secret data is kept")

	t.Run("the broker's own state keeps the real credentials", func(t *testing.T) {
		bd, _ := b.Binding("b1")
		assert.Check(t, is.Equal(bd.Credentials["password"], bind.Credentials["password"]))
	})
}

func TestRequestLog_NonJSONBodyIsKeptAsAString(t *testing.T) {
	b, c := startBroker(t)
	c.do(http.MethodPut, instancePath("i1"), "plain text").expect(t, http.StatusBadRequest)
	var s string
	assert.NilError(t, b.Requests()[0].DecodeBody(&s))
	assert.Check(t, is.Equal(s, "plain text"))
}

func TestRequestLog_KeepsTheNewestUpToTheLimit(t *testing.T) {
	b, c := startBroker(t, func(o *Options) { o.RequestLogLimit = 3 })
	for range 5 {
		c.do(http.MethodGet, "/v2/catalog", nil).expect(t, http.StatusOK)
	}
	reqs := b.Requests()
	assert.Assert(t, is.Len(reqs, 3))
	assert.Check(t, is.Equal(reqs[0].Seq, 3))
	assert.Check(t, is.Equal(reqs[2].Seq, 5))
}
