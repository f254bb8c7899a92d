package osb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
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
	// Transports, when set, gives the client the transport (and so the idle
	// connections) of the earlier clients built with it and the same TLS settings
	// (CAData, InsecureSkipVerify) and DialControl set or not; every client built
	// with one Transports that sets DialControl must set the same one. Without it
	// each client has a transport of its own. Ignored with HTTPClient or Transport.
	Transports *Transports
}

// Transports are the transports of the clients built with them (ClientConfig.Transports),
// one per TLS setting and dial rule: a process that builds a client per broker and per
// while (reconcile, whose workers share a broker's client for a few seconds, then
// build it again) keeps its connections to a broker across clients, instead of opening
// new ones (a TCP connection and a TLS handshake per call) and leaving the old ones
// idle. Requests carry their own credentials: a connection carries nothing of the
// client that opened it. The zero value is ready to use and safe for concurrent use.
type Transports struct {
	mu sync.Mutex
	m  map[transportKey]*http.Transport
}

// transportKey is what makes two clients' transports differ.
type transportKey struct {
	ca                string
	insecure, dialing bool
}

// maxSharedTransports bounds the transports kept (brokers with a CA bundle of their
// own each have one); past it, a client has its own transport.
const maxSharedTransports = 256

// maxSharedCABytes bounds the CA bundle of a shared transport: a namespace-scoped
// broker's bundle is its tenant's to write, and a kept transport holds it (and the
// certificates parsed from it) for the life of the process. A client trusting a larger
// bundle has a transport of its own, dropped with it.
const maxSharedCABytes = 16 << 10

func (t *Transports) get(key transportKey, build func() (*http.Transport, error)) (*http.Transport, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr, ok := t.m[key]; ok {
		return tr, nil
	}
	tr, err := build()
	if err != nil || len(t.m) >= maxSharedTransports {
		return tr, err
	}
	if t.m == nil {
		t.m = map[transportKey]*http.Transport{}
	}
	t.m[key] = tr
	return tr, nil
}

// CloseIdleConnections closes the idle connections of every transport kept.
func (t *Transports) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tr := range t.m {
		tr.CloseIdleConnections()
	}
}

// maxIdleConnsPerHost is how many idle connections a client keeps to its broker: as
// many as the calls a process makes to it at once (reconcile's workers), up to the
// transport's bound on idle connections in all. The default, 2, closes a connection
// after every call beyond the second made at once, and opens one for the next.
const maxIdleConnsPerHost = 100

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
		build := func() (*http.Transport, error) { return newTransport(cfg) }
		var tr *http.Transport
		var err error
		if cfg.Transports != nil && len(cfg.CAData) <= maxSharedCABytes {
			tr, err = cfg.Transports.get(transportKey{ca: string(cfg.CAData), insecure: cfg.InsecureSkipVerify, dialing: cfg.DialControl != nil}, build)
		} else {
			tr, err = build()
		}
		if err != nil {
			return nil, err
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

// newTransport is the transport of a client of cfg: its TLS settings and dial rule.
func newTransport(cfg *ClientConfig) (*http.Transport, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
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
	return tr, nil
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
