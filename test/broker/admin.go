package broker

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxAdminBody bounds admin request bodies (a catalog can be large).
const maxAdminBody = 32 << 20

// StateSnapshot is what GET /admin/state returns.
type StateSnapshot struct {
	Instances []Instance `json:"instances"`
	Bindings  []Binding  `json:"bindings"`
	// MaxConcurrent maps "instance/<id>" and "binding/<id>" to the most
	// requests seen in flight at once for it.
	MaxConcurrent        map[string]int `json:"max_concurrent"`
	MaxConcurrentOverall int            `json:"max_concurrent_overall"`
	Violations           []string       `json:"violations"`
}

// Snapshot returns the broker's state for assertions in one call.
func (b *Broker) Snapshot() StateSnapshot {
	s := StateSnapshot{Instances: b.Instances(), Bindings: b.Bindings()}
	b.mu.Lock()
	defer b.mu.Unlock()
	s.MaxConcurrent = make(map[string]int, len(b.maxInflight))
	for k, v := range b.maxInflight {
		s.MaxConcurrent[k] = v
	}
	s.MaxConcurrentOverall = b.maxInflightSeen
	s.Violations = append([]string{}, b.violations...)
	return s
}

// serveAdmin is the out-of-process control surface. It is meant for the
// machine running the tests: loopback clients only (unless
// Options.AdminAllowRemote), behind the broker's own credentials, and never
// in the request log or subject to faults.
func (b *Broker) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if b.opts.DisableAdmin {
		adminError(w, http.StatusNotFound, "the admin endpoint is disabled")
		return
	}
	if !b.opts.AdminAllowRemote && !isLoopback(r.RemoteAddr) {
		adminError(w, http.StatusForbidden, "the admin endpoint only answers loopback clients")
		return
	}
	if !b.authorized(r) {
		w.Header().Set("WWW-Authenticate", b.authChallenge())
		adminError(w, http.StatusUnauthorized, "authentication failed: use the broker's credentials")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody))
	if err != nil {
		adminError(w, http.StatusBadRequest, "reading body: %v", err)
		return
	}
	path := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/admin"), "/")
	switch {
	case path == "/requests" && r.Method == http.MethodGet:
		b.adminRequests(w, r)
	case path == "/requests" && r.Method == http.MethodDelete:
		b.ClearRequests()
		adminJSON(w, http.StatusOK, struct{}{})
	case path == "/faults" && r.Method == http.MethodGet:
		adminJSON(w, http.StatusOK, b.Faults())
	case path == "/faults" && r.Method == http.MethodPost:
		b.adminInjectFaults(w, body)
	case path == "/faults" && r.Method == http.MethodDelete:
		b.ClearFaults()
		adminJSON(w, http.StatusOK, struct{}{})
	case strings.HasPrefix(path, "/faults/") && r.Method == http.MethodDelete:
		if !b.RemoveFault(strings.TrimPrefix(path, "/faults/")) {
			adminError(w, http.StatusNotFound, "no pending fault %q", strings.TrimPrefix(path, "/faults/"))
			return
		}
		adminJSON(w, http.StatusOK, struct{}{})
	case path == "/state" && r.Method == http.MethodGet:
		adminJSON(w, http.StatusOK, b.Snapshot())
	case path == "/reset" && r.Method == http.MethodPost:
		b.Reset()
		adminJSON(w, http.StatusOK, struct{}{})
	case path == "/catalog" && r.Method == http.MethodGet:
		adminJSON(w, http.StatusOK, b.Catalog())
	case path == "/catalog" && r.Method == http.MethodPut:
		b.adminReplaceCatalog(w, body)
	case path == "/async-delay" && r.Method == http.MethodPut:
		b.adminAsyncDelay(w, body)
	case path == "/forget" && r.Method == http.MethodPost:
		b.adminForget(w, body)
	default:
		adminError(w, http.StatusNotFound, "no admin endpoint %s %s (see docs/test-broker.md)", r.Method, r.URL.Path)
	}
}

// adminRequests answers the requests recorded after the sequence number "since".
func (b *Broker) adminRequests(w http.ResponseWriter, r *http.Request) {
	since, _ := strconv.Atoi(r.URL.Query().Get("since"))
	var out []RecordedRequest
	for _, rec := range b.Requests() {
		if rec.Seq > since {
			out = append(out, rec)
		}
	}
	if out == nil {
		out = []RecordedRequest{}
	}
	adminJSON(w, http.StatusOK, out)
}

// adminInjectFaults injects every fault of the body, or none of them.
func (b *Broker) adminInjectFaults(w http.ResponseWriter, body []byte) {
	faults, err := decodeFaults(body)
	if err != nil {
		adminError(w, http.StatusBadRequest, "%v", err)
		return
	}
	var ids []string
	for i, f := range faults {
		id, err := b.InjectFault(f)
		if err != nil {
			for _, done := range ids {
				b.RemoveFault(done)
			}
			adminError(w, http.StatusBadRequest, "fault %d: %v", i, err)
			return
		}
		ids = append(ids, id)
	}
	adminJSON(w, http.StatusCreated, map[string][]string{"ids": ids})
}

func (b *Broker) adminReplaceCatalog(w http.ResponseWriter, body []byte) {
	c, err := ParseCatalog(body)
	if err == nil {
		err = b.ReplaceCatalog(c)
	}
	if err != nil {
		adminError(w, http.StatusBadRequest, "%v", err)
		return
	}
	adminJSON(w, http.StatusOK, struct{}{})
}

func (b *Broker) adminAsyncDelay(w http.ResponseWriter, body []byte) {
	var req struct {
		Delay Duration `json:"delay"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		adminError(w, http.StatusBadRequest, "body must be {\"delay\": \"100ms\"}: %v", err)
		return
	}
	b.SetAsyncDelay(time.Duration(req.Delay))
	adminJSON(w, http.StatusOK, struct{}{})
}

// adminForget drops an instance or a binding from the broker's state, as if it had
// never been created.
func (b *Broker) adminForget(w http.ResponseWriter, body []byte) {
	var req struct {
		InstanceID string `json:"instance_id"`
		BindingID  string `json:"binding_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil || (req.InstanceID == "" && req.BindingID == "") {
		adminError(w, http.StatusBadRequest, "body must be {\"instance_id\": \"...\"} or {\"binding_id\": \"...\"}")
		return
	}
	b.mu.Lock()
	dropped := b.forgetLocked(req.InstanceID, req.BindingID)
	err := b.flushLocked()
	b.mu.Unlock()
	if err != nil {
		adminError(w, http.StatusInternalServerError, "saving state: %v", err)
		return
	}
	adminJSON(w, http.StatusOK, map[string]bool{"dropped": dropped})
}

// decodeFaults accepts one fault object or an array of them, strictly, so a
// misspelt field is an error rather than a fault that matches everything.
func decodeFaults(body []byte) ([]Fault, error) {
	trimmed := strings.TrimSpace(string(body))
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if strings.HasPrefix(trimmed, "[") {
		var fs []Fault
		if err := dec.Decode(&fs); err != nil {
			return nil, fmt.Errorf("faults: %w", err)
		}
		return fs, nil
	}
	var f Fault
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("fault: %w", err)
	}
	return []Fault{f}, nil
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func adminJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		adminError(w, http.StatusInternalServerError, "encoding: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func adminError(w http.ResponseWriter, status int, format string, args ...any) {
	body, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
