package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The step protocol, written once for every kind of record the engine drives. A step
// takes one record one step toward its spec, making at most one broker call:
//
//  1. the claim: a live claim of another driver (status.lease) makes the step wait
//     until it expires, calling nothing;
//  2. the kind's own refusals before anything else (stepKind.admit);
//  3. the status check: an operation in flight that is acted on must be one the engine
//     could have written (stepKind.checkStatus), else the record is refused;
//  4. the in-flight dispatch: an asynchronous operation is polled (stepKind.poll), an
//     interrupted synchronous call is re-sent by its own call (stepKind.calls) once its
//     retry is due; a deletion drops any interrupted call but the one that finishes it
//     (stepKind.finishing), since that call removes whatever the other did;
//  5. otherwise the kind decides what to call for (stepKind.fresh).
//
// The retry schedule (retryWait, retryLater, terminalFailure, startOrphanMitigation,
// removalFailed in record.go) and the outcome writes (writeAhead before a call, finish,
// preCallFailure, release and the rest in record_outcome.go) are generic over the kind
// too; the hooks use them.
//
// nextStep says what a step would do, found the same way without calling a broker or
// writing anything; stepKind.nextFresh names the action of step 5.
//
// A kind implements stepKind on a small type holding the engine (instanceSteps,
// bindingSteps); the methods of its operations (provision, bind, ...) live on that type
// too, in step_<operation>.go, and make their broker call through sendCall and poll
// through claimToPoll and judgePoll (step_call.go). Another kind of record is driven by
// adding such a type (its driven constraint, recordsOf and withRecord in record.go name
// the kinds) and entry points that call step and nextStep with it.

// stepKind is what the step protocol needs of one kind of record, T.
type stepKind[T driven[T]] interface {
	// admit refuses, or handles entirely, a record before its status is looked at:
	// done reports whether r, err is the step's result.
	admit(ctx context.Context, x T) (r Result, done bool, err error)
	// checkStatus refuses an operation in flight the engine could not have written.
	checkStatus(x T) error
	// finishing is the operation that ends a record being deleted (deprovision,
	// unbind): the one interrupted call a deletion re-sends.
	finishing() v1alpha1.OperationType
	// poll drives the asynchronous operation in flight.
	poll(ctx context.Context, x T) (Result, error)
	// calls are the kind's calls by the operation they make: an interrupted synchronous
	// call in flight is re-sent by its own once its retry is due.
	calls() map[v1alpha1.OperationType]func(ctx context.Context, x T, prev *v1alpha1.Operation) (Result, error)
	// kind names the kind in messages ("instance", "binding").
	kind() string
	// fresh takes the step of a record with no operation in flight to act on.
	fresh(ctx context.Context, x T) (Result, error)
	// nextFresh says what fresh would do, like NextStep; at is when a retry of the
	// action named is due (zero when now).
	nextFresh(x T, deleting bool, at func(action string) time.Time) NextStep
}

// step takes one step of in (which it does not change) by the protocol above.
func step[T driven[T]](e *Engine, k stepKind[T], ctx context.Context, in T) (Result, error) {
	x := in.DeepCopy()
	if l, ok := store.LeaseOf(x); ok && l.Holder != e.cfg.Holder {
		if left := e.claimLeft(x, l); left > 0 {
			return withRecord(Result{State: StateWaiting, RequeueAfter: left,
				Message: fmt.Sprintf("%s is working on it (claim until %s)", l.Holder, l.ExpiresAt.Format(time.RFC3339))}, x), nil
		}
	}
	if r, done, err := stepReleased(e, ctx, x); done {
		// Released to another cluster (op_release.go): no broker call, ever.
		return r, err
	}
	if r, done, err := k.admit(ctx, x); done {
		return r, err
	}
	op := x.OpStatus().InFlight
	if until := sendMayRun(e, x); !until.IsZero() {
		// Its sender stopped waiting for the call in flight with nothing stored: nothing
		// about the record is sent before the broker's work on it may be over.
		return sendRunning(e, x, until), nil
	}
	if until := brokerWorkUntil(e, x); !until.IsZero() && x.GetDeletionTimestamp() == nil && (op == nil || !op.Async) {
		// A call got no answer and the broker may still be working on it: nothing about
		// the record is sent before that work is over (brokerMayWork); a deletion says
		// so in its own words (fresh). Looked at again then, by this process's clock.
		r := resultOf(e, x)
		r.RequeueAfter = max(r.RequeueAfter, until.Sub(e.now()))
		return r, nil
	}
	if op == nil || !op.Async && x.GetDeletionTimestamp() != nil && op.Type != k.finishing() {
		return k.fresh(ctx, x)
	}
	// The operation in flight is acted on: it must be one the engine could have
	// written (a status is anyone's to edit who may update the ConfigMap).
	if err := k.checkStatus(x); err != nil {
		return preCallFailure(e, ctx, x, ReasonRefusedInconsistentStatus, err)
	}
	if op.Async {
		return k.poll(ctx, x)
	}
	if d := e.retryWait(x, string(op.Type)); d > 0 {
		return resultOf(e, x), nil
	}
	call, ok := k.calls()[op.Type]
	if !ok {
		return Result{}, fmt.Errorf("%s %s/%s has an in-flight operation of unknown type %q", k.kind(), x.GetNamespace(), x.GetName(), op.Type)
	}
	return call(ctx, x, op)
}

// nextStep says what step would do with x now, in step's order.
func nextStep[T driven[T]](e *Engine, k stepKind[T], x T) NextStep {
	now := e.now()
	if l, ok := store.LeaseOf(x); ok && l.Holder != e.cfg.Holder {
		if left := e.claimLeft(x, l); left > 0 {
			return NextStep{Action: NextPoll, At: now.Add(left), ClaimedBy: l.Holder}
		}
	}
	at := func(action string) time.Time {
		if d := e.retryWait(x, action); d > 0 {
			return now.Add(d)
		}
		return time.Time{}
	}
	deleting := x.GetDeletionTimestamp() != nil
	if until := brokerWorkUntil(e, x); !until.IsZero() {
		// Nothing is sent before the broker's work on an unanswered call is over.
		inner := at
		at = func(action string) time.Time {
			if t := inner(action); t.After(until) {
				return t
			}
			return until
		}
	}
	if op := x.OpStatus().InFlight; op != nil {
		if op.Async {
			n := NextStep{Action: NextPoll}
			if op.NextPollAt != nil && now.Before(op.NextPollAt.Time) {
				n.At = op.NextPollAt.Time
			}
			return n
		}
		if !deleting || op.Type == k.finishing() {
			return NextStep{Action: NextResend, At: at(string(op.Type))}
		}
	}
	return k.nextFresh(x, deleting, at)
}
