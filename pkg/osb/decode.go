package osb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds a Retry-After so that a silly value cannot overflow a
// time.Duration or park an operation for years; the platform's own maximum
// polling duration applies anyway.
const maxRetryAfter = 24 * time.Hour

// decodeObject decodes a JSON object body into v. An empty body counts as {}
// where allowEmpty is set, because brokers answer deletes and some creates
// without a body. Unknown fields are ignored, as the spec requires.
func decodeObject(data []byte, allowEmpty bool, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		if allowEmpty {
			return nil
		}
		return errors.New("empty body, expected a JSON object")
	}
	if trimmed[0] != '{' {
		return errors.New("body is not a JSON object")
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		return fmt.Errorf("decoding JSON body: %w", withoutValues(err))
	}
	return nil
}

// withoutValues rewrites a JSON decoding error so that it quotes nothing of
// the body: encoding/json's own messages repeat numbers and characters of
// it, and a body may hold credentials.
func withoutValues(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		kind, _, _ := strings.Cut(typ.Value, " ")
		if typ.Field == "" {
			return fmt.Errorf("a JSON %s where %s was expected", kind, typ.Type)
		}
		return fmt.Errorf("field %q holds a JSON %s where %s was expected", typ.Field, kind, typ.Type)
	default:
		return errors.New("the body does not decode")
	}
}

// looksLikeJSON reports whether body starts like a JSON object or array,
// even when it was cut at the size cap.
func looksLikeJSON(body []byte) bool {
	t := bytes.TrimSpace(body)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// messageKeys are where brokers that do not follow the spec's error body put
// their message, in the order they are looked for; keys match in any case.
var messageKeys = []string{"description", "message", "error_message", "error_description", "detail", "error"}

// errorMessage is the message of a JSON error body that has no spec
// "description": the first string under one of messageKeys (the spec's
// lower-case "error" is its code, so only another spelling of it counts) or
// an "error" object's "message", as one line cut to excerptLimit bytes. It
// is "" when the body has none: the raw JSON is never a message.
func errorMessage(body []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(body), &fields) != nil {
		return ""
	}
	for _, want := range messageKeys {
		for k, raw := range fields {
			if !strings.EqualFold(k, want) || k == "error" || k == "description" {
				continue
			}
			var s string
			if json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
				return oneLine(s, true)
			}
		}
	}
	for k, raw := range fields {
		if !strings.EqualFold(k, "error") {
			continue
		}
		var nested struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &nested) == nil && strings.TrimSpace(nested.Message) != "" {
			return oneLine(nested.Message, true)
		}
	}
	return ""
}

// DecodeCatalog decodes the body of a catalog answer. A catalog without a
// "services" key is malformed; an empty (or null) list is not. Call Validate for the
// spec's structural rules.
func DecodeCatalog(data []byte) (*CatalogResponse, error) {
	c := &CatalogResponse{Services: []Service{}}
	err := decodeCatalogBytes(data, func(s *Service) error {
		c.Services = append(c.Services, *s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DecodeLastOperation decodes the body of a last_operation answer. The state
// must be one of the three the spec defines.
func DecodeLastOperation(data []byte) (*LastOperationResponse, error) {
	var lo LastOperationResponse
	if err := decodeObject(data, false, &lo); err != nil {
		return nil, err
	}
	switch lo.State {
	case StateInProgress, StateSucceeded, StateFailed:
		return &lo, nil
	case "":
		return nil, errors.New(`last operation has no "state"`)
	default:
		return nil, fmt.Errorf("last operation has unknown state %q", lo.State)
	}
}

// DecodeBindResponse decodes the body of a bind answer; an empty body is a
// binding without credentials.
func DecodeBindResponse(data []byte) (*BindResponse, error) {
	var br BindResponse
	if err := decodeObject(data, true, &br); err != nil {
		return nil, err
	}
	return &br, nil
}

// DecodeErrorBody extracts what it can from a non-2xx body. It never fails:
// brokers send HTML pages, plain text, or fields of the wrong type, and the
// status code alone must still be usable. Each field is decoded on its own
// so one bad field does not hide the others.
func DecodeErrorBody(data []byte) ErrorResponse {
	var fields map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(data), &fields) != nil {
		return ErrorResponse{}
	}
	var er ErrorResponse
	_ = json.Unmarshal(fields["error"], &er.Error)
	_ = json.Unmarshal(fields["description"], &er.Description)
	var b bool
	if json.Unmarshal(fields["instance_usable"], &b) == nil && isBool(fields["instance_usable"]) {
		er.InstanceUsable = &b
	}
	var r bool
	if json.Unmarshal(fields["update_repeatable"], &r) == nil && isBool(fields["update_repeatable"]) {
		er.UpdateRepeatable = &r
	}
	return er
}

func isBool(raw json.RawMessage) bool {
	s := string(bytes.TrimSpace(raw))
	return s == "true" || s == "false"
}

// ParseRetryAfter interprets a Retry-After header value relative to now: a
// number of seconds, or an HTTP date. It returns 0 for an absent, negative,
// past or unparsable value, and caps the result at 24 hours.
func ParseRetryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0
	}
	d := at.Sub(now)
	switch {
	case d <= 0:
		return 0
	case d > maxRetryAfter:
		return maxRetryAfter
	}
	return d
}
