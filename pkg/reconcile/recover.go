package reconcile

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
)

// A run serves every namespace, and a record's status, labels and annotations are free
// for anyone who may write its ConfigMap. A step that fails hard on one record (a bug,
// or a status no release wrote) must therefore end that record's visit only: the run
// recovers, reports the record as failed (its item, and a log line with the stack for
// the bug report), leaves the record as it was, and goes on with the others. The exit
// code, or --serve's metrics, say that something failed.

// visitSafely is visit, recovering from a panic of the record's step.
func (r *Reconciler) visitSafely(ctx context.Context, t *task, o Options) {
	defer func() {
		if p := recover(); p != nil {
			r.crashed(ctx, t, p, debug.Stack(), o)
		}
	}()
	r.visit(ctx, t, o)
}

// leaveSafely is leave, recovering as visitSafely does.
func (r *Reconciler) leaveSafely(ctx context.Context, t *task, interrupted bool, o Options) {
	defer func() {
		if p := recover(); p != nil {
			r.crashed(ctx, t, p, debug.Stack(), o)
		}
	}()
	r.leave(ctx, t, interrupted)
}

// crashed makes the item of task t, whose visit panicked with p, final and failed, and
// drops the run's claim on the record.
func (r *Reconciler) crashed(ctx context.Context, t *task, p any, stack []byte, o Options) {
	t.it.Outcome, t.it.Detail = Failed, CrashDetail(p)
	t.done, t.park, t.blocked, t.more = true, false, false, nil
	r.logf("%s: %s\n%s", t.ref(), t.it.Detail, strings.TrimSpace(string(stack)))
	if t.held || t.rec != nil {
		// The claim lapses by itself if this fails too.
		func() {
			defer func() { _ = recover() }()
			r.release(ctx, t)
		}()
	}
	t.held = false
}

// CrashDetail is what a record's item says when driving it failed hard with p.
func CrashDetail(p any) string {
	return fmt.Sprintf("internal error while driving it, left as it was: %v; the other records are driven all the same. "+
		"Look at its status (kubectl catalog describe), and report this with reconcile's log", p)
}

// safeBool is f(), or false when f panics: for a look at a record that decides only
// whether the run takes it up.
func (r *Reconciler) safeBool(what string, f func() bool) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			r.logf("%s: %s\n%s", what, CrashDetail(p), strings.TrimSpace(string(debug.Stack())))
			ok = false
		}
	}()
	return f()
}

func (r *Reconciler) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}
