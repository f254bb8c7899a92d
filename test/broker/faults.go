package broker

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Op names an OSB endpoint of the broker, for faults, the request log and
// the plan behaviour's async list.
type Op string

// The broker's operations, one per OSB endpoint.
const (
	OpCatalog              Op = "catalog"
	OpProvision            Op = "provision"
	OpUpdate               Op = "update"
	OpDeprovision          Op = "deprovision"
	OpLastOperation        Op = "last_operation"
	OpGetInstance          Op = "get_instance"
	OpBind                 Op = "bind"
	OpUnbind               Op = "unbind"
	OpBindingLastOperation Op = "binding_last_operation"
	OpGetBinding           Op = "get_binding"
	// OpAny matches every operation in a Fault.
	OpAny Op = "*"
)

var allOps = []Op{OpCatalog, OpProvision, OpUpdate, OpDeprovision, OpLastOperation, OpGetInstance,
	OpBind, OpUnbind, OpBindingLastOperation, OpGetBinding}

// Action is what a Fault does to a request it matches.
type Action string

// Fault actions. See Fault for how each combines with When.
const (
	// ActionRespond answers with Status and an error body built from Error,
	// Description, InstanceUsable and UpdateRepeatable, or with Body
	// verbatim. With When=after, a zero Status keeps the real status and an
	// empty body keeps the real body, so Header alone can decorate a real
	// answer (for instance an HTTP-date Retry-After).
	ActionRespond Action = "respond"
	// ActionGone answers 410 with "{}": the way to make last_operation say
	// "gone" while an operation is still running.
	ActionGone Action = "gone"
	// ActionDelay only waits Delay; the request then proceeds normally.
	ActionDelay Action = "delay"
	// ActionHang never answers: it blocks until the client gives up (the
	// request context ends) or the broker closes.
	ActionHang Action = "hang"
	// ActionMalformed answers with a truncated JSON body.
	ActionMalformed Action = "malformed"
	// ActionOversized answers with a syntactically valid JSON body of Size
	// bytes (10 MiB when Size is 0).
	ActionOversized Action = "oversized"
	// ActionClose hijacks the connection and closes it without an answer.
	ActionClose Action = "close"
	// ActionFailOperation makes an asynchronous operation end "failed": the
	// one a matched provision/update/deprovision/bind/unbind starts, or the
	// one a matched last_operation polls (it fails at once). Description,
	// InstanceUsable and UpdateRepeatable go into the last_operation answer.
	ActionFailOperation Action = "fail_operation"
	// ActionStickOperation makes that operation stay "in progress" forever.
	ActionStickOperation Action = "stick_operation"
	// ActionDropState makes the broker forget the instance (with its
	// bindings) or binding the request names, as if its database lost it.
	ActionDropState Action = "drop_state"
	// ActionRedirect answers Status (301 when 0; it must be a 3xx) with
	// "Location: /v2/catalog", the broker's own catalog, as a proxy or a
	// moved broker might. A client that re-sends a DELETE, PUT or PATCH as
	// the GET net/http makes of a 301, 302 or 303 gets the catalog's 200.
	ActionRedirect Action = "redirect"
)

var allActions = []Action{ActionRespond, ActionGone, ActionDelay, ActionHang, ActionMalformed, ActionOversized,
	ActionClose, ActionFailOperation, ActionStickOperation, ActionDropState, ActionRedirect}

// When says whether a fault strikes before the broker acts on the request or
// after it.
type When string

const (
	// Before: the broker's state is unchanged; only the answer is faulty
	// (or absent).
	Before When = "before"
	// After: the broker has done the work (state changed, persisted) but the
	// platform gets the faulty answer, or none: the case that needs orphan
	// mitigation or a crash-safe platform.
	After When = "after"
)

// Fault is one injected misbehaviour. A fault matches a request by Op and,
// when set, by InstanceID, BindingID and PlanID; it strikes Times times (once
// when Times is 0) and is then gone. Faults are tried in the order they were
// injected and at most one strikes per request.
type Fault struct {
	// ID is assigned by InjectFault.
	ID string `json:"id,omitempty"`
	// Op is the operation to match (required); OpAny matches all of them.
	Op Op `json:"op"`
	// InstanceID, BindingID and PlanID narrow the match when set. PlanID is
	// compared with the request's plan_id, or the stored instance's plan.
	InstanceID string `json:"instance_id,omitempty"`
	BindingID  string `json:"binding_id,omitempty"`
	PlanID     string `json:"plan_id,omitempty"`
	// Times is how many matching requests the fault strikes; 0 means 1.
	Times int `json:"times,omitempty"`
	// Remaining is how many strikes are left (read-only, in listings).
	Remaining int `json:"remaining,omitempty"`
	// When is Before (the default) or After. ActionFailOperation and
	// ActionStickOperation ignore it: they act on the operation itself.
	When When `json:"when,omitempty"`
	// Action is what happens (required).
	Action Action `json:"action"`

	// Status is the HTTP status for ActionRespond (required with Before),
	// ActionMalformed and ActionOversized (default: 200 with Before, the real
	// status with After).
	Status int `json:"status,omitempty"`
	// Error, Description, InstanceUsable and UpdateRepeatable make the error
	// body of ActionRespond, and the failure of ActionFailOperation.
	Error            string `json:"error,omitempty"`
	Description      string `json:"description,omitempty"`
	InstanceUsable   *bool  `json:"instance_usable,omitempty"`
	UpdateRepeatable *bool  `json:"update_repeatable,omitempty"`
	// Body, when set, is sent verbatim by ActionRespond instead of an error
	// body.
	Body string `json:"body,omitempty"`
	// Header is added to the answer of ActionRespond.
	Header map[string]string `json:"header,omitempty"`
	// Delay is waited before the fault's effect, with any action (it is the
	// whole effect of ActionDelay). With When=after the wait comes after the
	// broker has acted, which makes a client time out on work that was done.
	Delay Duration `json:"delay,omitempty"`
	// Size is the body size of ActionOversized.
	Size int `json:"size,omitempty"`
}

