package reconcile

import (
	"context"
	"slices"
	"sync"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// Broker slots: what --workers bounds
//
// Options.Workers is how many broker calls a run has in flight at once: its broker
// slots. A step holds one only around its broker call (engine.BrokerSlots), not while it
// reads the record, writes its claim and write-ahead, or stores the outcome and its
// Event: so the run steps up to stepsPerSlot records per slot at once, and one step's
// API requests overlap another's broker call. Each of those requests takes a few
// milliseconds of a loaded API server; taken on the slot, they added to every broker
// call the slot made, and a run took (broker time + API time) ÷ workers instead of the
// brokers' own time ÷ workers.
//
// Fairness holds for slots as for steps (fairqueue.go): a namespace holds at most its
// share of the slots, the slots divided among the namespaces with a step under way (at
// least one), even while no step of another namespace waits for one yet: a broker call
// may last as long as the client allows, and a step of another namespace, on its API
// requests now, must find its share free when it asks. A namespace alone has every slot.
// The steps waiting take the slots given back first come, first served within their
// share. A tenant's broker that answers as late as the client allows holds its
// namespace's share of the slots only.

// stepsPerSlot is how many steps a run takes at once per broker slot: enough that the
// steps on their API requests keep every slot busy (an API request takes a fraction of
// a broker call: 2 ms to 10 ms against 50 ms and more), few enough to add little load
// to the API server. One worker is one step at a time (stepsFor).
const stepsPerSlot = 2

// stepsFor is how many steps a run on workers broker slots takes at once. One worker
// steps one record at a time: a run asked for one is serial throughout (and the engine's
// simulation, whose reconcile replicas run on one worker, keeps one interleaving per
// seed).
func stepsFor(workers int) int {
	if workers <= 1 {
		return 1
	}
	return stepsPerSlot * workers
}

// brokerSlots are a run's broker slots, shared fairly between namespaces.
type brokerSlots struct {
	mu sync.Mutex
	n  int
	// used counts the slots held; held counts them per namespace, steps the steps under
	// way per namespace.
	used        int
	held, steps map[string]int
	// waiting are the steps waiting for a slot, first come first.
	waiting []*slotWait
}

type slotWait struct {
	ns      string
	granted chan struct{}
}

func newBrokerSlots(n int) *brokerSlots {
	return &brokerSlots{n: max(n, 1), held: map[string]int{}, steps: map[string]int{}}
}

// begin counts a step of a record of namespace ns as under way, from when the run
// hands it to a worker; end, once its visit is over. of is what its broker calls take
// their slots from (engine.WithBrokerSlots).
func (s *brokerSlots) begin(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps[ns]++
}

func (s *brokerSlots) end(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.steps[ns]--; s.steps[ns] <= 0 {
		delete(s.steps, ns)
	}
	s.grant() // a namespace with no step left raises the others' share
}

func (s *brokerSlots) of(ns string) engine.BrokerSlots { return nsSlots{s, ns} }

// nsSlots are the slots as a step of namespace ns takes them.
type nsSlots struct {
	s  *brokerSlots
	ns string
}

func (n nsSlots) Take(ctx context.Context) (func(), error) { return n.s.take(ctx, n.ns) }

// share is how many slots one namespace may hold now: the slots divided among the
// namespaces with a step under way (those holding a slot or waiting for one among
// them). Called with mu held.
func (s *brokerSlots) share() int {
	active := len(s.steps)
	return max(1, (s.n+active-1)/max(active, 1))
}

// take waits for a slot for a step of namespace ns.
func (s *brokerSlots) take(ctx context.Context, ns string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &slotWait{ns: ns, granted: make(chan struct{})}
	s.mu.Lock()
	s.waiting = append(s.waiting, w)
	s.grant()
	s.mu.Unlock()
	release := func() { s.give(ns) }
	select {
	case <-w.granted:
		return release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.granted:
		s.giveLocked(ns) // granted as ctx ended: given back
	default:
		s.waiting = slices.DeleteFunc(s.waiting, func(x *slotWait) bool { return x == w })
	}
	return nil, ctx.Err()
}

// give gives back a slot of namespace ns.
func (s *brokerSlots) give(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.giveLocked(ns)
}

// giveLocked is give with mu held.
func (s *brokerSlots) giveLocked(ns string) {
	s.used--
	if s.held[ns]--; s.held[ns] == 0 {
		delete(s.held, ns)
	}
	s.grant()
}

// grant hands the free slots to the steps waiting, first come first, each while its
// namespace holds fewer than its share. Called with mu held.
func (s *brokerSlots) grant() {
	share := s.share()
	for i := 0; i < len(s.waiting) && s.used < s.n; {
		w := s.waiting[i]
		if s.held[w.ns] >= share {
			i++
			continue
		}
		s.used++
		s.held[w.ns]++
		close(w.granted)
		s.waiting = slices.Delete(s.waiting, i, i+1)
	}
}
