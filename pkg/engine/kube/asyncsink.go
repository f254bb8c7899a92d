package kube

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// asyncSink writes Events in the background, one at a time and in the order they were
// recorded, so that a command does not wait a round trip to the API server for each
// Event it records: an Event is an audit trail, not a step of the work. Create answers at
// once with the id the Event will have (its name is derived from its series);
// Drain, which the Aggregator's Flush calls before a process ends, waits for what is
// queued. After the API server forbids a write (a user who may not create Events), the
// rest is dropped.
type asyncSink struct {
	sink *APIEventSink
	log  func(error)

	mu      sync.Mutex
	queue   []func() error
	running bool
	idle    *sync.Cond
	off     bool
}

// eventWriteTimeout bounds each queued write.
const eventWriteTimeout = 10 * time.Second

func newAsyncSink(sink *APIEventSink, log func(error)) *asyncSink {
	s := &asyncSink{sink: sink, log: log}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// Create implements engine.EventSink.
func (s *asyncSink) Create(ctx context.Context, ev engine.Event, at time.Time) (string, error) {
	s.enqueue(ctx, func(ctx context.Context) error {
		_, err := s.sink.Create(ctx, ev, at)
		return err
	})
	return ev.Namespace + "/" + eventName(ev), nil
}

// Update implements engine.EventSink.
func (s *asyncSink) Update(ctx context.Context, id string, ev engine.Event, count int, last time.Time) error {
	s.enqueue(ctx, func(ctx context.Context) error { return s.sink.Update(ctx, id, ev, count, last) })
	return nil
}

func (s *asyncSink) enqueue(ctx context.Context, write func(context.Context) error) {
	ctx = context.WithoutCancel(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return
	}
	s.queue = append(s.queue, func() error {
		wctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
		defer cancel()
		return write(wctx)
	})
	if !s.running {
		s.running = true
		go s.run()
	}
}

func (s *asyncSink) run() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 {
		next := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		err := next()
		s.mu.Lock()
		if err != nil {
			if apierrors.IsForbidden(err) {
				s.off, s.queue = true, nil
			}
			if s.log != nil {
				s.log(err)
			}
		}
	}
	s.running = false
	s.idle.Broadcast()
}

// Drain waits until every queued write is done, or ctx ends.
func (s *asyncSink) Drain(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		s.mu.Lock()
		for s.running {
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
