package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The operations of the verbs. Each verb (provision, bind, deprovision, ...) is one call
// of the engine, named after it, taking a request and returning what the verb prints.
// Behind the call are every rule, lookup, write and drive of the verb, and the choice of
// the authority a record is written and driven under: a verb says what its user asked
// for, never which rights apply.

// DryRun is the --dry-run of an operation, with kubectl's meaning.
type DryRun string

// The dry-run modes.
const (
	// DryRunNone writes and calls brokers.
	DryRunNone DryRun = "none"
	// DryRunClient works out what would be written, writing nothing and calling no
	// broker (it may read the cluster).
	DryRunClient DryRun = "client"
	// DryRunServer sends the writes to the API server as a dry run: validation and
	// admission, the trust policy included, see them; nothing is stored and no broker
	// is called.
	DryRunServer DryRun = "server"
)

// Enabled says whether the operation is a dry run.
func (d DryRun) Enabled() bool { return d == DryRunClient || d == DryRunServer }

// writes marks ctx for the record writes of an operation run as the user's intent, sent
// as a server-side dry run for DryRunServer.
func (d DryRun) writes(ctx context.Context) context.Context {
	ctx = store.WithIntent(ctx)
	if d == DryRunServer {
		ctx = store.WithDryRun(ctx)
	}
	return ctx
}

// Follow is how an operation follows the record it wrote: without Wait, it does the work
// it can do at once (a synchronous broker call, orphan mitigation) and returns at the
// first wait; with Wait, it drives the record until it settles, for at most Timeout (0:
// no limit).
type Follow struct {
	Wait    bool
	Timeout time.Duration
	// Progress is called after every step and about every second while waiting.
	Progress func(Result)
	// Note is given the lines an operation says as it goes, before its first write
	// ("Provisioning instance "db" of postgresql/hobby in namespace "dev"..."): the
	// verb prints them to standard error. Nil drops them.
	Note func(string)
}

// note passes a line to f.Note, if any.
func (f Follow) note(format string, args ...any) {
	if f.Note != nil {
		f.Note(fmt.Sprintf(format, args...))
	}
}

// TimeoutError says that a wait ran out of time. The operation goes on; Hint says how to
// pick it up again.
type TimeoutError struct {
	What string
	Hint string
}

func (e *TimeoutError) Error() string {
	if e.Hint == "" {
		return e.What
	}
	return e.What + ": " + e.Hint
}

// followed is how an operation follows one kind of record.
type followed struct {
	// kind names the record in messages: "instance", "binding".
	kind string
	// drive is the engine's drive loop of the kind.
	drive func(ctx context.Context, namespace, name string, o DriveOptions) (Result, error)
	// release drops the operation's claim on the record a result carries.
	release func(ctx context.Context, r Result)
	// again is appended to a timeout's hint: how to wait again; by default the wait
	// command for the record (see WaitCommand).
	again string
	// created is the record the operation has just created (DriveOptions.Created).
	created v1alpha1.Record
}

func instanceFollowed(e *Engine, created *v1alpha1.ServiceInstance) followed {
	return followedOf(e, "instance", e.DriveInstance, created)
}

func bindingFollowed(e *Engine, created *v1alpha1.ServiceBinding) followed {
	return followedOf(e, "binding", e.DriveBinding, created)
}

// followedOf follows records of T's kind with drive, releasing this engine's claim on the
// record a result carries; created is the record just created, or nil.
func followedOf[T driven[T]](e *Engine, kind string, drive func(ctx context.Context, namespace, name string, o DriveOptions) (Result, error), created T) followed {
	f := followed{
		kind:  kind,
		drive: drive,
		release: func(ctx context.Context, r Result) {
			if x := recordOf[T](r); any(x) != any(T(nil)) {
				_ = releaseClaim(e, ctx, x)
			}
		},
	}
	if any(created) != any(T(nil)) {
		f.created = created
	}
	return f
}

// FollowInstance drives an instance as a verb does after writing it: see Follow. created
// is the record the verb has just created, or nil. It releases its claim when it stops,
// and turns a timeout into a *TimeoutError and an interruption into an error saying how
// to resume.
func (e *Engine) FollowInstance(ctx context.Context, namespace, name, verb string, created *v1alpha1.ServiceInstance, f Follow) (Result, error) {
	return e.follow(ctx, instanceFollowed(e, created), namespace, name, verb, f)
}

// FollowBinding is FollowInstance for a binding.
func (e *Engine) FollowBinding(ctx context.Context, namespace, name, verb string, created *v1alpha1.ServiceBinding, f Follow) (Result, error) {
	return e.follow(ctx, bindingFollowed(e, created), namespace, name, verb, f)
}

