package osb

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// Defaults applied by NewClient to zero-valued ClientConfig fields.
const (
	// DefaultTimeout is the per-request timeout, the spec's typical 60 s.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxCatalogBytes caps a catalog body; catalogs with many plans
	// and schemas are the largest answers a broker sends.
	DefaultMaxCatalogBytes int64 = 16 << 20
	// DefaultMaxResponseBytes caps every other body.
	DefaultMaxResponseBytes int64 = 2 << 20
	// DefaultUserAgent is sent when ClientConfig.UserAgent is empty.
	DefaultUserAgent = "kubectl-catalog-osb/" + APIVersion
)

// maxRedirects matches net/http's own limit.
const maxRedirects = 10

// Client talks to one broker. Every method sends HeaderAPIVersion,
// HeaderRequestIdentity and the configured authentication, honours ctx and
// the per-request timeout, and returns either a response or an error that
// the Is* helpers and Decide understand: *HTTPStatusError for answers with a
// status the endpoint does not treat as success, *MalformedResponseError for
// undecodable success answers, *TransportError when no answer came, and
// *InvalidRequestError when the request was refused before sending.
//
// Implementations must be safe for concurrent use.
type Client interface {
	// GetCatalog fetches GET /v2/catalog. req may be nil.
	GetCatalog(ctx context.Context, req *CatalogRequest) (*CatalogResponse, error)
	// Provision sends PUT /v2/service_instances/:instance_id; success is
	// 200, 201 or 202 (Async).
	Provision(ctx context.Context, req *ProvisionRequest) (*ProvisionResponse, error)
	// Update sends PATCH /v2/service_instances/:instance_id; success is 200
	// or 202 (Async).
	Update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error)
	// Deprovision sends DELETE /v2/service_instances/:instance_id; success is
	// 200 or 202 (Async). A 410 is an error matched by IsGoneError, which
	// callers should treat as "already deleted".
	Deprovision(ctx context.Context, req *DeprovisionRequest) (*DeprovisionResponse, error)
	// LastOperation polls GET /v2/service_instances/:instance_id/last_operation.
	// A 410 is an error matched by IsGoneError.
	LastOperation(ctx context.Context, req *LastOperationRequest) (*LastOperationResponse, error)
	// GetInstance fetches GET /v2/service_instances/:instance_id.
	GetInstance(ctx context.Context, req *GetInstanceRequest) (*GetInstanceResponse, error)
	// Bind sends PUT …/service_bindings/:binding_id; success is 200, 201 or
	// 202 (Async).
	Bind(ctx context.Context, req *BindRequest) (*BindResponse, error)
	// Unbind sends DELETE …/service_bindings/:binding_id; success is 200 or
	// 202 (Async). A 410 is an error matched by IsGoneError.
	Unbind(ctx context.Context, req *UnbindRequest) (*UnbindResponse, error)
	// BindingLastOperation polls GET …/service_bindings/:binding_id/last_operation.
	BindingLastOperation(ctx context.Context, req *BindingLastOperationRequest) (*LastOperationResponse, error)
	// GetBinding fetches GET …/service_bindings/:binding_id.
	GetBinding(ctx context.Context, req *GetBindingRequest) (*GetBindingResponse, error)
}

// BasicAuth holds HTTP Basic credentials.
type BasicAuth struct {
	Username string // required
	Password string // may be empty
}

