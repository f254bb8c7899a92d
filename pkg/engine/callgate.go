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
// context, waitBoundContext, has the wait's deadline): its answer is then unknown, as after a
// crash, and the record waits as it does then. But an answer that came in time is
// stored: the drive's context is cancelled, with context.DeadlineExceeded as its cause
// (waitRanOut), only once no request's outcome is being stored, and nothing new starts
// after the time is up. Cut off while it was stored, a call's answer would leave the
// record waiting for the grace, and a poll's would lose the broker's Retry-After. The
// gate goes through the command's own (an interrupt) as well.
type timeoutGate struct {
	outer    CallGate
	cancel   context.CancelCauseFunc
	deadline time.Time

	mu    sync.Mutex
	calls int
	out   bool
}

// withWaitTimeout returns ctx under a timeoutGate of d, and the func that ends it.
func withWaitTimeout(ctx context.Context, d time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	outer, _ := ctx.Value(verbGateKey{}).(CallGate)
	g := &timeoutGate{outer: outer, cancel: cancel, deadline: time.Now().Add(d)}
	timer := time.AfterFunc(d, g.runOut)
	return context.WithValue(ctx, verbGateKey{}, CallGate(g)), func() {
		timer.Stop()
		cancel(context.Canceled)
	}
}

// waitBoundContext is the context of a broker request made under ctx: under a wait's
// timeout, it ends when the time is up (timeoutGate).
func waitBoundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if g, ok := ctx.Value(verbGateKey{}).(*timeoutGate); ok {
		return context.WithDeadline(ctx, g.deadline)
	}
	return context.WithCancel(ctx)
}

// cutOff reports the error of a broker request made under cctx (waitBoundContext) that the
// wait's time running out cut off, so that it got no answer; nil when it got one (an
// answer that came in time is stored however late it is now) or failed on its own.
func cutOff(cctx context.Context, callErr error) error {
	if callErr == nil {
		return nil
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
	if g.calls == 0 {
		g.cancel(context.DeadlineExceeded)
	}
}