// validate checks the fault and fills in defaults.
func (f *Fault) validate() error {
	if f.Op == "" {
		return fmt.Errorf("fault: op is required (one of %v or %q)", allOps, OpAny)
	}
	if f.Op != OpAny && !slices.Contains(allOps, f.Op) {
		return fmt.Errorf("fault: unknown op %q (use one of %v or %q)", f.Op, allOps, OpAny)
	}
	if f.Action == "" {
		return fmt.Errorf("fault: action is required (one of %v)", allActions)
	}
	if !slices.Contains(allActions, f.Action) {
		return fmt.Errorf("fault: unknown action %q (use one of %v)", f.Action, allActions)
	}
	switch f.When {
	case "":
		f.When = Before
	case Before, After:
	default:
		return fmt.Errorf("fault: when must be %q or %q, not %q", Before, After, f.When)
	}
	if f.Times < 0 {
		return fmt.Errorf("fault: times must not be negative")
	}
	if f.Times == 0 {
		f.Times = 1
	}
	f.Remaining = f.Times
	if f.Status != 0 && (f.Status < 100 || f.Status > 999) {
		return fmt.Errorf("fault: status %d is not an HTTP status", f.Status)
	}
	if f.Action == ActionRespond && f.Status == 0 && f.When == Before {
		return fmt.Errorf("fault: action %q before the broker acts needs a status", f.Action)
	}
	if f.Action == ActionRedirect && f.Status != 0 && (f.Status < 300 || f.Status > 399) {
		return fmt.Errorf("fault: action %q needs a 3xx status, not %d", f.Action, f.Status)
	}
	if f.Action == ActionDelay && f.Delay <= 0 {
		return fmt.Errorf("fault: action %q needs a positive delay", f.Action)
	}
	if f.Size < 0 {
		return fmt.Errorf("fault: size must not be negative")
	}
	if f.Action == ActionFailOperation || f.Action == ActionStickOperation {
		switch f.Op {
		case OpProvision, OpUpdate, OpDeprovision, OpBind, OpUnbind, OpLastOperation, OpBindingLastOperation, OpAny:
		default:
			return fmt.Errorf("fault: action %q only applies to operations that start or poll an async operation, not %q", f.Action, f.Op)
		}
	}
	for k := range f.Header {
		if k == "" || http.CanonicalHeaderKey(k) == "" {
			return fmt.Errorf("fault: invalid header name %q", k)
		}
	}
	return nil
}

// actsOnOperation reports whether the fault acts on the async operation
// rather than on the HTTP exchange; such faults strike only when there is one.
func (f *Fault) actsOnOperation() bool {
	return f.Action == ActionFailOperation || f.Action == ActionStickOperation
}

// requestKey is what a fault is matched against.
type requestKey struct {
	op         Op
	instanceID string
	bindingID  string
	planID     string
}

func (f *Fault) matches(k requestKey) bool {
	if f.Remaining <= 0 {
		return false
	}
	if f.Op != OpAny && f.Op != k.op {
		return false
	}
	if f.InstanceID != "" && f.InstanceID != k.instanceID {
		return false
	}
	if f.BindingID != "" && f.BindingID != k.bindingID {
		return false
	}
	if f.PlanID != "" && f.PlanID != k.planID {
		return false
	}
	return true
}

// faultSet is the broker's list of pending faults; guarded by Broker.mu.
type faultSet struct {
	next   int
	faults []*Fault
}

func (s *faultSet) add(f Fault) (string, error) {
	if err := f.validate(); err != nil {
		return "", err
	}
	s.next++
	f.ID = "fault-" + strconv.Itoa(s.next)
	s.faults = append(s.faults, &f)
	return f.ID, nil
}

// take finds the first fault matching k that passes accept, consumes one
// strike and returns a copy.
func (s *faultSet) take(k requestKey, accept func(*Fault) bool) (Fault, bool) {
	for i, f := range s.faults {
		if !f.matches(k) || !accept(f) {
			continue
		}
		f.Remaining--
		out := *f
		if f.Remaining <= 0 {
			s.faults = slices.Delete(s.faults, i, i+1)
		}
		return out, true
	}
	return Fault{}, false
}

func (s *faultSet) list() []Fault {
	out := make([]Fault, 0, len(s.faults))
	for _, f := range s.faults {
		out = append(out, *f)
	}
	return out
}

func (s *faultSet) remove(id string) bool {
	for i, f := range s.faults {
		if f.ID == id {
			s.faults = slices.Delete(s.faults, i, i+1)
			return true
		}
	}
	return false
}

func (s *faultSet) clear() { s.faults = nil }

// sleepCtx waits d or until done closes; it reports whether the full wait
// happened.
func sleepCtx(done <-chan struct{}, stop <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	case <-stop:
		return false
	}
}
