package osb

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestHTTPStatusError_ShowsTheMessageOfErrorBodiesThatAreNotTheSpecs(t *testing.T) {
	long := strings.Repeat("é", 400)
	tests := []struct {
		name    string
		status  int
		body    string
		message string
		hidden  string // text of the body the error must not show
	}{
		{"capitalised Error", 500, `{"Error":"database quota exceeded"}`, "database quota exceeded", `{"Error"`},
		{"message", 400, `{"message":"plan not found","trace":"at x.y(z)"}`, "plan not found", "trace"},
		{"capitalised Message", 503, `{"Message":"try later"}`, "try later", `"Message"`},
		{"an error object with a message", 500, `{"error":{"message":"backend down","code":17}}`, "backend down", "17"},
		{"a detail of a problem document", 422, `{"title":"Unprocessable","detail":"size must be below 10"}`, "size must be below 10", "title"},
		{"control characters become spaces", 500, `{"message":"line one\nline two"}`, "line one line two", "\n"},
		{"a JSON body without a message shows nothing of itself", 500, `{"foo":"bar"}`, "", "bar"},
		{"a message that is not a string is ignored", 500, `{"message":{"password":"pw-123"}}`, "", "pw-123"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t, reply(tc.status, tc.body))
			_, err := newTestClient(t, b.URL).Deprovision(t.Context(), &DeprovisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p"})

			he, ok := AsHTTPStatusError(err)
			assert.Assert(t, ok, "got %v", err)
			assert.Equal(t, he.Message, tc.message)
			assert.Equal(t, he.BodyExcerpt, "", "a JSON body is never shown raw")
			assert.Assert(t, !strings.Contains(err.Error(), tc.hidden), "%v", err)
			if tc.message != "" {
				assert.Assert(t, strings.HasSuffix(err.Error(), ": "+tc.message), "%v", err)
			}
		})
	}
	t.Run("a long message is cut at a character boundary", func(t *testing.T) {
		b := newFakeBroker(t, reply(500, `{"message":"`+long+`"}`))
		_, err := newTestClient(t, b.URL).GetCatalog(t.Context(), nil)

		he, _ := AsHTTPStatusError(err)
		assert.Assert(t, len(he.Message) <= excerptLimit+len("…"), "%d bytes", len(he.Message))
		assert.Assert(t, strings.HasSuffix(he.Message, "é…"), he.Message)
	})
	t.Run("the spec's description wins", func(t *testing.T) {
		b := newFakeBroker(t, reply(500, `{"description":"the spec's","message":"another"}`))
		_, err := newTestClient(t, b.URL).GetCatalog(t.Context(), nil)

		assert.Assert(t, strings.HasSuffix(err.Error(), ": the spec's"), "%v", err)
		assert.Assert(t, !strings.Contains(err.Error(), "another"))
	})
}

// TestErrors_NeverShowTheBodyOfA2xxOr3xxAnswer: an unexpected 2xx of a bind
// carries credentials, and so may a success body that cannot be decoded.
func TestErrors_NeverShowTheBodyOfA2xxOr3xxAnswer(t *testing.T) {
	const secret = "pw-9f8e7d6c5b4a"
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"unexpected 203 with credentials", 203, `{"credentials":{"password":"` + secret + `"}}`},
		{"unexpected 206 with a description", 206, `{"description":"` + secret + `","error":"` + secret + `"}`},
		{"unexpected 203 as plain text", 203, "password=" + secret},
		{"unexpected 203 with a message", 203, `{"message":"` + secret + `"}`},
		{"a redirect with a body", 301, `{"message":"` + secret + `"}`},
		{"malformed 201: a number where an object belongs", 201, `{"credentials":` + strings.Repeat("9", 12) + `}`},
		{"malformed 201: broken JSON", 201, `{"credentials":{"password":"` + secret + `"`},
		{"malformed 201: not an object", 201, `"` + secret + `"`},
		{"malformed 201: a string where a list belongs", 201, `{"volume_mounts":"` + secret + `"}`},
		{"oversized 201", 201, `{"credentials":{"password":"` + secret + `"},"pad":"` + strings.Repeat("x", 300) + `"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.status/100 == 3 {
					w.Header().Set("Location", "/elsewhere")
				}
				reply(tc.status, tc.body)(w, r)
			})
			c := newTestClient(t, b.URL, func(cfg *ClientConfig) { cfg.MaxResponseBytes = 200 })

			_, err := c.Bind(t.Context(), &BindRequest{InstanceID: "i", BindingID: "b", ServiceID: "s", PlanID: "p"})

			assert.Assert(t, err != nil)
			for _, shown := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", errors.Unwrap(err))} {
				assert.Assert(t, !strings.Contains(shown, secret), "%s", shown)
				assert.Assert(t, !strings.Contains(shown, strings.Repeat("9", 12)), "%s", shown)
			}
			if he, ok := AsHTTPStatusError(err); ok {
				assert.Check(t, is.Equal(he.Description, ""))
				assert.Check(t, is.Equal(he.ErrorCode, ""))
				assert.Check(t, is.Equal(he.Message, ""))
				assert.Check(t, is.Equal(he.BodyExcerpt, ""))
			}
			if me := (*MalformedResponseError)(nil); errors.As(err, &me) {
				assert.Assert(t, !strings.Contains(fmt.Sprintf("%+v", *me), secret))
			}
		})
	}
}
