// Package ahead starts reads before the point that needs their result, so that a
// command's independent API requests go out together instead of one after another. The
// code that needs a result still waits for it where it read it before, and so sees its
// error there: what fails first, and how, is what it was when the reads went out in turn.
//
// A read started ahead may reach the API server at any moment between its start and
// the wait for it. Code must therefore never start ahead a read that a write of its own,
// made in between, is meant to guard (a read that must see the write, or that the
// write's answer makes stale). A context given WithSchedule runs every read in the
// calling goroutine instead, either at its start or at its first wait, as the schedule
// decides: the engine's simulation explores both ends, deterministically.
package ahead

import (
	"context"
	"sync"
)

// Schedule decides, for each read started ahead under a context given WithSchedule,
// whether it runs at once (true) or when it is first waited for (false). It is called in
// the goroutine that starts the read.
type Schedule func() bool

type scheduleKey struct{}

// WithSchedule returns a context under which reads started ahead run in the calling
// goroutine, at their start or at their first wait as s decides, instead of in
// goroutines of their own. Reads that only warm a cache (Go) and are not run at once
// are not run at all: the call that needs their answer reads it itself.
func WithSchedule(ctx context.Context, s Schedule) context.Context {
	return context.WithValue(ctx, scheduleKey{}, s)
}

func scheduleOf(ctx context.Context) Schedule {
	s, _ := ctx.Value(scheduleKey{}).(Schedule)
	return s
}

// Read is a read under way; Wait gives its result.
type Read[T any] struct {
	done chan struct{}
	// lazy, when set, is run by the first Wait (a read deferred by a Schedule).
	lazy func()
	once sync.Once
	v    T
	err  error
}

// Start runs read in a goroutine of its own, or as ctx's schedule says (WithSchedule).
// read should use ctx, the context of the request it serves, so that it ends with it.
func Start[T any](ctx context.Context, read func() (T, error)) *Read[T] {
	r := &Read[T]{done: make(chan struct{})}
	run := func() {
		defer close(r.done)
		r.v, r.err = read()
	}
	switch s := scheduleOf(ctx); {
	case s == nil:
		go run()
	case s():
		run()
	default:
		r.lazy = run
	}
	return r
}

// StartWarm is Start for a read that only saves a later one (the code that would wait
// for it can read for itself): under a context given WithSchedule, a read the schedule
// does not run at once is not started at all, and StartWarm returns nil, as Go does.
func StartWarm[T any](ctx context.Context, read func() (T, error)) *Read[T] {
	if s := scheduleOf(ctx); s != nil && !s() {
		return nil
	}
	r := &Read[T]{done: make(chan struct{})}
	run := func() {
		defer close(r.done)
		r.v, r.err = read()
	}
	if scheduleOf(ctx) != nil {
		run()
	} else {
		go run()
	}
	return r
}

// Done is a read whose result is known already.
func Done[T any](v T, err error) *Read[T] {
	r := &Read[T]{done: make(chan struct{}), v: v, err: err}
	close(r.done)
	return r
}

// Wait waits for the read to end and returns its result; it may be called any number of
// times.
func (r *Read[T]) Wait() (T, error) {
	if r.lazy != nil {
		r.once.Do(r.lazy)
	}
	<-r.done
	return r.v, r.err
}

// Go runs each of warm in a goroutine of its own, without waiting: reads whose results
// are kept where a later call finds them (a cache that takes the first answer). Under a
// context given WithSchedule, each runs at once in the calling goroutine or not at all.
func Go(ctx context.Context, warm ...func()) {
	s := scheduleOf(ctx)
	for _, w := range warm {
		switch {
		case s == nil:
			go w()
		case s():
			w()
		}
	}
}