// ClientConfig configures NewClient. Only URL is required.
type ClientConfig struct {
	// URL is the broker's base URL, e.g. "https://broker.example.com/osb";
	// "/v2/..." is appended. It must not contain credentials, a query or a
	// fragment.
	URL string

	// BasicAuth and BearerToken are mutually exclusive; with neither, no
	// Authorization header is sent.
	BasicAuth   *BasicAuth
	BearerToken string // opaque token sent as "Authorization: Bearer <token>"

	// CAData is a PEM bundle trusted in addition to the system roots.
	CAData []byte
	// InsecureSkipVerify disables TLS verification. Only for tests and
	// throw-away brokers.
	InsecureSkipVerify bool

	// Timeout bounds each request including reading the body; the caller's
	// context may end it sooner. Default DefaultTimeout.
	Timeout time.Duration
	// MaxCatalogBytes caps the catalog body. Default DefaultMaxCatalogBytes.
	MaxCatalogBytes int64
	// MaxResponseBytes caps every other body. Default DefaultMaxResponseBytes.
	MaxResponseBytes int64

	// OriginatingIdentity, when set, is sent on every request unless the
	// request overrides or omits it (RequestOptions).
	OriginatingIdentity *OriginatingIdentity
	// UserAgent defaults to DefaultUserAgent.
	UserAgent string

	// HTTPClient replaces the HTTP client, for tests. It is copied, not
	// modified; its CheckRedirect is replaced by the client's own policy.
	// Incompatible with Transport, CAData and InsecureSkipVerify.
	HTTPClient *http.Client
	// Transport replaces the HTTP transport, for tests. Incompatible with
	// HTTPClient, CAData and InsecureSkipVerify.
	Transport http.RoundTripper
	// WrapTransport, when set, wraps the transport the client ends up with
	// (its own, or Transport or HTTPClient's), e.g. to observe requests. It
	// works with CAData and InsecureSkipVerify. The wrapper may be given a
	// nil transport (an HTTPClient without one): it then uses
	// http.DefaultTransport.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Now is the clock used to turn a Retry-After date into a duration.
	// Default time.Now.
	Now func() time.Time

	// DialControl, when set, is called with the address of every connection
	// the client makes, after name resolution; an error refuses the connection
	// (an egress rule: see brokerclient.Egress). The client then dials itself
	// and uses no proxy from the environment, which would connect for it.
	// Incompatible with HTTPClient and Transport.
	DialControl func(network, address string, c syscall.RawConn) error
	// BareErrors keeps nothing of an error answer but its status, an error code
	// the spec defines and the description (cut to a line): no message under
	// other keys, no excerpt of a body that is not JSON, no redirect host. For a
	// broker whose URL someone else chose: the answer may come from a server that
	// is no broker, and the error ends in a record's status.
	BareErrors bool
}

type client struct {
	base           *url.URL
	authorization  string
	http           *http.Client
	timeout        time.Duration
	maxCatalog     int64
	maxResponse    int64
	identityHeader string
	userAgent      string
	now            func() time.Time
	bareErrors     bool
}

