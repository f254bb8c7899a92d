package reconcile

import "k8s.io/utils/clock"

// WithRunClock makes r time its runs by clk (when a queued record is due, the waits
// between its steps, MaxDuration, Took) instead of the wall clock, and returns r. The
// engine's simulation (pkg/engine/sim) drives reconcile's runs in its own time with it;
// a command never sets it.
func (r *Reconciler) WithRunClock(clk clock.WithDelayedExecution) *Reconciler {
	r.clock = clk
	return r
}
