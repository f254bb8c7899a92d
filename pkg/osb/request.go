package osb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// ---------------------------------------------------------------------------
// Request plumbing

type call struct {
	op       string
	method   string
	path     string // escaped
	query    []queryParam
	body     any // nil: no body
	opts     RequestOptions
	maxBytes int64
	// stream, when set, reads a body with an accepted status as it arrives (capped
	// at maxBytes) instead of reading it whole; the answer then has no body.
	stream func(io.Reader) error
}

type queryParam struct{ key, value string }

// answer is a broker answer with a status the endpoint accepts.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// encodeQuery percent-encodes values (space as %20, not "+") and skips empty
// ones, keeping the given order so the wire format is predictable.
func encodeQuery(params []queryParam) string {
	var b strings.Builder
	for _, p := range params {
		if p.value == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p.key))
		b.WriteByte('=')
		b.WriteString(strings.ReplaceAll(url.QueryEscape(p.value), "+", "%20"))
	}
	return b.String()
}

func boolParam(key string, v bool) queryParam {
	if !v {
		return queryParam{key: key}
	}
	return queryParam{key: key, value: "true"}
}

func instancePath(instanceID string) string {
	return "/v2/service_instances/" + url.PathEscape(instanceID)
}

func bindingPath(instanceID, bindingID string) string {
	return instancePath(instanceID) + "/service_bindings/" + url.PathEscape(bindingID)
}

// do sends c and returns the answer when its status is one of ok. Any other
// status becomes an *HTTPStatusError, no answer a *TransportError, and an
// oversized success body a *MalformedResponseError.
func (c *client) do(ctx context.Context, cl call, ok ...int) (*answer, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := c.newRequest(rctx, cl)
	if err != nil {
		return nil, err
	}

	resp, err := c.http.Do(req)
	if err != nil {
		err = stripURL(err)
		if c.bareErrors {
			err = stripAddress(err)
		}
		return nil, classifyTransport(ctx, &TransportError{Method: cl.method, Path: cl.path, Err: err})
	}
	defer resp.Body.Close()

	if cl.stream != nil && slices.Contains(ok, resp.StatusCode) {
		return c.readStream(ctx, cl, resp)
	}

	raw, err := io.ReadAll(io.LimitReader(resp.Body, cl.maxBytes+1))
	if err != nil {
		return nil, classifyTransport(ctx, &TransportError{Method: cl.method, Path: cl.path, StatusCode: resp.StatusCode, Err: stripURL(err)})
	}
	tooLarge := int64(len(raw)) > cl.maxBytes

	if slices.Contains(ok, resp.StatusCode) {
		if tooLarge {
			return nil, &MalformedResponseError{
				Method: cl.method, Path: cl.path, StatusCode: resp.StatusCode,
				Err: &BodyTooLargeError{Limit: cl.maxBytes},
			}
		}
		return &answer{status: resp.StatusCode, header: resp.Header, body: raw}, nil
	}
	return nil, c.statusError(cl, resp, raw, tooLarge)
}

// newRequest builds the HTTP request for cl: its body, the query and the headers
// every call carries.
func (c *client) newRequest(ctx context.Context, cl call) (*http.Request, error) {
	var body io.Reader
	if cl.body != nil {
		raw, err := json.Marshal(cl.body)
		if err != nil {
			return nil, &InvalidRequestError{Op: cl.op, Reason: "encoding the body of " + cl.method + " " + cl.path, Err: err}
		}
		body = bytes.NewReader(raw)
	}

	identity := c.identityHeader
	switch {
	case cl.opts.OmitOriginatingIdentity:
		identity = ""
	case cl.opts.OriginatingIdentity != nil:
		var err error
		if identity, err = cl.opts.OriginatingIdentity.HeaderValue(); err != nil {
			return nil, &InvalidRequestError{Op: cl.op, Reason: "encoding the originating identity", Err: err}
		}
	}
	requestID := cl.opts.RequestIdentity
	if requestID == "" {
		requestID = uuid.NewString()
	}

	target := c.base.Scheme + "://" + c.base.Host + c.base.EscapedPath() + cl.path
	if q := encodeQuery(cl.query); q != "" {
		target += "?" + q
	}

	req, err := http.NewRequestWithContext(ctx, cl.method, target, body)
	if err != nil {
		return nil, &InvalidRequestError{Op: cl.op, Reason: "cannot build request for " + cl.path}
	}
	req.Header.Set(HeaderAPIVersion, APIVersion)
	req.Header.Set(HeaderRequestIdentity, requestID)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if identity != "" {
		req.Header.Set(HeaderOriginatingIdentity, identity)
	}
	if c.authorization != "" {
		req.Header.Set("Authorization", c.authorization)
	}
	return req, nil
}