func (e *Engine) follow(ctx context.Context, d followed, namespace, name, verb string, f Follow) (Result, error) {
	// The user's own command: what it reads and changes, it does with the user's rights.
	dctx := WithRunnersRights(ctx)
	dctx = gatedByVerb(dctx) // an interrupt lets a broker call under way finish (callgate.go)
	if f.Wait && f.Timeout > 0 {
		// The calls under way when the time is up end, and their outcomes are stored.
		var stop func()
		dctx, stop = withWaitTimeout(dctx, f.Timeout, e.cfg.AfterFunc)
		defer stop()
	}
	res, err := d.drive(dctx, namespace, name, DriveOptions{StopWhenWaiting: !f.Wait, Progress: f.Progress, Created: d.created})
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	d.release(rctx, res)
	cancel()
	hint := fmt.Sprintf(`follow it with "kubectl catalog describe %s %s -n %s"; "kubectl catalog reconcile" finishes it`, d.kind, name, namespace)
	switch {
	case err == nil && ctx.Err() != nil && res.Done():
		// Interrupted during a broker call, which was let finish (callgate.go).
		return res, &InterruptedError{Message: fmt.Sprintf("interrupted once the broker's answer was recorded: %s %q: %s; nothing is left to do", d.kind, name, res.Message), Cause: ctx.Err()}
	case err == nil && ctx.Err() != nil:
		return res, &InterruptedError{Message: fmt.Sprintf("interrupted once the broker's answer was recorded: %s %q is left pending (%s): %s", d.kind, name, res.Message, hint), Cause: ctx.Err()}
	case err == nil:
		return res, nil
	case ctx.Err() == nil && waitRanOut(dctx, err, f.Wait && f.Timeout > 0):
		again := d.again
		if again == "" {
			again = fmt.Sprintf(`, or wait again with "%s"`, WaitCommand(d.recordKind(), namespace, name, followedFor(verb, res)))
		}
		return res, &TimeoutError{
			What: fmt.Sprintf("waiting for %s %q to %s (%s)", d.kind, name, verb, res.Message),
			Hint: "the operation goes on: " + hint + again,
		}
	case ctx.Err() != nil:
		return res, &InterruptedError{Message: fmt.Sprintf("interrupted: %s %q is left pending: %s", d.kind, name, hint), Cause: ctx.Err()}
	}
	return res, err
}

// recordKind is the kind of the followed records, as v1alpha1 names it.
func (d followed) recordKind() string {
	if d.kind == "binding" {
		return v1alpha1.KindServiceBinding
	}
	return v1alpha1.KindServiceInstance
}

// followedFor is what waiting again for a record a verb followed waits for: its
// deletion after a deprovision or an unbind, or a record being deleted; else Ready.
func followedFor(verb string, res Result) WaitFor {
	deleting := verb == "deprovision" || verb == "unbind"
	if res.Instance != nil && res.Instance.DeletionTimestamp != nil || res.Binding != nil && res.Binding.DeletionTimestamp != nil {
		deleting = true
	}
	if deleting {
		return WaitForDelete
	}
	return WaitForReady
}

// InterruptedError says that a command was interrupted (Ctrl-C) and where it left the
// record. It is its cause (errors.Is context.Canceled: the command exits 130), whose
// text it leaves out.
type InterruptedError struct {
	Message string
	Cause   error
}

func (e *InterruptedError) Error() string { return e.Message }

func (e *InterruptedError) Unwrap() error { return e.Cause }

// waitRanOut says whether err ended a wait because its timeout ran out: the drive says
// so, the wait's timeout ended its context (withWaitTimeout), or, the wait being
// bounded (by its own timeout or its parent's deadline), a request refused to start so
// close to a deadline that it could not finish in time (client-go's rate limiter then
// says "would exceed context deadline", wrapping nothing).
func waitRanOut(dctx context.Context, err error, bounded bool) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(dctx), context.DeadlineExceeded) {
		return true
	}
	if _, parent := dctx.Deadline(); parent {
		bounded = true
	}
	return bounded && strings.Contains(err.Error(), "would exceed context deadline")
}

// instanceVerbs hold the helpers of the instance verbs (op_provision.go, op_update.go,
// op_deprovision.go, op_touch.go); the verbs themselves are the Engine's API.
type instanceVerbs struct{ *Engine }

// bindingVerbs hold the helpers of the binding verbs (op_bind.go, op_unbind.go).
type bindingVerbs struct{ *Engine }
