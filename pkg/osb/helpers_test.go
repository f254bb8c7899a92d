package osb

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
)

// seen is one request as the broker received it, with the raw request
// target so escaping can be asserted byte for byte.
type seen struct {
	Method   string
	RawPath  string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// fakeBroker is an httptest server that records requests and answers with
// a replaceable handler.
type fakeBroker struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []seen
	handler http.HandlerFunc
}

func newFakeBroker(t *testing.T, h http.HandlerFunc) *fakeBroker {
	t.Helper()
	b := &fakeBroker{handler: h}
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.Close)
	return b
}

func (b *fakeBroker) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path, query, _ := strings.Cut(r.RequestURI, "?")
	b.mu.Lock()
	b.reqs = append(b.reqs, seen{Method: r.Method, RawPath: path, RawQuery: query, Header: r.Header.Clone(), Body: body})
	h := b.handler
	b.mu.Unlock()
	if h == nil {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "{}")
		return
	}
	h(w, r)
}

func (b *fakeBroker) requests() []seen {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]seen(nil), b.reqs...)
}

func (b *fakeBroker) last(t *testing.T) seen {
	t.Helper()
	reqs := b.requests()
	assert.Assert(t, len(reqs) > 0, "broker received no request")
	return reqs[len(reqs)-1]
}

// reply answers with a fixed status, body and extra headers (name, value pairs).
func reply(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func newTestClient(t *testing.T, url string, mutate ...func(*ClientConfig)) Client {
	t.Helper()
	cfg := &ClientConfig{URL: url, BasicAuth: &BasicAuth{Username: "alice", Password: "s3cret-pw"}}
	for _, m := range mutate {
		m(cfg)
	}
	c, err := NewClient(cfg)
	assert.NilError(t, err)
	return c
}

// assertJSONEqual compares two JSON documents semantically.
func assertJSONEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	assert.NilError(t, json.Unmarshal(got, &g), "body %q", got)
	assert.NilError(t, json.Unmarshal([]byte(want), &w))
	assert.DeepEqual(t, g, w)
}

func ptr[T any](v T) *T { return &v }
