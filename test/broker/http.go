package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// maxRequestBody bounds request bodies; OSB requests are small.
const maxRequestBody = 1 << 20

// defaultOversize is the body size of ActionOversized without a Size.
const defaultOversize = 10 << 20

// route is an OSB endpoint and the ids in its path.
type route struct {
	op         Op
	instanceID string
	bindingID  string
}

// call is one OSB request on its way through the broker.
type call struct {
	route
	r                 *http.Request
	body              []byte
	query             url.Values
	identity          *OriginatingIdentity
	acceptsIncomplete bool
	key               requestKey
	rec               *RecordedRequest
	// persistErr is set when the state file could not be written.
	persistErr error
}

// reply is an answer not yet written, so that "after" faults can replace it.
type reply struct {
	status int
	body   []byte
	header http.Header
}

func jsonReply(status int, v any) reply {
	// No HTML escaping: operation keys contain "&" and should read as sent.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return errorReply(http.StatusInternalServerError, "", "encoding the answer: %v", err)
	}
	return reply{status: status, body: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}
}

func errorReply(status int, code, format string, args ...any) reply {
	return jsonReply(status, osb.ErrorResponse{Error: code, Description: fmt.Sprintf(format, args...)})
}

func (r *reply) setHeader(k, v string) {
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set(k, v)
}

// ServeHTTP routes admin, dashboard and OSB requests.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/admin/") || r.URL.Path == "/admin":
		b.serveAdmin(w, r)
	case strings.HasPrefix(r.URL.Path, "/dashboard/"):
		b.serveDashboard(w, r)
	default:
		b.serveOSB(w, r)
	}
}

func (b *Broker) serveOSB(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &RecordedRequest{
		Time:            start,
		Method:          r.Method,
		Path:            r.URL.EscapedPath(),
		Header:          redactHeader(r.Header),
		APIVersion:      r.Header.Get(osb.HeaderAPIVersion),
		RequestIdentity: r.Header.Get(osb.HeaderRequestIdentity),
	}
	if rec.RequestIdentity != "" {
		w.Header().Set(osb.HeaderRequestIdentity, rec.RequestIdentity)
	}
	query := r.URL.Query()
	if len(query) > 0 {
		rec.Query = query
	}
	body, readErr := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	rec.Body = redactBody(body)
	identity := decodeOriginatingIdentity(r.Header.Get(osb.HeaderOriginatingIdentity))
	rec.OriginatingIdentity = identity
	rt, routeErr := parseRoute(r)
	rec.Op, rec.InstanceID, rec.BindingID = rt.op, rt.instanceID, rt.bindingID
	defer func() {
		rec.Duration = Duration(time.Since(start))
		b.record(rec)
	}()

	var rep reply
	switch {
	case routeErr != nil:
		rep = *routeErr
	case !b.authorized(r):
		rep = errorReply(http.StatusUnauthorized, "", "authentication failed: send the broker's credentials in the Authorization header")
		rep.setHeader("WWW-Authenticate", b.authChallenge())
	case versionProblem(rec.APIVersion) != "":
		rep = errorReply(http.StatusPreconditionFailed, "", "%s", versionProblem(rec.APIVersion))
	case readErr != nil:
		rep = errorReply(http.StatusBadRequest, "", "reading the request body: %v", readErr)
	case len(body) > maxRequestBody:
		rep = errorReply(http.StatusRequestEntityTooLarge, "", "request body is larger than %d bytes", maxRequestBody)
	default:
		leave := b.enter(rt)
		defer leave()
		c := &call{
			route:             rt,
			r:                 r,
			body:              body,
			query:             query,
			identity:          identity,
			acceptsIncomplete: query.Get("accepts_incomplete") == "true",
			rec:               rec,
		}
		var answered bool
		rep, answered = b.dispatch(w, c, leave)
		if !answered {
			return
		}
	}
	b.write(w, rep, rec)
}

// write sends rep and records it.
func (b *Broker) write(w http.ResponseWriter, rep reply, rec *RecordedRequest) {
	h := w.Header()
	for k, vs := range rep.header {
		h[k] = vs
	}
	if rep.status != http.StatusNotModified {
		h.Set("Content-Type", "application/json")
	}
	w.WriteHeader(rep.status)
	if rep.status != http.StatusNotModified {
		_, _ = w.Write(rep.body)
	}
	rec.Status = rep.status
	rec.ResponseHeader = redactHeader(h)
	rec.ResponseBody = redactBody(rep.body)
}

