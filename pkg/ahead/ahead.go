// Package ahead starts reads before the point that needs their result, so that a
// command's independent API requests go out together instead of one after another. The
// code that needs a result still waits for it where it read it before, and so sees its
// error there: what fails first, and how, is what it was when the reads went out in turn.
package ahead

// Read is a read under way; Wait gives its result.
type Read[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// Start runs read in a goroutine of its own. read should use the context of the
// request it serves, so that it ends with it.
func Start[T any](read func() (T, error)) *Read[T] {
	r := &Read[T]{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.v, r.err = read()
	}()
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
	<-r.done
	return r.v, r.err
}

// Go runs each of warm in a goroutine of its own, without waiting: reads whose results
// are kept where a later call finds them (a cache that takes the first answer).
func Go(warm ...func()) {
	for _, w := range warm {
		go w()
	}
}
