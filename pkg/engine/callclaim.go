package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// errClaimNotKept says a broker call was given up because its claim could not be kept:
// another driver took the record over, or the claim was about to run out unrenewed.
var errClaimNotKept = errors.New("the claim on the record could not be renewed during the broker call, so the call was given up; the record is left pending")

// keeperKey is the context key of the claimKeeper of a broker call.
type keeperKey struct{}

// claimKeeper renews the claim on a record while a synchronous broker call made under
// it is in flight, so that no other driver, however long the call takes, sees the claim
// run out and re-sends the request while the broker still works on it.
type claimKeeper[T driven[T]] struct {
	e      *Engine
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	x      T
	lost   bool
}

// keep renews the claim when a third of its time has passed since it was last written
// (by this process's monotonic clock, from the start of the write: store.Claims). A renewal refused because the record changed is tried again
// on the record as it is now, as long as that still carries this call and this driver's
// claim; when another driver holds the record, or the claim is about to run out without
// a renewal, the call is given up (its context ends): its outcome would not be stored
// over another driver's claim anyway, and a call outliving its claim is what the claim
// exists to prevent.
func (k *claimKeeper[T]) keep() {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.e
	if k.lost || k.ctx.Err() != nil {
		return
	}
	l, ok := store.LeaseOf(k.x)
	if !ok || l.Holder != e.cfg.Holder {
		k.giveUp()
		return
	}
	if e.ownClaimLeft(k.x, l) > e.cfg.ClaimTTL*2/3 {
		return
	}
	records := recordsOf[T](e.cfg.Store)
	op := k.x.OpStatus().InFlight
	for range 3 {
		renewed, err := records.Claim(k.ctx, k.x, e.cfg.Holder, e.cfg.ClaimTTL)
		if err == nil {
			k.x = renewed
			return
		}
		if !store.IsClaimed(err) && !store.IsConflict(err) {
			break
		}
		fresh, err := records.Get(k.ctx, k.x.GetNamespace(), k.x.GetName())
		if err != nil {
			break
		}
		cur := fresh.OpStatus().InFlight
		if l, ok := store.LeaseOf(fresh); !ok || l.Holder != e.cfg.Holder || cur == nil || op == nil || cur.RequestID != op.RequestID {
			k.giveUp()
			return
		}
		k.x = fresh
	}
	// Not renewed this time (the API server refused or failed): tried again at the next
	// tick, unless the claim is about to run out, with the margin a call starts with.
	if e.ownClaimLeft(k.x, l) < e.cfg.ClaimTTL/8 {
		k.giveUp()
	}
}

func (k *claimKeeper[T]) giveUp() {
	k.lost = true
	k.cancel()
}

// KeepClaim renews the claim of the synchronous broker call ctx was made with, when that
// is due. The engine does so on a timer during every such call; a broker whose calls
// take simulated time (with Config.Sleep set, no timer runs) calls it as that time
// passes. For any other context it does nothing.
func KeepClaim(ctx context.Context) {
	if keep, ok := ctx.Value(keeperKey{}).(func()); ok {
		keep()
	}
}

// callUnderClaim makes a synchronous broker call under the claim on x, which the
// write-ahead of the call stored: while the call is in flight the claim is renewed
// every third of ClaimTTL, and the call is given up when the claim cannot be kept. It
// returns the record as last stored (the renewals are this driver's own writes, so the
// outcome is written over it without a conflict), and an error when ctx ended or the
// claim was not kept: then nothing may be stored, as after an interruption.
func callUnderClaim[T driven[T]](e *Engine, ctx context.Context, x T, call func(ctx context.Context)) (T, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k := &claimKeeper[T]{e: e, ctx: ctx, cancel: cancel, x: x}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if e.cfg.Sleep == nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(max(e.cfg.ClaimTTL/6, 10*time.Millisecond))
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-cctx.Done():
					return
				case <-t.C:
					k.keep()
				}
			}
		}()
	}
	call(context.WithValue(cctx, keeperKey{}, k.keep))
	close(done)
	wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return k.x, err
	}
	if k.lost {
		return k.x, errClaimNotKept
	}
	return k.x, nil
}

// TakeOverInstance removes a claim on inst that its holder can no longer renew, so that
// this driver may step the record at once rather than wait until the claim runs out:
// see takeOver. It returns the record as stored and whether the claim was removed.
func (e *Engine) TakeOverInstance(ctx context.Context, inst *v1alpha1.ServiceInstance) (*v1alpha1.ServiceInstance, bool, error) {
	return takeOver(e, ctx, inst)
}

// TakeOverBinding is TakeOverInstance for a binding.
func (e *Engine) TakeOverBinding(ctx context.Context, b *v1alpha1.ServiceBinding) (*v1alpha1.ServiceBinding, bool, error) {
	return takeOver(e, ctx, b)
}