// NewClient validates cfg and returns a Client for the broker at cfg.URL.
func NewClient(cfg *ClientConfig) (Client, error) {
	if cfg == nil {
		return nil, errors.New("osb: client config is nil")
	}
	base, err := parseBrokerURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	c := &client{
		base:        base,
		timeout:     cfg.Timeout,
		maxCatalog:  cfg.MaxCatalogBytes,
		maxResponse: cfg.MaxResponseBytes,
		userAgent:   cfg.UserAgent,
		now:         cfg.Now,
		bareErrors:  cfg.BareErrors,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxCatalog <= 0 {
		c.maxCatalog = DefaultMaxCatalogBytes
	}
	if c.maxResponse <= 0 {
		c.maxResponse = DefaultMaxResponseBytes
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	if c.now == nil {
		c.now = time.Now
	}

	switch {
	case cfg.BasicAuth != nil && cfg.BearerToken != "":
		return nil, errors.New("osb: client config sets both basic auth and a bearer token; choose one")
	case cfg.BasicAuth != nil:
		if cfg.BasicAuth.Username == "" {
			return nil, errors.New("osb: basic auth needs a username")
		}
		c.authorization = "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.BasicAuth.Username+":"+cfg.BasicAuth.Password))
	case cfg.BearerToken != "":
		if strings.ContainsAny(cfg.BearerToken, "\r\n") {
			return nil, errors.New("osb: bearer token contains a line break")
		}
		c.authorization = "Bearer " + cfg.BearerToken
	}

	if cfg.OriginatingIdentity != nil {
		if c.identityHeader, err = cfg.OriginatingIdentity.HeaderValue(); err != nil {
			return nil, err
		}
	}

	if c.http, err = buildHTTPClient(cfg, base); err != nil {
		return nil, err
	}
	return c, nil
}

func parseBrokerURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("osb: broker URL is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the input, which may hold credentials.
		return nil, errors.New("osb: broker URL does not parse")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("osb: broker URL scheme %q is not http or https", u.Scheme)
	case u.Host == "":
		return nil, errors.New("osb: broker URL has no host")
	case u.User != nil:
		return nil, errors.New("osb: broker URL contains credentials; use basic auth or a bearer token instead")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("osb: broker URL must not have a query or fragment")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

func buildHTTPClient(cfg *ClientConfig, base *url.URL) (*http.Client, error) {
	tlsOptions := len(cfg.CAData) > 0 || cfg.InsecureSkipVerify
	if cfg.HTTPClient != nil && cfg.Transport != nil {
		return nil, errors.New("osb: client config sets both HTTPClient and Transport")
	}
	if (cfg.HTTPClient != nil || cfg.Transport != nil) && tlsOptions {
		return nil, errors.New("osb: CAData and InsecureSkipVerify cannot be combined with a custom HTTPClient or Transport")
	}
	if (cfg.HTTPClient != nil || cfg.Transport != nil) && cfg.DialControl != nil {
		return nil, errors.New("osb: DialControl cannot be combined with a custom HTTPClient or Transport")
	}

	var hc http.Client
	switch {
	case cfg.HTTPClient != nil:
		hc = *cfg.HTTPClient
	case cfg.Transport != nil:
		hc.Transport = cfg.Transport
	default:
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // only when asked
		if len(cfg.CAData) > 0 {
			pool, err := x509.SystemCertPool()
			if err != nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(cfg.CAData) {
				return nil, errors.New("osb: CA data holds no PEM certificate")
			}
			tlsConfig.RootCAs = pool
		}
		tr.TLSClientConfig = tlsConfig
		if cfg.DialControl != nil {
			d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: cfg.DialControl}
			tr.DialContext = d.DialContext
			tr.Proxy = nil
		}
		hc.Transport = tr
	}
	if cfg.WrapTransport != nil {
		hc.Transport = cfg.WrapTransport(hc.Transport)
	}
	// The per-request context carries the timeout, so that it also covers
	// reading the body and can be told apart from the caller's deadline.
	hc.Timeout = 0
	hc.CheckRedirect = sameOriginRedirects(base)
	return &hc, nil
}

// sameOriginRedirects follows redirects of a GET only, and only within the
// broker's origin (scheme, host and port); any other 3xx is returned to the
// caller as an *HTTPStatusError.
//
// A mutating call is never redirected: net/http would re-send a DELETE, PUT
// or PATCH answered 301, 302 or 303 as a GET, and a GET answered 200 would
// then read as the call's success while the broker still holds the resource
// (a 307 or 308 would re-send the body to a URL the user never configured).
// A redirect to another origin is not followed either: net/http keeps
// Authorization for the same host name on another port or for a subdomain,
// and the redirected request would carry the broker's credentials there.
func sameOriginRedirects(base *url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if len(via) > 0 && via[0].Method != http.MethodGet {
			return http.ErrUseLastResponse
		}
		if req.URL.Scheme != base.Scheme || !strings.EqualFold(req.URL.Host, base.Host) {
			// Defence in depth: never let credentials ride along.
			req.Header.Del("Authorization")
			return http.ErrUseLastResponse
		}
		return nil
	}
}

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

	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, cl.method, target, body)
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

	for _, code := range ok {
		if resp.StatusCode != code {
			continue
		}
		if tooLarge {
			return nil, &MalformedResponseError{
				Method: cl.method, Path: cl.path, StatusCode: resp.StatusCode,
				Err: &BodyTooLargeError{Limit: cl.maxBytes},
			}
		}
		return &answer{status: resp.StatusCode, header: resp.Header, body: raw}, nil
	}

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
	return nil, he
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

// ---------------------------------------------------------------------------
// Validation

type checker struct {
	op     string
	reason []string
}

func (v *checker) id(name, value string) {
	switch value {
	case "":
		v.reason = append(v.reason, name+" is required")
	case ".", "..":
		// Escaping leaves dots alone and servers resolve dot segments, so
		// such an id would address another resource.
		v.reason = append(v.reason, fmt.Sprintf("%s %q is not a usable id", name, value))
	}
}

func (v *checker) required(name, value string) {
	if value == "" {
		v.reason = append(v.reason, name+" is required")
	}
}

func (v *checker) object(name string, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		v.reason = append(v.reason, name+" must be a JSON object")
	}
}

func (v *checker) err() error {
	if len(v.reason) == 0 {
		return nil
	}
	return &InvalidRequestError{Op: v.op, Reason: strings.Join(v.reason, "; ")}
}

func nilRequest(op string) error {
	return &InvalidRequestError{Op: op, Reason: "request is nil"}
}

// ---------------------------------------------------------------------------
// Endpoints

