// Package broker is an Open Service Broker API v2.17 broker for tests and
// demos: spec-conformant by default, with per-plan behaviour (async
// operations, required app, expiring bindings...) taken from its catalog, and
// faults that can be injected from Go or over an admin HTTP endpoint.
//
// Tests use it in-process:
//
//	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p", AsyncDelay: 50 * time.Millisecond})
//	b.InjectFault(broker.Fault{Op: broker.OpProvision, Action: broker.ActionRespond, Status: 500})
//
// and cmd/osb-test-broker runs it as a program. docs/test-broker.md
// describes the catalog format, the demo catalog and every fault.
package broker

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// defaultAsyncDelay is how long async operations take when neither the plan
// nor the options say: long enough for a person to see "in progress".
const defaultAsyncDelay = 3 * time.Second

// Options configure a Broker. The zero value is a broker on 127.0.0.1 with
// the demo catalog and no authentication.
type Options struct {
	// Listen is the address Start listens on; "127.0.0.1:0" when empty.
	Listen string
	// Catalog is what the broker serves; DefaultCatalog() when nil.
	Catalog *Catalog
	// Username and Password enable HTTP basic authentication.
	Username string
	Password string
	// BearerToken enables "Authorization: Bearer" authentication. With both
	// set, either is accepted.
	BearerToken string
	// TLS makes Start serve HTTPS with a generated self-signed certificate
	// for 127.0.0.1, ::1, localhost and the Listen host; see CACertPEM.
	TLS bool
	// StateFile, when set, is where instances, bindings and operations are
	// saved (atomically, after every change) and loaded from at New.
	StateFile string
	// AsyncDelay, when positive, is how long every async operation takes,
	// whatever the plans say. Tests set a few milliseconds.
	AsyncDelay time.Duration
	// RetryAfter, when positive, is sent as Retry-After on every in-progress
	// last_operation answer instead of the plans' retry_after; negative
	// means never send it.
	RetryAfter time.Duration
	// PlainOperationKeys makes operation keys plain tokens. By default they
	// contain characters that must be percent-encoded in a query (space, +,
	// &, =, /, %, #, ?), so a client that does not encode them fails.
	PlainOperationKeys bool
	// DisableAdmin turns off the /admin/ endpoints.
	DisableAdmin bool
	// AdminAllowRemote lets non-loopback clients use /admin/ (still behind
	// the broker's authentication).
	AdminAllowRemote bool
	// RequestLogLimit is how many requests the log keeps, dropping the
	// oldest first; 0 means 10000 and a negative value means no limit.
	RequestLogLimit int
	// Logger receives one line per request and persistence errors; nil
	// discards them.
	Logger *slog.Logger
}

// defaultRequestLogLimit keeps a long-running demo broker's memory bounded.
const defaultRequestLogLimit = 10000

// Broker is a running (or ready to run) test broker. All methods are safe
// for concurrent use.
type Broker struct {
	opts   Options
	logger *slog.Logger

	// tlsCert and caPEM exist when Options.TLS is set.
	tlsCert *tls.Certificate
	caPEM   []byte

	// closing is closed by Close so hanging requests end.
	closing   chan struct{}
	closeOnce sync.Once

	srvMu    sync.Mutex
	server   *http.Server
	listener net.Listener
	url      string

	// mu guards everything below.
	mu              sync.Mutex
	initialCatalog  *catalogIndex
	catalog         *catalogIndex
	asyncDelay      time.Duration
	state           *state
	dirty           bool
	faults          faultSet
	requests        []RecordedRequest
	seq             int
	violations      []string
	inflight        map[string]int
	maxInflight     map[string]int
	maxInflightSeen int
	slow            slowWork
}

// New builds a broker; it does not listen yet (see Start and Handler).
func New(opts Options) (*Broker, error) {
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if (opts.Username == "") != (opts.Password == "") {
		return nil, errors.New("broker options: set both Username and Password for basic authentication, or neither")
	}
	cat := DefaultCatalog()
	if opts.Catalog != nil {
		cat = *opts.Catalog
	}
	idx, err := indexCatalog(cat)
	if err != nil {
		return nil, fmt.Errorf("broker catalog: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b := &Broker{
		opts:           opts,
		logger:         logger,
		closing:        make(chan struct{}),
		initialCatalog: idx,
		catalog:        idx,
		asyncDelay:     opts.AsyncDelay,
		state:          newState(),
		inflight:       map[string]int{},
		maxInflight:    map[string]int{},
	}
	if opts.StateFile != "" {
		if b.state, err = loadState(opts.StateFile); err != nil {
			return nil, err
		}
	}
	if opts.TLS {
		hosts := []string{"127.0.0.1", "::1", "localhost"}
		if h, _, err := net.SplitHostPort(opts.Listen); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
			hosts = append(hosts, h)
		}
		cert, caPEM, err := selfSigned(hosts)
		if err != nil {
			return nil, err
		}
		b.tlsCert, b.caPEM = &cert, caPEM
	}
	return b, nil
}

