package sim

import (
	"context"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The verbs' call gate (engine/callgate.go), as a command has it. Each process that runs
// commands (verbs, and the model's: migrate, release, a move's apply) has the command's
// signal handling, cmdutil.Interrupt: its first interruption lets a broker call under
// way finish and its outcome be stored, and starts nothing new; a second one ends the
// process at once. A verb's --wait now and then has a --timeout, timed on the
// simulation's time (engine.Config.AfterFunc): a request still unanswered when the time
// is up is cut off then, an answer that came in time is stored, and nothing new starts.
//
// Checked (checkGateSend, checkGateAnswer, checkGateEnd):
//   - nothing is sent to the broker after a process's first interruption, nor after the
//     time of the wait under way ran out;
//   - no answer reaches a wait whose time ran out while its request was under way (the
//     request is cut off on time);
//   - an answer the gate held (the process was interrupted, or its wait's time ran out,
//     after the answer came or while its request was under way) is stored before the
//     process ends: the record no longer holds that send written ahead, unless the
//     process met the API server's faults or refusals after the answer, was killed, or
//     was interrupted again.
//
// Reconcile's replicas are not gated (they finish their calls under way their own way),
// nor are the tenants' edits: their interruption cancels their context, as before.

// gateReached counts the gate's paths a seed reached, for TestSim to check that the
// default seeds reach each.
type gateReached struct {
	// heldSignal, heldTimeout: answers held for storing after an interruption or after
	// the wait's time ran out; cutOff: requests the time running out cut off; refused:
	// calls not begun after an interruption (rare: an interruption with no call under
	// way ends the command's context, and the engine begins nothing then).
	heldSignal, heldTimeout, cutOff, refused int
}

// gate is a command process's signal handling and the waits it runs.
type gate struct {
	w  *world
	in *cmdutil.Interrupt
	// signalled: the first interruption came; exitNow: the second one.
	signalled, exitNow bool
	// waits are the --timeout timers of the process's waits, in order.
	waits []*waitTimer
	// calls counts the calls begun through the gate and not ended.
	calls int
	// answer is the last broker call's answer, noted until the next call begins; held
	// are the answers the gate held for storing.
	answer *heldAnswer
	held   []heldAnswer
}

// waitTimer is one wait's --timeout.
type waitTimer struct {
	d            time.Duration
	ranOut, over bool
}

// heldAnswer is a broker call's answer that the gate held for storing: the send's
// write-ahead (its request id and when it was written) and the process's count of the
// API server's faults when the answer came.
type heldAnswer struct {
	op        v1alpha1.Operation
	apiFaults int
}

// gated says whether p runs commands with a call gate.
func (p *proc) gated() bool { return p.kind == verbs || p.kind == modelProc }

// withGate returns the context of p's new lifetime under a fresh cmdutil.Interrupt when
// p runs commands, as NewInterrupt gives a command's.
func (p *proc) withGate(ctx context.Context) context.Context {
	p.gate = nil
	if !p.gated() {
		return ctx
	}
	ctx, in := cmdutil.NewInterrupt(ctx, io.Discard)
	p.gate = &gate{w: p.w, in: in}
	return engine.WithCallGate(ctx, p.gate)
}

// BeginCall is engine.CallGate's: the command's Interrupt decides; the gate notes the
// calls begun.
func (g *gate) BeginCall() bool {
	if !g.in.BeginCall() {
		g.w.gateReached.refused++
		return false
	}
	g.calls++
	return true
}

// EndCall is engine.CallGate's.
func (g *gate) EndCall() {
	g.calls--
	g.in.EndCall()
}

// interrupt is an interruption of p (Ctrl-C, SIGTERM): a command process's first lets a
// call under way finish; others end p's context at once.
func (p *proc) interrupt() {
	if p.gate == nil {
		p.w.logf("%-14s interrupted (its context ends)", p.name)
		p.stop()
		return
	}
	if p.gate.in.Signal() {
		p.gate.exitNow = true
		p.w.logf("%-14s interrupted again: exits at once", p.name)
		p.stop()
		return
	}
	p.gate.signalled = true
	p.gate.hold()
	p.w.logf("%-14s interrupted (Ctrl-C): a broker call under way is let finish and its outcome stored; nothing new starts", p.name)
}

// afterFunc is engine.Config.AfterFunc of a command process: the wait's --timeout on the
// simulation's time, fired at the process's first pause once it is up.
func (p *proc) afterFunc(d time.Duration, f func()) func() bool {
	wt := &waitTimer{d: d}
	if p.gate != nil {
		p.gate.waits = append(p.gate.waits, wt)
	}
	p.w.logf("%-14s waits with --timeout %s", p.name, d)
	t := runClock{p}.AfterFunc(d, func() {
		wt.ranOut = true
		p.w.logf("%-14s the --timeout %s of its wait ran out", p.name, d)
		if p.gate != nil {
			p.gate.hold()
		}
		f()
	})
	return func() bool {
		wt.over = true
		return t.Stop()
	}
}

// ranOut says whether the time of p's wait under way ran out.
func (g *gate) ranOut() bool {
	return g != nil && slices.ContainsFunc(g.waits, func(t *waitTimer) bool { return t.ranOut && !t.over })
}

// checkGateSend is checked as p sends a request to the broker: after the first
// interruption, only a call begun before it sends its request (the call is made and its
// outcome stored, engine.CallGate); after the time of the wait under way ran out, none
// is sent.
func (w *world) checkGateSend(p *proc, method, id string) (inCall bool) {
	g := p.gate
	if g == nil {
		return false
	}
	// (A call may make more than one request: a poll that says the bind succeeded, then
	// the GET of its credentials.)
	begun := g.calls > 0
	switch {
	case p.kind == verbs && !begun:
		w.fail("%s sent %s for %s outside a call begun through the call gate: each broker request of a verb goes through it", p.name, method, id)
	case g.signalled && !begun:
		w.fail("%s sent %s for %s after its first interruption, for no call begun before it: nothing new starts after Ctrl-C", p.name, method, id)
	case g.ranOut():
		w.fail("%s sent %s for %s after the time of its wait ran out: nothing new starts then", p.name, method, id)
	}
	return begun
}

// checkCutOff is checked as p stops waiting for a request's answer, its context ended:
// a request of a call begun through the gate (inCall) is let finish by the first
// interruption; only the second one or the wait's time running out cuts it off.
func (w *world) checkCutOff(p *proc, method, id string, inCall bool) {
	g := p.gate
	switch {
	case g == nil || p.dead:
	case g.ranOut():
		w.gateReached.cutOff++
	case inCall && g.signalled && !g.exitNow && p.ctx.Err() != nil:
		// (The engine may end a call's context itself, when another driver took the
		// record over during the call: the process's own context is then not ended.)
		w.fail("%s stopped waiting for the answer to its %s for %s after its first interruption: the call under way is let finish", p.name, method, id)
	}
}

// checkGateAnswer is checked as p gets the broker's answer to a request it sent: no
// answer reaches a wait whose time ran out while the request was under way.
func (w *world) checkGateAnswer(p *proc, method, id string) {
	if p.gate.ranOut() {
		w.fail("%s got the broker's answer to %s for %s after the time of its wait ran out: the request was not cut off then", p.name, method, id)
	}
}

// gateHook is engine.Config.Hook of a command process: after each broker call's answer
// (before its outcome is stored) it notes the answer, which the gate holds for storing
// when the process is interrupted or its wait's time runs out from then on.
func (p *proc) gateHook(_ context.Context, point engine.HookPoint, op *v1alpha1.Operation) {
	g := p.gate
	if g == nil || op == nil {
		return
	}
	switch point {
	case engine.HookBeforeBrokerCall:
		g.answer = nil
	case engine.HookAfterBrokerCall:
		g.answer = &heldAnswer{op: *op.DeepCopy(), apiFaults: p.apiFaults}
		g.hold()
	}
}

// hold keeps the answer last noted once the gate holds it: the process was interrupted,
// or its wait's time ran out. An answer whose outcome was stored before is held too;
// finding it stored at the end is what is checked.
func (g *gate) hold() {
	if g.answer != nil && (g.signalled || g.ranOut()) {
		if g.signalled {
			g.w.gateReached.heldSignal++
		} else {
			g.w.gateReached.heldTimeout++
		}
		g.held = append(g.held, *g.answer)
		g.answer = nil
	}
}

// checkGateEnd is checked as p's task ends: each answer the gate held is stored (the
// record no longer holds that send written ahead), unless the API server refused or
// failed a request of the process after the answer.
func (w *world) checkGateEnd(p *proc) {
	g := p.gate
	if g == nil {
		return
	}
	held := g.held
	g.held, g.answer = nil, nil
	if p.dead || g.exitNow || len(held) == 0 {
		return
	}
	insts, binds := w.records()
	sameSend := func(op *v1alpha1.Operation, h heldAnswer) bool {
		return op != nil && op.SentAt != nil && op.RequestID == h.op.RequestID &&
			(h.op.SentAt == nil || op.SentAt.Unix() == h.op.SentAt.Unix()) // (stored to the second)
	}
	// A record released (its deletion confirmed by the broker, the engine's finalizer
	// removed) keeps what it held: releasing it is what stores such an answer, and its
	// ConfigMap stays only while a foreground deletion waits for its dependents.
	released := func(x metav1.Object) bool {
		return x.GetDeletionTimestamp() != nil && !slices.Contains(x.GetFinalizers(), store.Finalizer)
	}
	for _, h := range held {
		if p.apiFaults > h.apiFaults {
			continue
		}
		for _, x := range insts {
			if sameSend(x.Status.InFlight, h) && !released(x) {
				w.fail("%s ended with the answer to its %s for %s unstored (request %s): instance %s/%s still holds that send written ahead", p.name, h.op.Type, h.op.InstanceID, h.op.RequestID, x.Namespace, x.Name)
			}
		}
		for _, x := range binds {
			if sameSend(x.Status.InFlight, h) && !released(x) {
				w.fail("%s ended with the answer to its %s for %s unstored (request %s): binding %s/%s still holds that send written ahead", p.name, h.op.Type, h.op.BindingID, h.op.RequestID, x.Namespace, x.Name)
			}
		}
	}
}

// follow is how a verb follows its record: --wait a third of the time, half of those
// with a --timeout (drawn from the gate's own source, so that the seed's other draws
// stay as they were).
func (w *world) follow() engine.Follow {
	f := engine.Follow{Wait: w.rng.IntN(3) == 0}
	if f.Wait && w.gateRng.IntN(2) == 0 {
		f.Timeout = time.Duration(1+w.gateRng.IntN(150)) * time.Second
	}
	return f
}

// newGateRand is the seed's source of the gate's draws.
func newGateRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x6a09e667f3bcc908, seed+0xbb67ae8584caa73b))
}

func (r *gateReached) add(o gateReached) {
	r.heldSignal += o.heldSignal
	r.heldTimeout += o.heldTimeout
	r.cutOff += o.cutOff
	r.refused += o.refused
}

// check fails t when the seeds reached none of one of the gate's paths: the model would
// then check nothing there.
func (r gateReached) check(t *testing.T) {
	t.Helper()
	if r.heldSignal == 0 || r.heldTimeout == 0 || r.cutOff == 0 {
		t.Errorf("the seeds reached not every path of the call gate: %+v", r)
	}
}
