package broker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Redacted replaces secrets in the request log.
const Redacted = "[REDACTED]"

// maxLoggedBody bounds what the log keeps of one body, so an oversized-body
// fault does not fill the test's memory.
const maxLoggedBody = 64 * 1024

// RecordedRequest is one OSB request the broker received and what it
// answered, with credentials redacted.
type RecordedRequest struct {
	Seq        int       `json:"seq"`
	Time       time.Time `json:"time"`
	Op         Op        `json:"op,omitempty"`
	InstanceID string    `json:"instance_id,omitempty"`
	BindingID  string    `json:"binding_id,omitempty"`
	Method     string    `json:"method"`
	// Path is the escaped request path, as the client sent it.
	Path   string              `json:"path"`
	Query  map[string][]string `json:"query,omitempty"`
	Header map[string][]string `json:"header"`
	// Body is the request body: JSON as sent (secrets redacted), or a JSON
	// string when the body was not JSON.
	Body                json.RawMessage      `json:"body,omitempty"`
	APIVersion          string               `json:"api_version,omitempty"`
	RequestIdentity     string               `json:"request_identity,omitempty"`
	OriginatingIdentity *OriginatingIdentity `json:"originating_identity,omitempty"`
	// Status is 0 when the broker sent no answer (hang or close faults, or
	// the client left first).
	Status         int                 `json:"status"`
	ResponseHeader map[string][]string `json:"response_header,omitempty"`
	ResponseBody   json.RawMessage     `json:"response_body,omitempty"`
	// Fault is the id of the fault that struck this request, if any.
	Fault    string   `json:"fault,omitempty"`
	Duration Duration `json:"duration"`
}

// DecodeBody unmarshals the (redacted) request body into v.
func (r RecordedRequest) DecodeBody(v any) error { return json.Unmarshal(r.Body, v) }

// DecodeResponse unmarshals the (redacted) response body into v.
func (r RecordedRequest) DecodeResponse(v any) error { return json.Unmarshal(r.ResponseBody, v) }

// OriginatingIdentity is a decoded X-Broker-API-Originating-Identity header.
type OriginatingIdentity struct {
	Platform string `json:"platform"`
	// Value is the decoded JSON object; for Kubernetes it has username, uid,
	// groups and extra.
	Value map[string]any `json:"value,omitempty"`
	// Error says why the header could not be decoded; the request is still
	// served.
	Error string `json:"error,omitempty"`
}

// Kubernetes returns Value as the Kubernetes profile's user, if it is one.
func (o *OriginatingIdentity) Kubernetes() (osb.OriginatingIdentity, bool) {
	var out osb.OriginatingIdentity
	if o == nil || o.Platform != osb.PlatformKubernetes || o.Value == nil {
		return out, false
	}
	b, err := json.Marshal(o.Value)
	if err != nil || json.Unmarshal(b, &out) != nil {
		return out, false
	}
	return out, out.Username != "" || out.UID != ""
}

func decodeOriginatingIdentity(h string) *OriginatingIdentity {
	if h == "" {
		return nil
	}
	platform, value, ok := strings.Cut(h, " ")
	out := &OriginatingIdentity{Platform: platform}
	if !ok || platform == "" || value == "" {
		out.Error = "header must be \"<platform> <base64 JSON object>\""
		return out
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
	if err != nil {
		out.Error = fmt.Sprintf("value is not standard base64: %v", err)
		return out
	}
	if err := json.Unmarshal(raw, &out.Value); err != nil || out.Value == nil {
		out.Error = "value does not decode to a JSON object"
		return out
	}
	return out
}

// redactHeader copies h, hiding credentials but keeping the auth scheme so a
// test can still see which one the client used.
func redactHeader(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Authorization", "Proxy-Authorization":
			red := make([]string, len(vs))
			for i, v := range vs {
				scheme, _, _ := strings.Cut(v, " ")
				red[i] = scheme + " " + Redacted
			}
			out[k] = red
		case "Cookie", "Set-Cookie":
			out[k] = []string{Redacted}
		default:
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

// redactBody returns body as JSON for the log: secret-looking fields and
// binding credentials are replaced, passwords inside URLs are masked, and
// bodies that are not JSON are kept as a (truncated) JSON string.
func redactBody(body []byte) json.RawMessage {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if len(body) > maxLoggedBody {
		s, _ := json.Marshal(fmt.Sprintf("%s... [%d bytes, truncated]", body[:256], len(body)))
		return s
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		s, _ := json.Marshal(string(body))
		return s
	}
	out, err := json.Marshal(redactValue(v))
	if err != nil {
		s, _ := json.Marshal(string(body))
		return s
	}
	return out
}

func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			if isSecretKey(k) {
				out[k] = Redacted
				continue
			}
			out[k] = redactValue(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = redactValue(val)
		}
		return out
	case string:
		if strings.Contains(t, "://") && strings.Contains(t, "@") {
			if u, err := url.Parse(t); err == nil && u.User != nil {
				if _, hasPw := u.User.Password(); hasPw {
					return u.Redacted()
				}
			}
		}
		return t
	default:
		return v
	}
}

// isSecretKey decides which JSON fields never reach the log. "credentials"
// covers everything a binding returns.
func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"password", "secret", "token", "credentials", "private_key", "apikey", "api_key"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
