package osb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// excerptLimit bounds how much of a raw body an error keeps: enough to
// recognise an HTML error page or a proxy message, not enough to leak much.
const excerptLimit = 256

// HTTPStatusError is a broker answer whose status code the endpoint does not
// treat as success: every 3xx, 4xx and 5xx, and 2xx codes the spec does not
// list for the endpoint. A 410 on a delete is also reported this way (see
// IsGoneError). Fields of the error body are decoded leniently: a body that
// is not JSON leaves them empty.
type HTTPStatusError struct {
	Method string // HTTP method of the request
	Path   string // escaped URL path without query: never holds credentials
	// StatusCode is the HTTP status the broker answered.
	StatusCode int
	// ErrorCode is the body's "error" field, e.g. ErrorCodeAsyncRequired.
	ErrorCode string
	// Description is the body's "description" field, meant for users.
	Description      string
	InstanceUsable   *bool // from the body; nil means usable
	UpdateRepeatable *bool // from the body; nil means repeatable
	// Message is the broker's message when a 4xx or 5xx body had no
	// description but says it under a key some brokers use instead
	// ("message", "Error", "detail", an "error" object's "message"), cut to
	// a line of at most excerptLimit bytes.
	Message string
	// BodyExcerpt is the start of a 4xx or 5xx body that is not JSON (an
	// HTML error page, a proxy's text), with control characters replaced.
	// A JSON body is shown only through Description and Message; nothing of
	// a 2xx or 3xx body is kept at all: a bind's body holds credentials.
	BodyExcerpt string
	// RedirectHost is the host of the Location of a 3xx answer: redirects to
	// another origin are not followed (see ClientConfig).
	RedirectHost string
}

// Error reads like "osb: PUT /v2/service_instances/x: broker answered 422
// Unprocessable Entity: AsyncRequired: <description>".
func (e *HTTPStatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "osb: %s %s: broker answered %d", e.Method, e.Path, e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		b.WriteString(" " + text)
	}
	if e.ErrorCode != "" {
		b.WriteString(": " + e.ErrorCode)
	}
	if e.RedirectHost != "" {
		fmt.Fprintf(&b, ": redirect to host %q not followed", e.RedirectHost)
	}
	switch {
	case e.Description != "":
		b.WriteString(": " + e.Description)
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.ErrorCode == "" && e.BodyExcerpt != "":
		fmt.Fprintf(&b, ": body %q", e.BodyExcerpt)
	}
	return b.String()
}

// TransportError means the broker gave no (complete) answer: the connection
// could not be made or broke, TLS failed, the request timed out or the
// caller's context ended. Orphan mitigation treats it like a client timeout
// because the broker may have acted on the request.
type TransportError struct {
	Method string // HTTP method of the request
	Path   string // escaped URL path of the request, without query
	// StatusCode is set when the status line arrived but reading the body
	// failed; 0 otherwise.
	StatusCode int
	// Timeout is true when the per-request timeout or the caller's deadline
	// ran out, or a network timeout fired.
	Timeout bool
	// Canceled is true when the caller's context was cancelled.
	Canceled bool
	// Err is the underlying cause, without the request URL.
	Err error
}

// Error reads like "osb: GET /v2/catalog: no answer from broker: <cause>".
func (e *TransportError) Error() string {
	what := "no answer from broker"
	switch {
	case e.StatusCode != 0:
		what = fmt.Sprintf("reading the %d answer from broker", e.StatusCode)
	case e.Canceled:
		what = "request cancelled before the broker answered"
	case e.Timeout:
		what = "timed out waiting for the broker"
	}
	return fmt.Sprintf("osb: %s %s: %s: %v", e.Method, e.Path, what, e.Err)
}

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }

// MalformedResponseError is a success status whose body could not be
// decoded, or is not what the spec requires (e.g. a last operation without a
// valid state), or exceeds the size cap. It keeps nothing of the body, which
// may hold credentials: Err names fields and JSON types, never values.
type MalformedResponseError struct {
	Method     string // HTTP method of the request
	Path       string // escaped URL path of the request, without query
	StatusCode int    // the success status that came with the bad body
	// Err says what was wrong with the body.
	Err error
}

// Error reads like "osb: PUT /v2/…: malformed 201 answer from broker: <cause>".
func (e *MalformedResponseError) Error() string {
	return fmt.Sprintf("osb: %s %s: malformed %d answer from broker: %v", e.Method, e.Path, e.StatusCode, e.Err)
}

// Unwrap returns the cause.
func (e *MalformedResponseError) Unwrap() error { return e.Err }

// BodyTooLargeError is the cause when a response body exceeds the configured
// cap; the body is rejected, never truncated.
type BodyTooLargeError struct {
	// Limit is the cap in bytes that was exceeded.
	Limit int64
}

// Error reads like "response body exceeds the limit of 1024 bytes".
func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("response body exceeds the limit of %d bytes", e.Limit)
}

// InvalidRequestError means the request could not be sent because it lacks
// something the spec requires (an id, service_id, ...); nothing reached the
// broker.
type InvalidRequestError struct {
	// Op names the client method, e.g. "Provision".
	Op string
	// Reason says what is missing or wrong.
	Reason string
	// Err is the cause when encoding failed, else nil.
	Err error
}

