package broker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// The tests talk to the broker with net/http and this small helper, not with
// pkg/osb's client, so a bug in the client cannot hide one in the broker.

const (
	testUser  = "platform"
	testPass  = "s3cret-pass"
	testToken = "opaque-bearer-token"
)

type testClient struct {
	t    *testing.T
	base string
	hc   *http.Client
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// reqOpt changes a request before it is sent.
type reqOpt func(*http.Request)

func withoutVersion() reqOpt { return func(r *http.Request) { r.Header.Del(osb.HeaderAPIVersion) } }
func withVersion(v string) reqOpt {
	return func(r *http.Request) { r.Header.Set(osb.HeaderAPIVersion, v) }
}
func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }
func withoutAuth() reqOpt           { return func(r *http.Request) { r.Header.Del("Authorization") } }
func withBasic(u, p string) reqOpt  { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
func withBearer(tok string) reqOpt {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// startBroker runs a broker with basic and bearer auth and short async
// delays, closed at the end of the test.
func startBroker(t *testing.T, mutate ...func(*Options)) (*Broker, *testClient) {
	t.Helper()
	opts := Options{Username: testUser, Password: testPass, BearerToken: testToken, AsyncDelay: 40 * time.Millisecond}
	for _, m := range mutate {
		m(&opts)
	}
	b := NewTestBroker(t, opts)
	return b, &testClient{t: t, base: b.URL(), hc: &http.Client{Timeout: 10 * time.Second}}
}

func (c *testClient) do(method, path string, body any, opts ...reqOpt) response {
	c.t.Helper()
	resp, err := c.send(method, path, body, opts...)
	assert.NilError(c.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	assert.NilError(c.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// send is do without the assertions, for requests expected to fail at the
// transport level.
func (c *testClient) send(method, path string, body any, opts ...reqOpt) (*http.Response, error) {
	c.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		b, err := json.Marshal(v)
		assert.NilError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	assert.NilError(c.t, err)
	req.Header.Set(osb.HeaderAPIVersion, "2.17")
	req.SetBasicAuth(testUser, testPass)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	return c.hc.Do(req)
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	assert.NilError(t, json.Unmarshal(r.body, v), "body: %s", r.body)
}

func (r response) errBody(t *testing.T) osb.ErrorResponse {
	t.Helper()
	var e osb.ErrorResponse
	r.decode(t, &e)
	return e
}

// expect asserts the status, showing the body when it differs.
func (r response) expect(t *testing.T, status int) response {
	t.Helper()
	assert.Equal(t, r.status, status, "body: %s", r.body)
	return r
}

func instancePath(id string) string { return "/v2/service_instances/" + url.PathEscape(id) }
func bindingPath(iid, bid string) string {
	return instancePath(iid) + "/service_bindings/" + url.PathEscape(bid)
}

func lastOpPath(base, serviceID, planID, op string) string {
	q := url.Values{}
	if serviceID != "" {
		q.Set("service_id", serviceID)
	}
	if planID != "" {
		q.Set("plan_id", planID)
	}
	if op != "" {
		q.Set("operation", op)
	}
	return base + "/last_operation?" + q.Encode()
}

func deletePath(base, serviceID, planID string, async bool) string {
	q := url.Values{"service_id": {serviceID}, "plan_id": {planID}}
	if async {
		q.Set("accepts_incomplete", "true")
	}
	return base + "?" + q.Encode()
}

func k8sContext() map[string]any {
	return map[string]any{"platform": "kubernetes", "namespace": "team-a", "clusterid": "cluster-1", "instance_name": "db"}
}

func provisionBody(serviceID, planID string, params map[string]any) map[string]any {
	b := map[string]any{
		"service_id":        serviceID,
		"plan_id":           planID,
		"organization_guid": "org-guid",
		"space_guid":        "space-guid",
		"context":           k8sContext(),
	}
	if params != nil {
		b["parameters"] = params
	}
	return b
}

func bindBody(serviceID, planID string, params map[string]any) map[string]any {
	b := map[string]any{
		"service_id":    serviceID,
		"plan_id":       planID,
		"context":       k8sContext(),
		"bind_resource": map[string]any{"app_guid": "app-1"},
	}
	if params != nil {
		b["parameters"] = params
	}
	return b
}

// provisionSync creates a ready instance of a synchronous plan.
func (c *testClient) provisionSync(id, serviceID, planID string) {
	c.t.Helper()
	c.do(http.MethodPut, instancePath(id), provisionBody(serviceID, planID, nil)).expect(c.t, http.StatusCreated)
}

// pollUntilDone polls a last_operation path until it leaves "in progress".
func (c *testClient) pollUntilDone(path string) (response, osb.LastOperationResponse) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := c.do(http.MethodGet, path, nil)
		if r.status != http.StatusOK {
			return r, osb.LastOperationResponse{}
		}
		var lo osb.LastOperationResponse
		r.decode(c.t, &lo)
		if lo.State != osb.StateInProgress {
			return r, lo
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("operation at %s still in progress after 5s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func originatingIdentity(platform string, v any) string {
	b, _ := json.Marshal(v)
	return platform + " " + base64.StdEncoding.EncodeToString(b)
}

func mustInject(t *testing.T, b *Broker, f Fault) string {
	t.Helper()
	id, err := b.InjectFault(f)
	assert.NilError(t, err)
	return id
}
