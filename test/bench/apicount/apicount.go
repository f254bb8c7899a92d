// Package apicount is a reverse proxy in front of a Kubernetes API server that counts
// the requests going through it by verb and resource ("list configmaps", "create
// subjectaccessreviews"), so that a benchmark can say exactly which API requests a
// command of the real binary sends.
package apicount

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Classify names the API request of method and path (with its query) as verb and
// resource, as the API server's audit log would: GET of a collection is "list", of an
// object "get", with watch=true "watch"; POST "create"; PUT "update"; PATCH "patch";
// DELETE of an object "delete", of a collection "deletecollection". A subresource is
// "resource/subresource"; the group is left out. Requests outside /api and /apis
// resources (discovery, /version, /openapi) are verb "get", resource "discovery".
func Classify(method, path string, query url.Values) (verb, resource string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:] // api/v1/...
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:] // apis/GROUP/VERSION/...
	}
	if len(rest) == 0 {
		return "get", "discovery"
	}
	if rest[0] == "watch" { // the old /api/v1/watch/... form
		rest = rest[1:]
		query = url.Values{"watch": {"true"}}
		if len(rest) == 0 {
			return "get", "discovery"
		}
	}
	// namespaces/NS/RESOURCE/... is a namespaced resource; namespaces and
	// namespaces/NS alone are the namespaces resource itself.
	// (namespaces/NS/status and /finalize are the namespace's subresources.)
	if rest[0] == "namespaces" && len(rest) >= 3 && !(len(rest) == 3 && (rest[2] == "status" || rest[2] == "finalize")) {
		rest = rest[2:]
	}
	resource = rest[0]
	named := len(rest) >= 2
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case query.Get("watch") == "true" || query.Get("watch") == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}

// Counts are requests by "verb resource".
type Counts map[string]int

// Total is the number of requests.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// Sub is c minus before, leaving out what did not change.
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Line lists the counts, most first (then by name), each divided by per, e.g.
// "update configmaps 3, get configmaps 1" or, per 1,000 records, "update configmaps 3.01".
func (c Counts) Line(per int) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.3g", k, float64(c[k])/float64(max(per, 1)))
	}
	return strings.Join(parts, ", ")
}

// Proxy forwards every request to an API server and counts it.
type Proxy struct {
	srv    *httptest.Server
	mu     sync.Mutex
	counts Counts
	// failed counts the requests answered with a status of 400 or more, by "verb
	// resource status" (e.g. "update configmaps 409").
	failed Counts
	log    []string
	logOn  bool
	// delay is added before each request is forwarded: a network round trip.
	delay time.Duration
	// spans, while spansOn, are the requests' times, from arrival to answer.
	spans   []Span
	spansOn bool
}

// Span is when one request arrived at the proxy and when its answer was sent, and the
// request as Log says it ("METHOD URI STATUS").
type Span struct {
	Start, End time.Time
	Request    string
}

// CriticalPath is how many of the requests had to wait for one another: the longest
// chain of spans each starting after the one before it ended. Requests sent together
// (in parallel) overlap and count once; with a delay of a round trip added to every
// request, it is the number of round trips the command waited for.
func CriticalPath(spans []Span) int {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b Span) int { return a.End.Compare(b.End) })
	n := 0
	var last time.Time
	for _, sp := range s {
		if n == 0 || !sp.Start.Before(last) {
			n++
			last = sp.End
		}
	}
	return n
}

// Timeline is spans as lines, by start: "+START DURATION REQUEST", the times in
// milliseconds from the first start; what a request waited for ends before it starts.
func Timeline(spans []Span) []string {
	s := slices.Clone(spans)
	slices.SortStableFunc(s, func(a, b Span) int { return a.Start.Compare(b.Start) })
	out := make([]string, len(s))
	for i, sp := range s {
		out[i] = fmt.Sprintf("+%5dms %4dms %s", sp.Start.Sub(s[0].Start).Milliseconds(), sp.End.Sub(sp.Start).Milliseconds(), sp.Request)
	}
	return out
}

// SetDelay makes the proxy wait d before forwarding each request, as a network with a
// round trip of d would.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Spans starts (on) or stops keeping each request's span, and returns the spans kept
// since the last call. Watches are left out: they last as long as the command.
func (p *Proxy) Spans(on bool) []Span {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.spans
	p.spans, p.spansOn = nil, on
	return out
}

// statusWriter remembers the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// New starts a proxy (TLS on loopback) to the API server at target, whose certificate
// is signed by the CA in caFile. Requests keep their credentials (bearer tokens): the
// API server authenticates and authorizes them as without the proxy.
func New(target, caFile string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", caFile)
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 256, ForceAttemptHTTP2: true,
	}
	p := &Proxy{counts: Counts{}, failed: Counts{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = u.Host
		},
		Transport:     tr,
		FlushInterval: -1, // watches stream
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		verb, resource := Classify(r.Method, r.URL.Path, r.URL.Query())
		p.mu.Lock()
		p.counts[verb+" "+resource]++
		delay := p.delay
		p.mu.Unlock()
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(sw, r)
		line := fmt.Sprintf("%s %s %d", r.Method, r.URL.RequestURI(), cmp.Or(sw.status, http.StatusOK))
		p.mu.Lock()
		if p.spansOn && verb != "watch" {
			p.spans = append(p.spans, Span{Start: start, End: time.Now(), Request: line})
		}
		if sw.status >= 400 {
			p.failed[fmt.Sprintf("%s %s %d", verb, resource, sw.status)]++
		}
		if p.logOn {
			p.log = append(p.log, line)
		}
		p.mu.Unlock()
	}))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	return p, nil
}

// Failed is a copy of the counts of requests answered with a status of 400 or more,
// by "verb resource status".
func (p *Proxy) Failed() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.failed)
}

// Log starts (on) or stops keeping a line per request ("METHOD URI STATUS"), and returns
// the lines kept since the last call.
func (p *Proxy) Log(on bool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.log
	p.log, p.logOn = nil, on
	return out
}

// URL is the proxy's address.
func (p *Proxy) URL() string { return p.srv.URL }

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

// Counts is a copy of the counts so far.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(Counts, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// WriteKubeconfig writes a kubeconfig to path that reaches the API server through the
// proxy with a bearer token.
func (p *Proxy) WriteKubeconfig(path, token string) error {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: p.srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench", Namespace: "default"}
	cfg.CurrentContext = "bench"
	return clientcmd.WriteToFile(*cfg, path)
}