// Start listens on Options.Listen and serves in the background.
func (b *Broker) Start() error {
	b.srvMu.Lock()
	defer b.srvMu.Unlock()
	if b.server != nil {
		return errors.New("broker already started")
	}
	ln, err := net.Listen("tcp", b.opts.Listen)
	if err != nil {
		return fmt.Errorf("broker listen on %s: %w", b.opts.Listen, err)
	}
	scheme := "http"
	if b.tlsCert != nil {
		// HTTP/1.1 only: the close-connection fault hijacks the connection,
		// which HTTP/2 cannot do.
		ln = tls.NewListener(ln, &tls.Config{
			Certificates: []tls.Certificate{*b.tlsCert},
			NextProtos:   []string{"http/1.1"},
			MinVersion:   tls.VersionTLS12,
		})
		scheme = "https"
	}
	b.listener = ln
	b.url = scheme + "://" + ln.Addr().String()
	b.server = &http.Server{
		Handler:           b,
		ReadHeaderTimeout: 30 * time.Second,
		// TLS handshake failures (an untrusting client) are expected in
		// tests; they go to the broker's logger, not to stderr.
		ErrorLog: slog.NewLogLogger(b.logger.Handler(), slog.LevelDebug),
	}
	srv := b.server
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.logger.Error("broker stopped serving", "error", err)
		}
	}()
	return nil
}

