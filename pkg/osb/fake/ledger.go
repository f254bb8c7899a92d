package fake

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Ledger is what a fake broker holds and what it was asked, for tests that check the
// broker's side of a conversation rather than single calls: the instances and bindings
// it holds by OSB id, every request in order, and every moment two requests that change
// one instance or binding were in flight at once (which OSB leaves undefined, and the
// engine's claims must prevent).
//
// Reactions of a Client call Begin when a request arrives and End when the broker is
// done with it (which may be after the caller stopped waiting), and Put/Drop what the
// request created or deleted. All methods are safe for concurrent use.
type Ledger struct {
	mu        sync.Mutex
	instances map[string]Held
	bindings  map[string]Held
	requests  []Request
	inFlight  map[string][]Request
	overlaps  []Overlap
}

// Held is an instance or binding the broker holds.
type Held struct {
	// ID is its OSB id; InstanceID, for a binding, the instance's.
	ID, InstanceID string
	// Namespace is the namespace of the request that created it.
	Namespace string
	// PlanID is an instance's plan.
	PlanID string
	// Credentials are a binding's, as the broker handed them out.
	Credentials map[string]any
}

// Request is one request the broker received.
type Request struct {
	// Seq numbers requests in the order they arrived, from 1.
	Seq int
	// Method is one of the Method constants.
	Method string
	// ID is the OSB id the request changes or reads: the binding's for binding
	// methods, else the instance's.
	ID string
	// By names who sent it (a process of a simulation, say).
	By string
}

// Mutating reports whether the request changes what the broker holds under its id.
func (r Request) Mutating() bool {
	switch r.Method {
	case MethodProvision, MethodUpdate, MethodDeprovision, MethodBind, MethodUnbind:
		return true
	}
	return false
}

func (r Request) String() string { return fmt.Sprintf("#%d %s %s by %s", r.Seq, r.Method, r.ID, r.By) }

// Overlap is a request that arrived while another one changing the same id was in
// flight.
type Overlap struct {
	First, Second Request
}

func (o Overlap) String() string {
	return fmt.Sprintf("%s arrived while %s was in flight", o.Second, o.First)
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{instances: map[string]Held{}, bindings: map[string]Held{}, inFlight: map[string][]Request{}}
}

// Begin records a request arriving; it returns the request numbered, and the overlap
// it makes when it changes an id another changing request is in flight for.
func (l *Ledger) Begin(method, id, by string) (Request, *Overlap) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := Request{Seq: len(l.requests) + 1, Method: method, ID: id, By: by}
	l.requests = append(l.requests, r)
	var overlap *Overlap
	if r.Mutating() {
		for _, other := range l.inFlight[id] {
			o := Overlap{First: other, Second: r}
			l.overlaps = append(l.overlaps, o)
			overlap = &o
			break
		}
		l.inFlight[id] = append(l.inFlight[id], r)
	}
	return r, overlap
}

// End records that the broker is done with r.
func (l *Ledger) End(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight[r.ID] = slices.DeleteFunc(l.inFlight[r.ID], func(x Request) bool { return x.Seq == r.Seq })
	if len(l.inFlight[r.ID]) == 0 {
		delete(l.inFlight, r.ID)
	}
}

// InFlight returns the changing requests the broker is working on, in arrival order.
func (l *Ledger) InFlight() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Request
	for _, rs := range l.inFlight {
		out = append(out, rs...)
	}
	slices.SortFunc(out, func(a, b Request) int { return a.Seq - b.Seq })
	return out
}

// Requests returns every request received, in order.
func (l *Ledger) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// Overlaps returns every overlap seen, in order.
func (l *Ledger) Overlaps() []Overlap {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.overlaps)
}

// PutInstance records that the broker holds instance h (replacing what it held
// under h.ID).
func (l *Ledger) PutInstance(h Held) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.instances[h.ID] = h
}

// DropInstance records that the broker deleted instance id; it reports whether it held
// it.
func (l *Ledger) DropInstance(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.instances[id]
	delete(l.instances, id)
	return ok
}

// Instance returns the instance held under id.
func (l *Ledger) Instance(id string) (Held, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.instances[id]
	return h, ok
}

// Instances returns the instances held, by id.
func (l *Ledger) Instances() []Held { return l.sorted(l.instances) }

// PutBinding records that the broker holds binding h.
func (l *Ledger) PutBinding(h Held) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h.Credentials = maps.Clone(h.Credentials)
	l.bindings[h.ID] = h
}

// DropBinding records that the broker deleted binding id; it reports whether it held
// it.
func (l *Ledger) DropBinding(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.bindings[id]
	delete(l.bindings, id)
	return ok
}

// Binding returns the binding held under id.
func (l *Ledger) Binding(id string) (Held, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.bindings[id]
	return h, ok
}

// Bindings returns the bindings held, by id.
func (l *Ledger) Bindings() []Held { return l.sorted(l.bindings) }

// BindingsOf returns the bindings held of instance id.
func (l *Ledger) BindingsOf(id string) []Held {
	return slices.DeleteFunc(l.Bindings(), func(h Held) bool { return h.InstanceID != id })
}

func (l *Ledger) sorted(m map[string]Held) []Held {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b Held) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}
