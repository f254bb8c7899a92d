package engine

import (
	"context"
	"sync"
	"time"
)

// CallGate lets a command interrupted while the engine waits for a broker's answer
// finish that call: a request whose answer no one records leaves the record waiting for
// the grace (Config.MitigationGrace), since the broker may still be working on it, so
// the first interrupt of a verb lets the call under way end and its outcome be stored,
// and only then ends the command. The process's signal handling implements it
// (cmdutil.Interrupt); it is set on the context with WithCallGate.
type CallGate interface {
	// BeginCall is called before a call is written ahead. It reports false once the
	// command was interrupted: the call is then not made (nothing new starts after the
	// interrupt). When it reports true, EndCall follows once the call's outcome is
	// stored (or the call was not made), and the interrupt waits for it.
	BeginCall() bool
	// EndCall ends what BeginCall began.
	EndCall()
}

type callGateKey struct{}

type verbGateKey struct{}

// WithCallGate returns ctx with g, which the broker calls the verbs make (not those of
// reconcile, which finishes its calls under way its own way) go through.
func WithCallGate(ctx context.Context, g CallGate) context.Context {
	return context.WithValue(ctx, callGateKey{}, g)
}

// gatedByVerb marks ctx as a verb's drive of a record: its calls go through the
// command's CallGate, if it has one.
func gatedByVerb(ctx context.Context) context.Context {
	g, _ := ctx.Value(callGateKey{}).(CallGate)
	if g == nil {
		return ctx
	}
	return context.WithValue(ctx, verbGateKey{}, g)
}

// beginCall begins a broker call under ctx's gate: it reports false when the command
// was interrupted and the call must not start; end is then a no-op.
func beginCall(ctx context.Context) (end func(), ok bool) {
	g, _ := ctx.Value(verbGateKey{}).(CallGate)
	if g == nil {
		return func() {}, true
	}
	if !g.BeginCall() {
		return func() {}, false
	}
	return g.EndCall, true
}

// timeoutGate is how a verb's --wait --timeout ends its drive. A broker request under
// way (a call or a poll) is cut off when the time is up, as the wait promised (its
// context, waitBoundContext, ends then): its answer is then unknown, as after a crash,
// and the record waits as it does then. But an answer that came in time is stored: the
// drive's context is cancelled, with context.DeadlineExceeded as its cause (waitRanOut),
// only once no request's outcome is being stored, and nothing new starts after the time
// is up. Cut off while it was stored, a call's answer would leave the record waiting
// for the grace, and a poll's would lose the broker's Retry-After. The gate goes
// through the command's own (an interrupt) as well. Its time is Config.AfterFunc's.
type timeoutGate struct {
	outer  CallGate
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	calls int
	out   bool
	// requests are the broker requests under way (waitBoundContext), which the time
	// running out cuts off.
	requests map[*int]context.CancelCauseFunc
}

// withWaitTimeout returns ctx under a timeoutGate of d timed by afterFunc
// (Config.AfterFunc; nil: the wall clock's), and the func that ends it.
func withWaitTimeout(ctx context.Context, d time.Duration, afterFunc func(time.Duration, func()) func() bool) (context.Context, func()) {
	if afterFunc == nil {
		afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	ctx, cancel := context.WithCancelCause(ctx)
	outer, _ := ctx.Value(verbGateKey{}).(CallGate)
	g := &timeoutGate{outer: outer, cancel: cancel, requests: map[*int]context.CancelCauseFunc{}}
	stopTimer := afterFunc(d, g.runOut)
	return context.WithValue(ctx, verbGateKey{}, CallGate(g)), func() {
		stopTimer()
		cancel(context.Canceled)
	}
}

// waitBoundContext is the context of a broker request made under ctx: under a wait's
// timeout, it ends (with context.DeadlineExceeded as its cause) when the time is up
// (timeoutGate).
func waitBoundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	g, ok := ctx.Value(verbGateKey{}).(*timeoutGate)
	if !ok {
		return context.WithCancel(ctx)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	key := new(int)
	g.mu.Lock()
	if g.out {
		cancel(context.DeadlineExceeded)
	} else {
		g.requests[key] = cancel
	}
	g.mu.Unlock()
	return rctx, func() {
		g.mu.Lock()
		delete(g.requests, key)
		g.mu.Unlock()
		cancel(context.Canceled)
	}
}

// waitBound makes req, a broker request of a verb's drive, under waitBoundContext: its
// answer, cutOff's error (non-nil when the wait's time ran out first, so that there is
// no answer to store) and its own error.
func waitBound[T any](ctx context.Context, req func(context.Context) (T, error)) (resp T, cut, err error) {
	rctx, cancel := waitBoundContext(ctx)
	defer cancel()
	resp, err = req(rctx)
	return resp, cutOff(rctx, err), err
}

// cutOff reports the error of a broker request made under cctx (waitBoundContext) that the
// wait's time running out cut off, so that it got no answer; nil when it got one (an
// answer that came in time is stored however late it is now) or failed on its own.
func cutOff(cctx context.Context, callErr error) error {
	if callErr == nil {
		return nil
	}
	if cctx.Err() != nil {
		return context.Cause(cctx)
	}
	return cutShort(cctx, callErr)
}

func (g *timeoutGate) BeginCall() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.out || (g.outer != nil && !g.outer.BeginCall()) {
		return false
	}
	g.calls++
	return true
}

func (g *timeoutGate) EndCall() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls--
	if g.outer != nil {
		g.outer.EndCall()
	}
	if g.calls == 0 && g.out {
		g.cancel(context.DeadlineExceeded)
	}
}

// runOut is the timer's: the time is up.
func (g *timeoutGate) runOut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.out = true
	for key, cancel := range g.requests {
		cancel(context.DeadlineExceeded)
		delete(g.requests, key)
	}
	if g.calls == 0 {
		g.cancel(context.DeadlineExceeded)
	}
}
