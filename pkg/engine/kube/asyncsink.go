package kube

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// asyncSink writes Events in the background, so that a command does not wait a round
// trip to the API server for each Event it records: an Event is an audit trail, not a
// step of the work. The writes of one Event object (its series: one record, type, reason
// and action) are made one at a time, in the order they were recorded (its Create before
// its Updates); those of different objects go out together, up to writers at once, so
// that a reconcile run driving many records at once does not wait for their Events one
// after another. Create answers at once with the id the Event will have (its name is
// derived from its series); Drain, which the Aggregator's Flush calls before a process
// ends, waits for what is queued. After the API server forbids a write in a namespace (a
// user who may not create Events there, a namespace being deleted, an events quota a
// tenant filled), the Events of that namespace are dropped for EventsPausedFor, those
// of other namespaces still written: one namespace's refusals must not silence the
// audit trail of every other.
type asyncSink struct {
	sink *APIEventSink
	log  func(error)
	// writers bounds the writes under way at once.
	writers int

	mu    sync.Mutex
	queue []eventWrite
	// writing is the Events with a write under way, running how many writes are.
	writing map[string]bool
	running int
	idle    *sync.Cond
	// now is the clock; paused, until when the Events of a namespace are dropped.
	now    func() time.Time
	paused map[string]time.Time
}

// eventWrite is one queued write of the Event id.
type eventWrite struct {
	id    string
	write func() error
}

// eventWriteTimeout bounds each queued write.
const eventWriteTimeout = 10 * time.Second

// DefaultEventWriters is how many Event writes are under way at once by default: as many
// as reconcile's default workers make.
const DefaultEventWriters = 8

func newAsyncSink(sink *APIEventSink, log func(error), writers int) *asyncSink {
	s := &asyncSink{sink: sink, log: log, writers: cmp.Or(max(writers, 0), DefaultEventWriters), writing: map[string]bool{},
		now: time.Now, paused: map[string]time.Time{}}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// Create implements engine.EventSink.
func (s *asyncSink) Create(ctx context.Context, ev engine.Event, at time.Time) (string, error) {
	id := ev.Namespace + "/" + eventName(ev)
	s.enqueue(ctx, id, func(ctx context.Context) error {
		_, err := s.sink.Create(ctx, ev, at)
		return err
	})
	return id, nil
}

// Update implements engine.EventSink. An Event not found (its Create was dropped while
// its namespace was paused, or it was deleted since) is made anew.
func (s *asyncSink) Update(ctx context.Context, id string, ev engine.Event, count int, last time.Time) error {
	s.enqueue(ctx, id, func(ctx context.Context) error {
		err := s.sink.Update(ctx, id, ev, count, last)
		if apierrors.IsNotFound(err) {
			_, err = s.sink.Create(ctx, ev, last)
		}
		return err
	})
	return nil
}

func (s *asyncSink) enqueue(ctx context.Context, id string, write func(context.Context) error) {
	ctx = context.WithoutCancel(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pausedLocked(namespaceOf(id)) {
		return
	}
	s.queue = append(s.queue, eventWrite{id: id, write: func() error {
		wctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
		defer cancel()
		return write(wctx)
	}})
	s.startLocked()
}

// startLocked starts the queued writes that may go out now: the first queued write of
// each Event none of whose writes is under way, while fewer than s.writers are.
func (s *asyncSink) startLocked() {
	for i := 0; i < len(s.queue) && s.running < s.writers; {
		w := s.queue[i]
		if s.writing[w.id] {
			i++ // after the write of its Event under way
			continue
		}
		s.queue = slices.Delete(s.queue, i, i+1)
		s.writing[w.id] = true
		s.running++
		go s.run(w)
	}
}

func (s *asyncSink) run(w eventWrite) {
	err := w.write()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.writing, w.id)
	s.running--
	if err != nil {
		if apierrors.IsForbidden(err) {
			ns := namespaceOf(w.id)
			s.paused[ns] = s.now().Add(EventsPausedFor)
			s.queue = slices.DeleteFunc(s.queue, func(q eventWrite) bool { return namespaceOf(q.id) == ns })
		}
		if s.log != nil {
			s.log(err)
		}
	}
	s.startLocked()
	if s.running == 0 {
		s.idle.Broadcast()
	}
}

// pausedLocked reports whether the Events of namespace ns are dropped now, and forgets
// a pause that has ended.
func (s *asyncSink) pausedLocked(ns string) bool {
	until, ok := s.paused[ns]
	if ok && s.now().Before(until) {
		return true
	}
	delete(s.paused, ns)
	return false
}

// namespaceOf is the namespace of the Event id ("namespace/name").
func namespaceOf(id string) string {
	ns, _ := splitID(id)
	return ns
}

// Drain waits until every queued write is done, or ctx ends.
func (s *asyncSink) Drain(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		s.mu.Lock()
		for s.running > 0 {
			s.idle.Wait()
		}
		s.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

var _ engine.EventSink = (*asyncSink)(nil)
