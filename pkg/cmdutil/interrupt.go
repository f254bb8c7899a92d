package cmdutil

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// Interrupt is how a command takes SIGINT and SIGTERM (Ctrl-C). The first one cancels
// the command's context, so that it stops cleanly and says how to resume, except while
// a verb waits for a broker's answer: the call is then let finish (bounded by the broker
// client's timeout) and its outcome recorded before the context is cancelled, since a
// request whose answer no one records leaves the record waiting for the grace
// (engine.DefaultMitigationGrace) before anything more is sent for it. Nothing new starts
// after the first signal. The second one asks to exit at once.
type Interrupt struct {
	errOut io.Writer
	cancel context.CancelFunc

	mu          sync.Mutex
	calls       int  // the broker calls under way (engine.CallGate)
	interrupted bool // the first signal came
}

var _ engine.CallGate = (*Interrupt)(nil)

// NewInterrupt returns a context derived from parent that the first signal given to
// the Interrupt cancels (once the broker calls under way are finished), carrying the
// Interrupt as the engine's CallGate. errOut is where the interrupt is announced.
func NewInterrupt(parent context.Context, errOut io.Writer) (context.Context, *Interrupt) {
	ctx, cancel := context.WithCancel(parent)
	in := &Interrupt{errOut: errOut, cancel: cancel}
	return engine.WithCallGate(ctx, in), in
}

// Signal takes one SIGINT or SIGTERM. It reports whether the command must exit at once
// (ExitInterrupted): the second signal.
func (in *Interrupt) Signal() (exitNow bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.interrupted {
		return true
	}
	in.interrupted = true
	if in.calls == 0 {
		in.cancel()
		return false
	}
	fmt.Fprintf(in.errOut, "interrupted: waiting for the broker's answer to the request under way, to record it; nothing new is started. Ctrl-C again exits at once, and then nothing is sent for the record for %s, as the broker may still be working on the request\n",
		graceText(engine.DefaultMitigationGrace))
	return false
}

// BeginCall is engine.CallGate's: false once interrupted.
func (in *Interrupt) BeginCall() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.interrupted {
		return false
	}
	in.calls++
	return true
}

// EndCall is engine.CallGate's: the last call under way to end after the first signal
// cancels the context.
func (in *Interrupt) EndCall() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls--
	if in.calls == 0 && in.interrupted {
		in.cancel()
	}
}

// Stop cancels the context: the command is over.
func (in *Interrupt) Stop() { in.cancel() }

// graceText is d for a person: "10 minutes".
func graceText(d time.Duration) string {
	if d%time.Minute == 0 && d >= 2*time.Minute {
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	}
	return d.String()
}