// NewTestBroker starts a broker for t and closes it when the test ends.
func NewTestBroker(t testing.TB, opts Options) *Broker {
	t.Helper()
	b, err := New(opts)
	if err != nil {
		t.Fatalf("creating test broker: %v", err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("starting test broker: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Close stops serving, ends hanging requests and drops open connections.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() { close(b.closing) })
	b.srvMu.Lock()
	defer b.srvMu.Unlock()
	if b.server == nil {
		return nil
	}
	err := b.server.Close()
	b.server = nil
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Shutdown stops accepting requests and waits (until ctx ends) for the ones
// in flight, then closes whatever is left. Hanging requests end at once.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.closeOnce.Do(func() { close(b.closing) })
	b.srvMu.Lock()
	srv := b.server
	b.server = nil
	b.srvMu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	return nil
}

// URL is the broker's base URL ("http://127.0.0.1:PORT"), once started.
func (b *Broker) URL() string {
	b.srvMu.Lock()
	defer b.srvMu.Unlock()
	return b.url
}

// Handler serves the broker, for callers who run their own server (for
// instance httptest.NewServer(b.Handler())).
func (b *Broker) Handler() http.Handler { return b }

// CACertPEM is the PEM certificate to trust for a TLS broker; nil otherwise.
func (b *Broker) CACertPEM() []byte { return slices.Clone(b.caPEM) }

// Catalog returns a copy of the catalog being served.
func (b *Broker) Catalog() Catalog {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.catalog.catalog.clone()
}

// ReplaceCatalog validates c and serves it from now on. Existing instances
// and bindings are kept even if their plan is gone, as with a real broker;
// they can still be polled, fetched and deleted.
func (b *Broker) ReplaceCatalog(c Catalog) error {
	idx, err := indexCatalog(c)
	if err != nil {
		return fmt.Errorf("replacing catalog: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.catalog = idx
	return nil
}

// SetPlanBehaviour replaces the behaviour of one plan of the served catalog.
func (b *Broker) SetPlanBehaviour(planID string, pb PlanBehaviour) error {
	b.mu.Lock()
	c := b.catalog.catalog.clone()
	b.mu.Unlock()
	if c.Behaviours == nil {
		c.Behaviours = map[string]PlanBehaviour{}
	}
	c.Behaviours[planID] = pb
	return b.ReplaceCatalog(c)
}

// SetAsyncDelay makes every async operation started from now on take d,
// whatever the plans say; 0 goes back to the plans' delays.
func (b *Broker) SetAsyncDelay(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asyncDelay = d
}

// InjectFault adds a fault and returns its id.
func (b *Broker) InjectFault(f Fault) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.faults.add(f)
}

// Faults lists the faults that have strikes left.
func (b *Broker) Faults() []Fault {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.faults.list()
}

// RemoveFault removes one fault; it reports whether it existed.
func (b *Broker) RemoveFault(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.faults.remove(id)
}

// ClearFaults removes every pending fault.
func (b *Broker) ClearFaults() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults.clear()
}

// Requests returns the request log, oldest first.
func (b *Broker) Requests() []RecordedRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// RequestsFor returns the logged requests of one operation, oldest first.
func (b *Broker) RequestsFor(op Op) []RecordedRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []RecordedRequest
	for _, r := range b.requests {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

// ClearRequests empties the request log.
func (b *Broker) ClearRequests() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = nil
}

// Instances returns copies of the stored instances, sorted by id.
func (b *Broker) Instances() []Instance {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(time.Now())
	b.flushLocked()
	out := make([]Instance, 0, len(b.state.Instances))
	for _, i := range b.state.Instances {
		out = append(out, cloneJSON(*i))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Instance returns a copy of one stored instance.
func (b *Broker) Instance(id string) (Instance, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(time.Now())
	b.flushLocked()
	i, ok := b.state.Instances[id]
	if !ok {
		return Instance{}, false
	}
	return cloneJSON(*i), true
}

// Bindings returns copies of the stored bindings, sorted by id.
func (b *Broker) Bindings() []Binding {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(time.Now())
	b.flushLocked()
	out := make([]Binding, 0, len(b.state.Bindings))
	for _, x := range b.state.Bindings {
		out = append(out, cloneJSON(*x))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Binding returns a copy of one stored binding.
func (b *Broker) Binding(id string) (Binding, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(time.Now())
	b.flushLocked()
	x, ok := b.state.Bindings[id]
	if !ok {
		return Binding{}, false
	}
	return cloneJSON(*x), true
}

// Forget drops an instance (with its bindings) or a binding from the
// broker's state without any request, as if its database lost it. It
// reports whether something was dropped.
func (b *Broker) Forget(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ok := b.forgetLocked(id, id)
	b.flushLocked()
	return ok
}

// MaxConcurrent is the largest number of requests seen in flight at once for
// an instance id (instance endpoints) or a binding id (binding endpoints).
func (b *Broker) MaxConcurrent(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.maxInflight[instanceKey(id)], b.maxInflight[bindingKey(id)])
}

// InFlight is how many requests for an instance id (instance endpoints) or a binding
// id (binding endpoints) the broker is working on now.
func (b *Broker) InFlight(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.inflight[instanceKey(id)], b.inflight[bindingKey(id)])
}

// MaxConcurrentOverall is the largest MaxConcurrent over all ids: 1 means no
// instance or binding was ever driven by two requests at once.
func (b *Broker) MaxConcurrentOverall() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxInflightSeen
}

// Violations lists protocol mistakes the platform made that the broker
// tolerated (for instance deprovisioning an instance that still has
// bindings, or polling without the operation it was given).
func (b *Broker) Violations() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.violations)
}

// Reset forgets all instances, bindings, faults, logged requests,
// concurrency counts and violations, and restores the catalog and async
// delay given to New. With a state file, the emptied state is saved.
func (b *Broker) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.catalog = b.initialCatalog
	b.asyncDelay = b.opts.AsyncDelay
	b.state = newState()
	b.dirty = true
	b.faults.clear()
	b.requests = nil
	b.violations = nil
	clear(b.maxInflight)
	b.maxInflightSeen = 0
	for k, v := range b.inflight {
		if v > 0 {
			b.maxInflight[k] = v
			b.maxInflightSeen = max(b.maxInflightSeen, v)
		}
	}
	b.flushLocked()
}

func instanceKey(id string) string { return "instance/" + id }
func bindingKey(id string) string  { return "binding/" + id }

func (b *Broker) violateLocked(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.violations = append(b.violations, msg)
	b.logger.Warn("platform protocol violation", "violation", msg)
}

// authorized checks basic or bearer credentials in constant time.
func (b *Broker) authorized(r *http.Request) bool {
	if b.opts.Username == "" && b.opts.BearerToken == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	if b.opts.BearerToken != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") &&
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(b.opts.BearerToken)) == 1 {
			return true
		}
	}
	if b.opts.Username != "" {
		u, p, ok := r.BasicAuth()
		if ok && subtle.ConstantTimeCompare([]byte(u), []byte(b.opts.Username))&
			subtle.ConstantTimeCompare([]byte(p), []byte(b.opts.Password)) == 1 {
			return true
		}
	}
	return false
}

func (b *Broker) authChallenge() string {
	if b.opts.Username != "" {
		return `Basic realm="osb-test-broker"`
	}
	return `Bearer realm="osb-test-broker"`
}