// takeOver removes another driver's live claim on x when the process that wrote it, a
// process of this host, has ended (store.Claims.Abandoned: a killed "--wait", say), in
// one write guarded by resourceVersion. A claim that may still guard a broker call is
// kept: one over a synchronous call in flight (the killed process may have sent it, and
// the broker may still be working on it: the claim outlasts that, see "Write-ahead and
// claims" in docs/engine.md). An asynchronous operation is only polled, which is safe
// at once. A record changed meanwhile is left as it is (false, no error).
func takeOver[T driven[T]](e *Engine, ctx context.Context, x T) (T, bool, error) {
	l, ok := store.LeaseOf(x)
	if !ok || l.Holder == e.cfg.Holder || e.claimLeft(x, l) == 0 || !e.cfg.Store.Claims().Abandoned(l) {
		return x, false, nil
	}
	if op := x.OpStatus().InFlight; op != nil && !op.Async {
		return x, false, nil
	}
	y := x.DeepCopy()
	store.ClearClaim(y, l.Holder)
	stored, err := recordsOf[T](e.cfg.Store).Update(ctx, y)
	if store.IsConflict(err) {
		return x, false, nil
	}
	if err != nil {
		return x, false, err
	}
	return stored, true, nil
}

// claimLeft is how long another holder's claim l on x stays live for this process: until
// the process has seen it unchanged for the claim's duration on its own monotonic clock,
// never by comparing the claim's expiry stamp with this host's wall clock
// (store.Claims). Zero: it has expired and may be taken over.
func (e *Engine) claimLeft(x metav1.Object, l store.Lease) time.Duration {
	return e.cfg.Store.Claims().Left(store.RefOf(x), l)
}

// ownClaimLeft is how long this process's own claim l on x has left, timed from the
// start of the write that stored it (store.Claims.OwnLeft): no later than any other
// process sees it run out.
func (e *Engine) ownClaimLeft(x metav1.Object, l store.Lease) time.Duration {
	return e.cfg.Store.Claims().OwnLeft(store.RefOf(x), l)
}

// sendMayRun is until when the broker may still be working on the send of the
// synchronous call in flight on x whose outcome no one stored (Operation.SentAt): its
// sender may have ended during the call (killed, interrupted, its claim lost) with the
// request at the broker, which may go on with it for as long as with a request that got
// no answer (Config.MitigationGrace, brokerMayWork). Each driver times that grace from
// its own first sight of the send (store.Claims.SendLeft), so that no skew of the
// clocks shortens it. Zero: there is no such send, or its grace has passed.
func sendMayRun(e *Engine, x opRecord) time.Time {
	op := x.OpStatus().InFlight
	if op == nil || op.Async || op.SentAt == nil {
		return time.Time{}
	}
	send := op.RequestID + "@" + op.SentAt.UTC().Format(time.RFC3339Nano)
	left := e.cfg.Store.Claims().WorkLeft(store.RefOf(x), "send", send, op.SentAt.Add(e.cfg.MitigationGrace), e.cfg.MitigationGrace)
	if left == 0 {
		return time.Time{}
	}
	return e.now().Add(left)
}

// unansweredMayRun is until when the broker may still be working on the call of x that
// got no answer (status.retry.brokerMayWorkUntil, brokerMayWork): the stamp is its
// writer's wall clock, which may be minutes off this process's, so each driver also
// waits the grace from its own first sight of it, on its monotonic clock
// (store.Claims.WorkLeft), and the writer from its writing. Zero: there is none, or it
// is over.
func unansweredMayRun(e *Engine, x opRecord) time.Time {
	r := x.OpStatus().Retry
	if r == nil || r.BrokerMayWorkUntil == nil {
		return time.Time{}
	}
	until := r.BrokerMayWorkUntil.Time
	left := e.cfg.Store.Claims().WorkLeft(store.RefOf(x), "retry", until.UTC().Format(time.RFC3339Nano), until, e.cfg.MitigationGrace)
	now := e.now()
	if left > 0 && now.Add(left).After(until) {
		until = now.Add(left)
	}
	if !now.Before(until) {
		return time.Time{}
	}
	return until
}

// sendRunning is the result of a step of x that waits until until for the broker's work
// on the send in flight (sendMayRun): no call is made, nothing is written.
func sendRunning[T driven[T]](e *Engine, x T, until time.Time) Result {
	op := x.OpStatus().InFlight
	kind := "instance"
	if _, ok := any(x).(*v1alpha1.ServiceBinding); ok {
		kind = "binding"
	}
	msg := fmt.Sprintf("the broker may still be working on the %s sent at %s, whose answer no one recorded (its sender stopped waiting for it); nothing is sent for this %s until %s (the grace for the broker's work)",
		op.Type, op.SentAt.UTC().Format(time.RFC3339), kind, until.UTC().Format(time.RFC3339))
	return withRecord(Result{State: StateWaiting, RequeueAfter: until.Sub(e.now()), Message: msg}, x)
}
