package sim

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// The rogue broker: some seeds (every seed with -sim.rogue) have a broker that answers
// requests off the OSB spec, as production brokers do: 200 to a new provision, 202
// without an operation, 201 to an unbind, 410 to a provision, empty or unknown polling
// states, "succeeded" for an operation never started, a bind 201 without credentials,
// 204, 422 with error codes the spec does not define, any status from 100 to 599, bodies
// that do not decode, credentials where no credentials belong. Such an answer goes
// through the real OSB client (its status and body on the wire), so the engine gets
// exactly what it would get in production. Whether the broker applied the change is
// drawn; the ledger holds what it really holds. Rogue answers stop with the faults, so
// quiescence is judged with an honest broker.

var rogueAll = flag.Bool("sim.rogue", false, "let the broker of every seed answer off the OSB spec (by default a few seeds do)")

// rogueRate is a seed's chance of an answer off the spec, in percent: 0 for most seeds.
// It comes from a random source of its own, so that the seeds without it keep the
// traces they had before the rogue broker existed.
func rogueRate(seed uint64) int {
	r := rand.New(rand.NewPCG(seed^0x243f6a8885a308d3, seed))
	on := r.IntN(8) == 0
	rate := []int{15, 40}[r.IntN(2)]
	if on || *rogueAll {
		return rate
	}
	return 0
}

// wireAnswer is an answer as the broker sends it: a status and a body.
type wireAnswer struct {
	status int
	body   string
}

// idTrack is what the simulation knows of one OSB id: the requests for it and what the
// broker answered, in the spec's terms.
type idTrack struct {
	// created: a create (provision, bind) for the id reached the broker; effective: one
	// of them got an answer other than a 4xx (none at all, say), so it may have created
	// something.
	created, effective bool
	// gone: since the last create, a caller was given an answer that means, in the
	// spec's terms, that the broker holds nothing under the id: a delete's 200 or 410,
	// a delete's poll that succeeded or answered 410, a 4xx to a create when every create
	// of the id got one (a 4xx leaves the broker's resources unchanged).
	gone bool
	// lied: such an answer came while the broker held the id (a rogue "success" it did
	// not apply): the engine cannot know, so the id may stay at the broker.
	lied bool
	// unheldSuccess: a create of the id was answered as done (200 or 201) while the
	// broker did not carry it out (a rogue answer): credentials it handed then are none
	// it keeps, and the engine cannot know which of its answers to believe.
	unheldSuccess bool
	// rogue: the id got an answer off the spec.
	rogue bool
	// refusedHeld: a bind of the id was refused (a 4xx) while the broker held it, which
	// the honest broker answers 200 (simnew_test.go).
	refusedHeld bool
	// last is the last mutating method sent for the id (what its polls are about).
	last string
	// handed are the credentials of the last success the broker answered a bind or GET
	// binding of the id with.
	handed map[string]any
	// answers are the last answers given, for messages.
	answers []string
	// deleted: a DELETE (deprovision or unbind) of the id was answered, whatever came
	// of it (answers keeps only the last ones).
	deleted bool
	// failed are the times of answers the engine cannot take as done (failures, no
	// answer), requests the times of every request: bounded effort.
	failed, requests []time.Time
}

// idBook is the simulation's account of every OSB id and the rogue broker's state.
type idBook struct {
	ids map[string]*idTrack
	// holds are the ids each record (by ConfigMap, "namespace/name") may hold at the
	// broker, as its status said at the last check.
	holds map[string][]string
	// secrets are values that must never reach a ConfigMap: every password the broker
	// handed out, and what the rogue broker put where no credentials belong.
	secrets []string
	leaks   int
	// next is the answer the wire client's transport gives next.
	next   wireAnswer
	client osb.Client
}

func (w *world) newBook() *idBook {
	b := &idBook{ids: map[string]*idTrack{}, holds: map[string][]string{}}
	c, err := osb.NewClient(&osb.ClientConfig{URL: "https://broker.example", Transport: wireTransport{b}})
	if err != nil {
		panic(err)
	}
	b.client = c
	return b
}

func (b *idBook) track(id string) *idTrack {
	t := b.ids[id]
	if t == nil {
		t = &idTrack{}
		b.ids[id] = t
	}
	return t
}

// lied reports an id the broker said it did not hold while it held it.
func (b *idBook) lied(id string) bool {
	t := b.ids[id]
	return t != nil && t.lied
}