// Error reads like "osb: Provision: invalid request: plan_id is required".
func (e *InvalidRequestError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("osb: %s: invalid request: %s: %v", e.Op, e.Reason, e.Err)
	}
	return fmt.Sprintf("osb: %s: invalid request: %s", e.Op, e.Reason)
}

// Unwrap returns the cause, if any.
func (e *InvalidRequestError) Unwrap() error { return e.Err }

// AsHTTPStatusError returns the *HTTPStatusError in err's chain, if any.
func AsHTTPStatusError(err error) (*HTTPStatusError, bool) {
	var he *HTTPStatusError
	ok := errors.As(err, &he)
	return he, ok
}

// StatusCode returns the HTTP status code the broker answered, from an
// *HTTPStatusError, *MalformedResponseError or *TransportError in err's
// chain, or 0 when there was no answer or err is nil.
func StatusCode(err error) int {
	var he *HTTPStatusError
	if errors.As(err, &he) {
		return he.StatusCode
	}
	var me *MalformedResponseError
	if errors.As(err, &me) {
		return me.StatusCode
	}
	var te *TransportError
	if errors.As(err, &te) {
		return te.StatusCode
	}
	return 0
}

func hasErrorCode(err error, code string) bool {
	he, ok := AsHTTPStatusError(err)
	return ok && he.ErrorCode == code
}

// IsAsyncRequiredError reports whether the broker answered with error code
// AsyncRequired. Only the code is compared, never the description.
func IsAsyncRequiredError(err error) bool { return hasErrorCode(err, ErrorCodeAsyncRequired) }

// IsConcurrencyError reports whether the broker answered with error code
// ConcurrencyError.
func IsConcurrencyError(err error) bool { return hasErrorCode(err, ErrorCodeConcurrencyError) }

// IsRequiresAppError reports whether the broker answered with error code
// RequiresApp.
func IsRequiresAppError(err error) bool { return hasErrorCode(err, ErrorCodeRequiresApp) }

// IsMaintenanceInfoConflictError reports whether the broker answered with
// error code MaintenanceInfoConflict.
func IsMaintenanceInfoConflictError(err error) bool {
	return hasErrorCode(err, ErrorCodeMaintenanceInfoConflict)
}

func hasStatus(err error, code int) bool {
	he, ok := AsHTTPStatusError(err)
	return ok && he.StatusCode == code
}

// IsGoneError reports a 410 answer: on a delete the resource is already gone
// (success); while polling a delete, the delete finished.
func IsGoneError(err error) bool { return hasStatus(err, http.StatusGone) }

// IsConflictError reports a 409 answer: the id exists with other attributes.
func IsConflictError(err error) bool { return hasStatus(err, http.StatusConflict) }

// IsNotFoundError reports a 404 answer. On a fetch it also means "still
// being created".
func IsNotFoundError(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsBadRequestError reports a 400 answer: the broker rejected the request as
// malformed; repeating it will not help.
func IsBadRequestError(err error) bool { return hasStatus(err, http.StatusBadRequest) }

// IsUnauthorizedError reports a 401 answer: the credentials were refused.
func IsUnauthorizedError(err error) bool { return hasStatus(err, http.StatusUnauthorized) }

// IsMalformedResponseError reports a success status with an undecodable body.
func IsMalformedResponseError(err error) bool {
	var me *MalformedResponseError
	return errors.As(err, &me)
}

// IsNoAnswer reports that the broker gave no complete answer (connection
// refused or reset, TLS failure, timeout, cancellation): the broker may or
// may not have acted on the request.
func IsNoAnswer(err error) bool {
	var te *TransportError
	return errors.As(err, &te)
}

// IsTimeout reports that no answer came in time: the client timeout or the
// caller's deadline ran out, or the caller cancelled while waiting. This is
// the "client timeout" of the spec's orphan-mitigation table.
func IsTimeout(err error) bool {
	var te *TransportError
	return errors.As(err, &te) && (te.Timeout || te.Canceled)
}

// classifyTransport sets Timeout and Canceled from the cause. ctx is the
// caller's context, so that its cancellation is told apart from our own
// per-request timeout.
func classifyTransport(ctx context.Context, te *TransportError) *TransportError {
	var ne net.Error
	if errors.Is(te.Err, context.DeadlineExceeded) || (errors.As(te.Err, &ne) && ne.Timeout()) {
		te.Timeout = true
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		te.Canceled = true
	}
	return te
}

// excerpt returns the start of body as one line (see oneLine).
func excerpt(body []byte) string {
	return oneLine(string(body), false)
}

// oneLine returns s cut to at most excerptLimit bytes at a rune boundary
// (with "…" appended when marked is set and something was cut), trimmed, with
// control characters and invalid bytes replaced by spaces, so that it is safe
// in a one-line message.
func oneLine(s string, marked bool) string {
	cut := false
	if len(s) > excerptLimit {
		s, cut = s[:excerptLimit], true
		// Drop a rune the cut split in two; invalid bytes elsewhere are
		// replaced below.
		for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
			if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s))
	if cut && marked {
		s += "…"
	}
	return s
}