// statusError describes an answer whose status the call does not accept.
func (c *client) statusError(cl call, resp *http.Response, raw []byte, tooLarge bool) *HTTPStatusError {
	he := &HTTPStatusError{Method: cl.method, Path: cl.path, StatusCode: resp.StatusCode}
	// Only an error status has an error body. A 2xx body the endpoint does
	// not expect (a bind's holds credentials) and a 3xx body are not read.
	if resp.StatusCode >= 400 {
		switch {
		case looksLikeJSON(raw) && !tooLarge:
			eb := DecodeErrorBody(raw)
			he.ErrorCode, he.Description = eb.Error, eb.Description
			he.InstanceUsable, he.UpdateRepeatable = eb.InstanceUsable, eb.UpdateRepeatable
			if he.Description == "" {
				he.Message = errorMessage(raw)
			}
		case !looksLikeJSON(raw):
			he.BodyExcerpt = excerpt(raw)
		}
	}
	he.Description, he.Message, he.BodyExcerpt = withoutURLPasswords(he.Description), withoutURLPasswords(he.Message), withoutURLPasswords(he.BodyExcerpt)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if loc, err := resp.Location(); err == nil {
			he.RedirectHost = loc.Host
		}
	}
	if c.bareErrors {
		bare(he)
	}
	return he
}

// bare keeps of he only what BareErrors allows.
func bare(he *HTTPStatusError) {
	he.Message, he.BodyExcerpt, he.RedirectHost = "", "", ""
	if !slices.Contains([]string{ErrorCodeAsyncRequired, ErrorCodeConcurrencyError, ErrorCodeRequiresApp, ErrorCodeMaintenanceInfoConflict}, he.ErrorCode) {
		he.ErrorCode = ""
	}
	he.Description = oneLine(he.Description, true)
}

// readStream hands an accepted body to cl.stream. A read that fails is a transport
// error, a body over the cap or one that does not decode is a malformed answer, and an
// error of the stream's own caller is returned as it is.
func (c *client) readStream(ctx context.Context, cl call, resp *http.Response) (*answer, error) {
	body := &recordingReader{r: &limitedBody{r: resp.Body, remaining: cl.maxBytes, limit: cl.maxBytes}}
	err := cl.stream(body)
	a := &answer{status: resp.StatusCode, header: resp.Header}
	var aborted *walkAborted
	var tooLarge *BodyTooLargeError
	switch {
	case err == nil:
		return a, nil
	case errors.As(err, &aborted):
		return nil, err
	case errors.As(body.err, &tooLarge):
		return nil, c.malformed(cl, a, tooLarge)
	case body.err != nil && body.err != io.EOF:
		return nil, classifyTransport(ctx, &TransportError{Method: cl.method, Path: cl.path, StatusCode: resp.StatusCode, Err: stripURL(body.err)})
	default:
		return nil, c.malformed(cl, a, err)
	}
}

// recordingReader remembers the first error of the reader under it.
type recordingReader struct {
	r   io.Reader
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// stripURL drops the *url.Error wrapper, whose message repeats the full URL.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// stripAddress drops the addresses a connection error names ("dial tcp 10.0.0.7:80:"),
// keeping its operation and cause: what a broker's host name resolves to is not for
// whoever chose the name (BareErrors).
func stripAddress(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return fmt.Errorf("%s: %w", oe.Op, oe.Err)
	}
	return err
}

func (c *client) malformed(cl call, a *answer, err error) error {
	return &MalformedResponseError{Method: cl.method, Path: cl.path, StatusCode: a.status, Err: err}
}