// wireTransport answers every request with the book's next answer, as a broker would
// over HTTP.
type wireTransport struct{ b *idBook }

func (t wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	a := t.b.next
	return &http.Response{
		StatusCode: a.status, Status: fmt.Sprintf("%d %s", a.status, http.StatusText(a.status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(a.body)),
		ContentLength: int64(len(a.body)), Request: req,
	}, nil
}

// rogueOp names the request a rogue answer is drawn for.
type rogueOp int

const (
	rogueProvision rogueOp = iota
	rogueUpdate
	rogueDeprovision
	roguePoll
	rogueBind
	rogueUnbind
	rogueBindingPoll
	rogueGetBinding
)

// leak is a secret the rogue broker puts where no credentials belong: no ConfigMap may
// ever hold it.
func (w *world) leak() string {
	w.book.leaks++
	s := fmt.Sprintf("leak-%d-%d", w.seed, w.book.leaks)
	w.book.secrets = append(w.book.secrets, s)
	return s
}

// rogueTable is the answers off the spec the broker may give to op (besides any status
// from 100 to 599 with any of the bodies of rogueBodies).
func (w *world) rogueTable(op rogueOp) []wireAnswer {
	errBody := func(code string) string {
		return fmt.Sprintf(`{"error":%q,"description":"the broker says no"}`, code)
	}
	leaky := func() []wireAnswer {
		s := w.leak()
		return []wireAnswer{
			// Credentials in an error body, and in its description as a URL's password.
			{500, fmt.Sprintf(`{"description":"cannot reach postgres://admin:%s@db.example:5432/app","credentials":{"password":%q}}`, s, s)},
			{422, fmt.Sprintf(`{"error":"QuotaExceeded","message":"see https://ops:%s@status.example/","credentials":{"password":%q}}`, s, s)},
		}
	}
	switch op {
	case rogueProvision:
		s := w.leak()
		return append(leaky(),
			wireAnswer{200, `{}`}, // 200 to a new provision
			// Credentials in a 200 provision body and in its dashboard URL.
			wireAnswer{200, fmt.Sprintf(`{"dashboard_url":"https://admin:%s@dash.example/db","credentials":{"password":%q}}`, s, s)},
			wireAnswer{201, fmt.Sprintf(`{"dashboard_url":"https://admin:%s@dash.example/db"}`, s)},
			wireAnswer{202, `{}`}, // 202 without an operation
			wireAnswer{202, fmt.Sprintf(`{"operation":"rogue-%d","dashboard_url":"https://admin:%s@dash.example/db"}`, w.rng.IntN(1000), s)},
			wireAnswer{410, `{}`},
			wireAnswer{204, ``},
			wireAnswer{422, errBody("PlanChangeNotSupported")},
			wireAnswer{409, `{}`},
			wireAnswer{201, `{"operation": 5`},
			wireAnswer{200, `<html>ok</html>`},
		)
	case rogueUpdate:
		s := w.leak()
		return append(leaky(),
			wireAnswer{201, `{}`},
			wireAnswer{202, `{}`},
			wireAnswer{200, fmt.Sprintf(`{"dashboard_url":"https://admin:%s@dash.example/db"}`, s)},
			wireAnswer{410, `{}`},
			wireAnswer{204, ``},
			wireAnswer{422, errBody("PlanChangeNotSupported")},
			wireAnswer{200, `[1,2]`},
		)
	case rogueDeprovision, rogueUnbind:
		return append(leaky(),
			wireAnswer{201, `{}`}, // 201 to a delete
			wireAnswer{202, `{}`},
			wireAnswer{204, ``},
			wireAnswer{200, ``},
			wireAnswer{200, `not json`},
			wireAnswer{404, `{}`},
			wireAnswer{422, errBody("InstanceBusy")},
			wireAnswer{410, `<html>gone</html>`},
		)
	case roguePoll, rogueBindingPoll:
		s := w.leak()
		return append(leaky(),
			wireAnswer{200, `{"state":""}`},
			wireAnswer{200, `{"state":"exploded"}`},
			wireAnswer{200, `{}`},
			wireAnswer{200, `{"state":"succeeded"}`}, // whatever was started, or nothing
			wireAnswer{200, fmt.Sprintf(`{"state":"failed","description":"see https://ops:%s@status.example/"}`, s)},
			wireAnswer{200, `{"state":"in progress"}`},
			wireAnswer{410, `{}`},
			wireAnswer{404, `{}`},
			wireAnswer{204, ``},
			wireAnswer{200, `{"state":"succeeded"`},
		)
	case rogueBind:
		s := w.leak()
		return append(leaky(),
			wireAnswer{201, `{}`}, // a bind 201 without credentials
			wireAnswer{200, `{}`},
			wireAnswer{202, `{}`},
			wireAnswer{410, `{}`},
			wireAnswer{204, ``},
			wireAnswer{422, errBody("RequiresApp2")},
			wireAnswer{201, `{"credentials":"pw"}`},
			wireAnswer{201, fmt.Sprintf(`{"credentials":{"password":%q},"volume_mounts":7}`, s)},
			// Binding metadata that does not decode (rotatedue_test.go).
			wireAnswer{201, fmt.Sprintf(`{"credentials":{"password":%q},"metadata":{"renew_before":17}}`, s)},
		)
	default: // GET binding (the engine never fetches an instance)
		return append(leaky(),
			wireAnswer{200, `{}`},
			wireAnswer{204, ``},
			wireAnswer{410, `{}`},
			wireAnswer{200, `{"credentials":`},
			wireAnswer{200, `{"credentials":{},"metadata":{"expires_at":["tomorrow"]}}`},
			wireAnswer{422, errBody("ConcurrencyError")},
		)
	}
}

// rogueBodies are the bodies a random status comes with.
var rogueBodies = []string{``, `{}`, `{"operation":""}`, `<html>oops</html>`, `{"state":"succeeded"}`, `{"error":"Teapot"}`, `{"description":`, `null`}

// rogue draws whether the broker answers this request off the spec and, if it does, the
// answer and whether the change is applied (apply, when not nil, is what applying does;
// credentialed, for a bind, is what applying holds when the answer carries the
// credentials creds).
func (w *world) rogue(op rogueOp, id string, apply func(), creds map[string]any, put func(map[string]any)) (outcome, bool) {
	if !w.faults || w.rates.rogue == 0 || !w.chance(w.rates.rogue) {
		return outcome{}, false
	}
	var a wireAnswer
	if table := w.rogueTable(op); w.rng.IntN(4) > 0 {
		a = table[w.rng.IntN(len(table))]
	} else {
		a = wireAnswer{100 + w.rng.IntN(500), rogueBodies[w.rng.IntN(len(rogueBodies))]}
		if a.status == 101 {
			// The HTTP client never hands a protocol switch to its caller.
			a.status = 100
		}
	}
	if op == rogueBind && a.status/100 == 2 && w.rng.IntN(2) == 0 && !strings.Contains(a.body, "credentials") {
		raw, _ := json.Marshal(map[string]any{"credentials": creds})
		a.body = string(raw)
	}
	w.book.track(id).rogue = true
	o := outcome{what: fmt.Sprintf("ROGUE %d %q", a.status, firstLine(a.body)), wire: &a}
	if put != nil {
		// A bind holds the credentials its answer carried, if it carried any.
		var held map[string]any
		if strings.Contains(a.body, `"password"`) {
			var v struct {
				Credentials map[string]any `json:"credentials"`
			}
			if json.Unmarshal([]byte(a.body), &v) == nil {
				held = v.Credentials
			}
		}
		apply = func() { put(held) }
	}
	if apply != nil && w.rng.IntN(2) == 0 {
		o.apply = apply
		o.what += " (carried out)"
	} else if apply != nil {
		o.what += " (not carried out)"
	}
	return o, true
}

// wire gives a rogue answer to the engine through the real client: call runs the
// client's method while the transport holds the answer.
func wire[R any](w *world, o outcome, call func(osb.Client) (R, error)) (R, error) {
	w.book.next = *o.wire
	return call(w.book.client)
}

// sent records a request for id as it reaches the broker (bounded effort, creates).
func (w *world) sent(method, id string) {
	t := w.book.track(id)
	t.requests = append(recent(t.requests, w.t), w.t)
	switch method {
	case fake.MethodProvision, fake.MethodBind:
		t.created, t.gone = true, false
		t.last = method
	case fake.MethodUpdate, fake.MethodDeprovision, fake.MethodUnbind:
		t.last = method
	}
	// Invariant 8: bounded effort. The engine polls a running operation at its poll
	// interval (2 s at least) and retries a failure after its backoff; nothing sends
	// more than this for one id in a minute of simulated time.
	if n := len(t.requests); n > 40 {
		w.fail("%d requests for OSB id %s within a minute (the last %s): the engine does not back off (answers: %s)",
			n, id, method, strings.Join(t.answers, ", "))
	}
}

// recent are the times of ts within the minute before now.
func recent(ts []time.Time, now time.Time) []time.Time {
	return slices.DeleteFunc(ts, func(x time.Time) bool { return now.Sub(x) >= time.Minute })
}

// answered records what a caller was given for its request for id: an answer or an
// error of the client (status 0: no answer), and for a poll its state. It judges the
// answer in the spec's terms: whether it says the broker holds nothing under the id,
// whether the broker lied so (it holds the id), and whether the engine may take it as
// done.
func (w *world) answered(method, id string, status int, err error, state osb.LastOperationState) {
	t := w.book.track(id)
	out := osb.OutcomeOf(status, err)
	if err == nil && state != "" {
		out = osb.PollOutcomeOf(&osb.LastOperationResponse{State: state}, nil)
	}
	delivered := !out.NoAnswer && !out.NotSent
	ok := delivered && err == nil
	var gone bool
	switch method {
	case fake.MethodDeprovision, fake.MethodUnbind:
		// 200 (a body that decodes: an empty one does) or 410, whatever its body.
		gone = ok && out.StatusCode == http.StatusOK || delivered && out.StatusCode == http.StatusGone
	case fake.MethodLastOperation, fake.MethodBindingLastOperation:
		if t.last == fake.MethodDeprovision || t.last == fake.MethodUnbind {
			gone = ok && state == osb.StateSucceeded || delivered && out.StatusCode == http.StatusGone
		}
	case fake.MethodProvision, fake.MethodBind:
		// A 4xx leaves the broker's resources unchanged: when every create of the id got
		// one, it holds nothing under it.
		refused := delivered && out.StatusCode >= 400 && out.StatusCode < 500
		gone = refused && !t.effective
		t.effective = t.effective || !refused
		t.refusedHeld = t.refusedHeld || refused && method == fake.MethodBind && w.holds(method, id) // simnew_test.go
		if ok && (out.StatusCode == http.StatusOK || out.StatusCode == http.StatusCreated) && !w.holds(method, id) {
			t.unheldSuccess = true
		}
	}
	desc := fmt.Sprintf("%s %d", method, out.StatusCode)
	switch {
	case out.NoAnswer:
		desc = method + " no answer"
	case out.Malformed:
		desc += " (does not decode)"
	case state != "":
		desc += " " + string(state)
	}
	if gone {
		t.gone = true
		if w.holds(method, id) {
			t.lied = true
			desc += " (a lie: the broker holds it)"
		}
	}
	t.answers = append(t.answers, desc)
	t.deleted = t.deleted || strings.Contains(desc, "Deprovision") || strings.Contains(desc, "Unbind")
	if len(t.answers) > 8 {
		t.answers = t.answers[len(t.answers)-8:]
	}
	if err != nil || state == osb.StateFailed {
		t.failed = append(recent(t.failed, w.t), w.t)
		// Invariant 8: after an answer it cannot take as done, the engine backs off
		// (2 s, doubling): a dozen failures of one id in a minute is a loop.
		if n := len(t.failed); n > 12 {
			w.fail("%d failed requests for OSB id %s within a minute: the engine does not back off (answers: %s)",
				n, id, strings.Join(t.answers, ", "))
		}
	}
}

// holds reports whether the broker holds id, of the kind of the method's resource.
func (w *world) holds(method, id string) bool {
	switch method {
	case fake.MethodBind, fake.MethodUnbind, fake.MethodBindingLastOperation, fake.MethodGetBinding:
		_, ok := w.ledger.Binding(id)
		return ok
	}
	_, ok := w.ledger.Instance(id)
	return ok
}

// honestPoll is the honest broker's answer to a poll of an operation it does not know,
// for an id that got answers off the spec (a 202 without an operation, a poll of an
// operation never started): the state of the id's last request, judged by what it holds.
func (w *world) honestPoll(method, id string) (*osb.LastOperationResponse, error) {
	t := w.book.track(id)
	held := w.holds(method, id)
	deleting := t.last == fake.MethodDeprovision || t.last == fake.MethodUnbind
	switch {
	case deleting && !held:
		return nil, fake.Gone()
	case deleting, !held:
		return &osb.LastOperationResponse{State: osb.StateFailed, Description: "it did not happen"}, nil
	}
	return &osb.LastOperationResponse{State: osb.StateSucceeded}, nil
}

// statusOf is the status of an answer for answered: the response's, or 0 for an error.
func statusOf(code int, err error) int {
	if err != nil {
		return 0
	}
	return code
}

// statuser is a broker answer with a status.
type statuser interface{ Status() int }

// answer records what the caller of method is given and gives it.
func answer[R statuser](w *world, method, id string, resp R, err error) (R, error) {
	if err != nil {
		var none R
		w.answered(method, id, 0, err, "")
		return none, err
	}
	w.answered(method, id, resp.Status(), nil, "")
	return resp, nil
}

// answerPoll records what the caller of a poll is given and gives it.
func answerPoll(w *world, method, id string, resp *osb.LastOperationResponse, err error) (*osb.LastOperationResponse, error) {
	if err != nil || resp == nil {
		w.answered(method, id, 0, err, "")
		return nil, err
	}
	w.answered(method, id, http.StatusOK, nil, resp.State)
	return resp, nil
}

func describeLastOperation(resp *osb.LastOperationResponse, err error) string {
	if err != nil {
		return firstLine(err.Error())
	}
	return string(resp.State)
}

// handedOut records the credentials a caller was given for binding id, and adds their
// password to what no ConfigMap may hold.
func (w *world) handedOut(id string, creds map[string]any) {
	if !w.handedToNew(id, creds) { // (move_test.go: the new cluster keeps its own account)
		w.book.track(id).handed = creds
		if creds == nil {
			w.book.track(id).handed = map[string]any{}
		}
	}
	if p, ok := creds["password"].(string); ok && p != "" {
		w.book.secrets = append(w.book.secrets, p)
	}
}

// setupBindingReads answers the polls of a binding's operation and GET binding. The
// honest broker binds synchronously unless the seed's broker binds asynchronously
// (asyncbind_test.go): a poll of an operation it started answers that operation's state;
// one of an operation it never started (a rogue 202's) the state of what it holds.
func (w *world) setupBindingReads() {
	f, l := w.broker, w.ledger
	f.OnBindingLastOperation(func(ctx context.Context, r *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
		var resp *osb.LastOperationResponse
		o := w.call(ctx, fake.MethodBindingLastOperation, r.BindingID, func() outcome {
			if o, ok := w.rogue(rogueBindingPoll, r.BindingID, nil, nil, nil); ok {
				return o
			}
			if op, ok := w.ops[r.OperationKey]; ok && op.id == r.BindingID {
				var o outcome
				resp, o = w.pollBindingOp(op)
				return o
			}
			var err error
			resp, err = w.honestPoll(fake.MethodBindingLastOperation, r.BindingID)
			return outcome{what: describeLastOperation(resp, err), err: err}
		})
		err := o.err
		if err != nil {
			resp = nil
		}
		if o.wire != nil {
			resp, err = wire(w, o, func(c osb.Client) (*osb.LastOperationResponse, error) { return c.BindingLastOperation(ctx, r) })
		}
		return answerPoll(w, fake.MethodBindingLastOperation, r.BindingID, resp, err)
	})
	f.OnGetBinding(func(ctx context.Context, r *osb.GetBindingRequest) (*osb.GetBindingResponse, error) {
		var resp *osb.GetBindingResponse
		o := w.call(ctx, fake.MethodGetBinding, r.BindingID, func() outcome {
			if o, ok := w.rogue(rogueGetBinding, r.BindingID, nil, nil, nil); ok {
				return o
			}
			if o, ok := w.getBindingFault(); ok {
				return o
			}
			h, ok := l.Binding(r.BindingID)
			if !ok {
				return outcome{what: "404 (no such binding)", err: fake.HTTPError(http.MethodGet, http.StatusNotFound, "", "no such binding")}
			}
			resp = &osb.GetBindingResponse{Credentials: h.Credentials, Metadata: w.rot.life[r.BindingID]}
			return outcome{what: "200"}
		})
		err := o.err
		if err != nil {
			resp = nil
		}
		if o.wire != nil {
			resp, err = wire(w, o, func(c osb.Client) (*osb.GetBindingResponse, error) { return c.GetBinding(ctx, r) })
		}
		if err == nil && resp != nil {
			w.handedOut(r.BindingID, resp.Credentials)
		}
		w.answered(fake.MethodGetBinding, r.BindingID, statusOf(http.StatusOK, err), err, "")
		return resp, err
	})
}
