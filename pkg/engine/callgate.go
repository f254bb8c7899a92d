package engine

import "context"

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