func (b *Broker) record(rec *RecordedRequest) {
	b.mu.Lock()
	b.seq++
	rec.Seq = b.seq
	b.requests = append(b.requests, *rec)
	limit := b.opts.RequestLogLimit
	if limit == 0 {
		limit = defaultRequestLogLimit
	}
	if limit > 0 && len(b.requests) > limit {
		b.requests = slices.Delete(b.requests, 0, len(b.requests)-limit)
	}
	b.mu.Unlock()
	b.logger.Info("osb request", "method", rec.Method, "path", rec.Path, "status", rec.Status,
		"fault", rec.Fault, "duration", time.Duration(rec.Duration).Round(time.Microsecond))
}

// enter counts the request as in flight on its instance or binding and
// returns the (idempotent) function that uncounts it.
func (b *Broker) enter(rt route) func() {
	var key string
	switch {
	case rt.bindingID != "":
		key = bindingKey(rt.bindingID)
	case rt.instanceID != "":
		key = instanceKey(rt.instanceID)
	default:
		return func() {}
	}
	b.mu.Lock()
	b.inflight[key]++
	n := b.inflight[key]
	b.maxInflight[key] = max(b.maxInflight[key], n)
	b.maxInflightSeen = max(b.maxInflightSeen, n)
	b.mu.Unlock()
	done := false
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if done {
			return
		}
		done = true
		b.inflight[key]--
		if b.inflight[key] <= 0 {
			delete(b.inflight, key)
		}
	}
}

// dispatch runs the handler with any fault that matches. It reports false
// when no answer must be written (hang, closed connection, client gone).
func (b *Broker) dispatch(w http.ResponseWriter, c *call, leave func()) (reply, bool) {
	b.mu.Lock()
	c.key = b.faultKeyLocked(c)
	f, struck := b.faults.take(c.key, func(f *Fault) bool { return !f.actsOnOperation() })
	b.mu.Unlock()
	if struck {
		c.rec.Fault = f.ID
		if f.When == Before {
			if !b.wait(c, time.Duration(f.Delay)) {
				return reply{}, false
			}
			switch f.Action {
			case ActionDelay:
			case ActionDropState:
				b.dropFor(c)
			case ActionHang:
				// A hanging request is no longer "driving" the resource: the
				// platform rightly retries once it gives up on it.
				leave()
				b.wait(c, -1)
				return reply{}, false
			case ActionClose:
				closeConnection(w)
				return reply{}, false
			default:
				return faultReply(f, reply{}), true
			}
		}
	}
	done := b.workSlowly(c)
	rep := b.handle(c)
	done()
	if struck && f.When == After {
		if !b.wait(c, time.Duration(f.Delay)) {
			return reply{}, false
		}
		switch f.Action {
		case ActionDelay:
		case ActionDropState:
			b.dropFor(c)
		case ActionHang:
			leave()
			b.wait(c, -1)
			return reply{}, false
		case ActionClose:
			closeConnection(w)
			return reply{}, false
		default:
			rep = faultReply(f, rep)
		}
	}
	return rep, true
}

// wait sleeps d (forever when negative) unless the client leaves or the
// broker closes; it reports whether the whole wait happened.
func (b *Broker) wait(c *call, d time.Duration) bool {
	if d < 0 {
		select {
		case <-c.r.Context().Done():
		case <-b.closing:
		}
		return false
	}
	return sleepCtx(c.r.Context().Done(), b.closing, d)
}

func closeConnection(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	conn, _, err := rc.Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): aborting the handler resets the stream,
		// which is the closest equivalent.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func (b *Broker) dropFor(c *call) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.bindingID != "" {
		b.forgetLocked("", c.bindingID)
	} else {
		b.forgetLocked(c.instanceID, "")
	}
	if err := b.flushLocked(); err != nil {
		c.persistErr = err
	}
}

// forgetLocked drops an instance (with its bindings) and/or a binding.
func (b *Broker) forgetLocked(instanceID, bindingID string) bool {
	dropped := false
	if bindingID != "" {
		if _, ok := b.state.Bindings[bindingID]; ok {
			delete(b.state.Bindings, bindingID)
			dropped = true
		}
	}
	if instanceID != "" && b.state.forgetInstance(instanceID) {
		dropped = true
	}
	if dropped {
		b.dirty = true
	}
	return dropped
}

