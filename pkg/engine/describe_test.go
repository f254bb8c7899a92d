package engine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

func TestDescribe_ShowsTheBrokersWordsOnly(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"the spec's description", &osb.HTTPStatusError{StatusCode: 422, ErrorCode: "ConcurrencyError", Description: "busy"},
			"the broker answered 422 Unprocessable Entity ConcurrencyError: busy"},
		{"a message under another key", &osb.HTTPStatusError{StatusCode: 500, Message: "database quota exceeded"},
			"the broker answered 500 Internal Server Error: database quota exceeded"},
		{"the start of a page that is not JSON", &osb.HTTPStatusError{StatusCode: 502, BodyExcerpt: "<html>bad gateway</html>"},
			"the broker answered 502 Bad Gateway: <html>bad gateway</html>"},
		{"a redirect within the broker", &osb.HTTPStatusError{StatusCode: 301, RedirectHost: "broker.example:8443"},
			`the broker answered 301 Moved Permanently: a redirect (to host "broker.example:8443"), which is not followed for this call`},
		{"no answer", &osb.TransportError{Method: "PUT", Path: "/x", Err: errors.New("refused")}, "osb: PUT /x: no answer from broker: refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, describe(tc.err, 0), tc.want)
		})
	}
}

// TestStepBinding_Unexpected2xxWithCredentials_KeepsThemOutOfTheRecord: a bind
// answered with a 2xx the spec does not list still carries the credentials in
// its body; the record's conditions and retry must not quote it.
func TestStepBinding_Unexpected2xxWithCredentials_KeepsThemOutOfTheRecord(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNonAuthoritativeInfo)
		_, _ = w.Write([]byte(`{"credentials":{"password":"` + secretValue + `"}}`))
	}))
	t.Cleanup(srv.Close)
	real, err := osb.NewClient(&osb.ClientConfig{URL: srv.URL})
	assert.NilError(t, err)
	f, _ := bindingFixture(t, nil)
	f.broker.OnBind(func(ctx context.Context, req *osb.BindRequest) (*osb.BindResponse, error) {
		return real.Bind(ctx, req)
	})
	f.createBinding("db", nil)

	f.stepBinding("db")

	b := f.getBinding("db")
	assert.Assert(t, b.Status.Retry != nil)
	assert.Assert(t, strings.Contains(b.Status.Retry.LastError, "203"), b.Status.Retry.LastError)
	f.assertNoSecretInRecords()
}