func (c *client) GetCatalog(ctx context.Context, req *CatalogRequest) (*CatalogResponse, error) {
	cat := &CatalogResponse{Services: []Service{}}
	err := c.WalkCatalog(ctx, req, func(s *Service) error {
		cat.Services = append(cat.Services, *s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cat, nil
}

func (c *client) Provision(ctx context.Context, req *ProvisionRequest) (*ProvisionResponse, error) {
	if req == nil {
		return nil, nilRequest("Provision")
	}
	v := checker{op: "Provision"}
	v.id("instance id", req.InstanceID)
	v.required("service_id", req.ServiceID)
	v.required("plan_id", req.PlanID)
	v.required("organization_guid", req.OrganizationGUID)
	v.required("space_guid", req.SpaceGUID)
	v.object("parameters", req.Parameters)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Provision", method: http.MethodPut, path: instancePath(req.InstanceID),
		query: []queryParam{boolParam("accepts_incomplete", req.AcceptsIncomplete)},
		body:  req, opts: req.RequestOptions, maxBytes: c.maxResponse,
	}
	a, err := c.do(ctx, cl, http.StatusOK, http.StatusCreated, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	var out ProvisionResponse
	if err := decodeObject(a.body, true, &out); err != nil {
		return nil, c.malformed(cl, a, err)
	}
	out.DashboardURL = withoutURLPasswords(out.DashboardURL)
	out.StatusCode, out.Async = a.status, a.status == http.StatusAccepted
	return &out, nil
}

func (c *client) Update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error) {
	if req == nil {
		return nil, nilRequest("Update")
	}
	v := checker{op: "Update"}
	v.id("instance id", req.InstanceID)
	v.required("service_id", req.ServiceID)
	v.object("parameters", req.Parameters)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Update", method: http.MethodPatch, path: instancePath(req.InstanceID),
		query: []queryParam{boolParam("accepts_incomplete", req.AcceptsIncomplete)},
		body:  req, opts: req.RequestOptions, maxBytes: c.maxResponse,
	}
	a, err := c.do(ctx, cl, http.StatusOK, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	var out UpdateResponse
	if err := decodeObject(a.body, true, &out); err != nil {
		return nil, c.malformed(cl, a, err)
	}
	out.DashboardURL = withoutURLPasswords(out.DashboardURL)
	out.StatusCode, out.Async = a.status, a.status == http.StatusAccepted
	return &out, nil
}

func (c *client) Deprovision(ctx context.Context, req *DeprovisionRequest) (*DeprovisionResponse, error) {
	if req == nil {
		return nil, nilRequest("Deprovision")
	}
	v := checker{op: "Deprovision"}
	v.id("instance id", req.InstanceID)
	v.required("service_id", req.ServiceID)
	v.required("plan_id", req.PlanID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Deprovision", method: http.MethodDelete, path: instancePath(req.InstanceID),
		query: []queryParam{
			{"service_id", req.ServiceID}, {"plan_id", req.PlanID},
			boolParam("accepts_incomplete", req.AcceptsIncomplete),
		},
		opts: req.RequestOptions, maxBytes: c.maxResponse,
	}
	a, err := c.do(ctx, cl, http.StatusOK, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	var out DeprovisionResponse
	if err := decodeObject(a.body, true, &out); err != nil {
		return nil, c.malformed(cl, a, err)
	}
	out.StatusCode, out.Async = a.status, a.status == http.StatusAccepted
	return &out, nil
}

func (c *client) LastOperation(ctx context.Context, req *LastOperationRequest) (*LastOperationResponse, error) {
	if req == nil {
		return nil, nilRequest("LastOperation")
	}
	v := checker{op: "LastOperation"}
	v.id("instance id", req.InstanceID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "LastOperation", method: http.MethodGet, path: instancePath(req.InstanceID) + "/last_operation",
		query: []queryParam{{"service_id", req.ServiceID}, {"plan_id", req.PlanID}, {"operation", req.OperationKey}},
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	return c.lastOperation(ctx, cl)
}

func (c *client) BindingLastOperation(ctx context.Context, req *BindingLastOperationRequest) (*LastOperationResponse, error) {
	if req == nil {
		return nil, nilRequest("BindingLastOperation")
	}
	v := checker{op: "BindingLastOperation"}
	v.id("instance id", req.InstanceID)
	v.id("binding id", req.BindingID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "BindingLastOperation", method: http.MethodGet, path: bindingPath(req.InstanceID, req.BindingID) + "/last_operation",
		query: []queryParam{{"service_id", req.ServiceID}, {"plan_id", req.PlanID}, {"operation", req.OperationKey}},
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	return c.lastOperation(ctx, cl)
}

func (c *client) lastOperation(ctx context.Context, cl call) (*LastOperationResponse, error) {
	a, err := c.do(ctx, cl, http.StatusOK)
	if err != nil {
		return nil, err
	}
	lo, err := DecodeLastOperation(a.body)
	if err != nil {
		return nil, c.malformed(cl, a, err)
	}
	lo.RetryAfter = ParseRetryAfter(a.header.Get(HeaderRetryAfter), c.now())
	lo.Description = withoutURLPasswords(lo.Description)
	return lo, nil
}

func (c *client) GetInstance(ctx context.Context, req *GetInstanceRequest) (*GetInstanceResponse, error) {
	if req == nil {
		return nil, nilRequest("GetInstance")
	}
	v := checker{op: "GetInstance"}
	v.id("instance id", req.InstanceID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "GetInstance", method: http.MethodGet, path: instancePath(req.InstanceID),
		query: []queryParam{{"service_id", req.ServiceID}, {"plan_id", req.PlanID}},
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	a, err := c.do(ctx, cl, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var out GetInstanceResponse
	if err := decodeObject(a.body, false, &out); err != nil {
		return nil, c.malformed(cl, a, err)
	}
	out.DashboardURL = withoutURLPasswords(out.DashboardURL)
	return &out, nil
}

func (c *client) Bind(ctx context.Context, req *BindRequest) (*BindResponse, error) {
	if req == nil {
		return nil, nilRequest("Bind")
	}
	v := checker{op: "Bind"}
	v.id("instance id", req.InstanceID)
	v.id("binding id", req.BindingID)
	v.required("service_id", req.ServiceID)
	v.required("plan_id", req.PlanID)
	v.object("parameters", req.Parameters)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Bind", method: http.MethodPut, path: bindingPath(req.InstanceID, req.BindingID),
		query: []queryParam{boolParam("accepts_incomplete", req.AcceptsIncomplete)},
		body:  req, opts: req.RequestOptions, maxBytes: c.maxResponse,
	}
	a, err := c.do(ctx, cl, http.StatusOK, http.StatusCreated, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	out, err := DecodeBindResponse(a.body)
	if err != nil {
		return nil, c.malformed(cl, a, err)
	}
	out.StatusCode, out.Async = a.status, a.status == http.StatusAccepted
	return out, nil
}

func (c *client) Unbind(ctx context.Context, req *UnbindRequest) (*UnbindResponse, error) {
	if req == nil {
		return nil, nilRequest("Unbind")
	}
	v := checker{op: "Unbind"}
	v.id("instance id", req.InstanceID)
	v.id("binding id", req.BindingID)
	v.required("service_id", req.ServiceID)
	v.required("plan_id", req.PlanID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "Unbind", method: http.MethodDelete, path: bindingPath(req.InstanceID, req.BindingID),
		query: []queryParam{
			{"service_id", req.ServiceID}, {"plan_id", req.PlanID},
			boolParam("accepts_incomplete", req.AcceptsIncomplete),
		},
		opts: req.RequestOptions, maxBytes: c.maxResponse,
	}
	a, err := c.do(ctx, cl, http.StatusOK, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	var out UnbindResponse
	if err := decodeObject(a.body, true, &out); err != nil {
		return nil, c.malformed(cl, a, err)
	}
	out.StatusCode, out.Async = a.status, a.status == http.StatusAccepted
	return &out, nil
}

func (c *client) GetBinding(ctx context.Context, req *GetBindingRequest) (*GetBindingResponse, error) {
	if req == nil {
		return nil, nilRequest("GetBinding")
	}
	v := checker{op: "GetBinding"}
	v.id("instance id", req.InstanceID)
	v.id("binding id", req.BindingID)
	if err := v.err(); err != nil {
		return nil, err
	}
	cl := call{
		op: "GetBinding", method: http.MethodGet, path: bindingPath(req.InstanceID, req.BindingID),
		query: []queryParam{{"service_id", req.ServiceID}, {"plan_id", req.PlanID}},
		opts:  req.RequestOptions, maxBytes: c.maxResponse,
	}
	a, err := c.do(ctx, cl, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var out GetBindingResponse
	if err := decodeObject(a.body, false, &out); err != nil {
		return nil, c.malformed(cl, a, err)
	}
	return &out, nil
}