// faultReply builds the answer of a fault; real is the broker's own answer
// for faults that strike after it acted (zero before).
func faultReply(f Fault, real reply) reply {
	status := f.Status
	if status == 0 {
		status = real.status
	}
	if status == 0 {
		status = http.StatusOK
	}
	var rep reply
	switch f.Action {
	case ActionGone:
		rep = reply{status: http.StatusGone, body: []byte("{}")}
	case ActionRedirect:
		if f.Status == 0 {
			status = http.StatusMovedPermanently
		}
		rep = reply{status: status, body: []byte(`<a href="/v2/catalog">` + http.StatusText(status) + "</a>.\n")}
		rep.setHeader("Location", "/v2/catalog")
	case ActionMalformed:
		body := real.body
		if len(body) < 4 {
			body = []byte(`{"description":"this body is cut short"}`)
		}
		// Any proper prefix of a JSON object is invalid JSON.
		rep = reply{status: status, body: body[:len(body)/2]}
	case ActionOversized:
		size := f.Size
		if size == 0 {
			size = defaultOversize
		}
		const open, closing = `{"description":"`, `"}`
		pad := max(size-len(open)-len(closing), 0)
		rep = reply{status: status, body: []byte(open + strings.Repeat("x", pad) + closing)}
	default: // ActionRespond
		rep = reply{status: status, header: real.header.Clone()}
		switch {
		case f.Body != "":
			rep.body = []byte(f.Body)
		case f.Error != "" || f.Description != "" || f.InstanceUsable != nil || f.UpdateRepeatable != nil:
			rep.body, _ = json.Marshal(osb.ErrorResponse{Error: f.Error, Description: f.Description,
				InstanceUsable: f.InstanceUsable, UpdateRepeatable: f.UpdateRepeatable})
		case f.Status == 0 && real.status != 0:
			rep.body = real.body
		default:
			rep.body, _ = json.Marshal(osb.ErrorResponse{Description: "injected fault " + f.ID})
		}
	}
	for k, v := range f.Header {
		rep.setHeader(k, v)
	}
	return rep
}

// faultKeyLocked describes the request for fault matching. The plan is the
// one the request names, else the stored one.
func (b *Broker) faultKeyLocked(c *call) requestKey {
	k := requestKey{op: c.op, instanceID: c.instanceID, bindingID: c.bindingID}
	var peek struct {
		PlanID string `json:"plan_id"`
	}
	if len(c.body) > 0 {
		_ = json.Unmarshal(c.body, &peek)
	}
	k.planID = peek.PlanID
	if k.planID == "" {
		k.planID = c.query.Get("plan_id")
	}
	if k.planID == "" {
		if bd := b.state.Bindings[c.bindingID]; bd != nil {
			k.planID = bd.PlanID
		} else if inst := b.state.Instances[c.instanceID]; inst != nil {
			k.planID = inst.PlanID
		}
	}
	return k
}

// handle runs the OSB handler for the call.
func (b *Broker) handle(c *call) reply {
	var rep reply
	switch c.op {
	case OpCatalog:
		rep = b.getCatalog(c)
	case OpProvision:
		rep = b.provision(c)
	case OpUpdate:
		rep = b.update(c)
	case OpDeprovision:
		rep = b.deprovision(c)
	case OpLastOperation:
		rep = b.instanceLastOperation(c)
	case OpGetInstance:
		rep = b.getInstance(c)
	case OpBind:
		rep = b.bind(c)
	case OpUnbind:
		rep = b.unbind(c)
	case OpBindingLastOperation:
		rep = b.bindingLastOperation(c)
	case OpGetBinding:
		rep = b.getBinding(c)
	default:
		rep = errorReply(http.StatusNotFound, "", "no such endpoint")
	}
	if c.persistErr != nil {
		return errorReply(http.StatusInternalServerError, "", "the broker could not save its state: %v", c.persistErr)
	}
	return rep
}

// begin locks the state for a handler after completing the async operations
// whose time has come; the returned function saves and unlocks.
func (b *Broker) begin(c *call) func() {
	b.mu.Lock()
	b.advanceLocked(time.Now())
	return func() {
		if err := b.flushLocked(); err != nil {
			c.persistErr = err
		}
		b.mu.Unlock()
	}
}

// flushLocked saves the state if it changed and a state file is set.
func (b *Broker) flushLocked() error {
	if !b.dirty {
		return nil
	}
	if b.opts.StateFile == "" {
		b.dirty = false
		return nil
	}
	if err := saveState(b.opts.StateFile, b.state); err != nil {
		b.logger.Error("saving broker state", "file", b.opts.StateFile, "error", err)
		return err
	}
	b.dirty = false
	return nil
}
