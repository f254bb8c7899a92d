package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The broker call of a step, the same for every kind: what it sends is read (callInputs),
// the call decided by the kind's operation is vetted and kept, written ahead, and made
// under the claim (sendCall); the kind's outcome hook stores the answer.

// callInputs is what a call sends besides its ids and plan.
type callInputs struct {
	params     Parameters
	kctx       *osb.KubernetesContext
	org, space string
}

// readCallInputs reads the parameters and the platform context of a call about rec,
// made in inst's namespace: those prev first sent for a re-send, else those of the
// spec now (fromSpec). A failure comes with the reason to record it under; a re-send
// whose kept parameters are lost fails with an error isSentLost reports.
func readCallInputs(e *Engine, ctx context.Context, rec v1alpha1.Record, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation, resend bool, fromSpec func(context.Context) (Parameters, error)) (callInputs, string, error) {
	var in callInputs
	var err error
	if resend {
		sent, err := sentParameters(e, ctx, rec, prev.Sent)
		if err != nil {
			return in, ReasonParametersUnavailable, err
		}
		if sent != nil {
			in.params = *sent
		}
	} else if in.params, err = fromSpec(ctx); err != nil {
		return in, ReasonParametersUnavailable, err
	}
	if in.kctx, in.org, in.space, err = callContext(e, ctx, inst, prev, resend); err != nil {
		return in, ReasonPlatformUnavailable, err
	}
	return in, "", nil
}

// callContext is the platform context of a call made in inst's namespace: the one prev
// first sent for a re-send, else the one of now.
func callContext(e *Engine, ctx context.Context, inst *v1alpha1.ServiceInstance, prev *v1alpha1.Operation, resend bool) (*osb.KubernetesContext, string, string, error) {
	if resend {
		return sentContext(e, ctx, inst, prev.Sent)
	}
	return e.osbContext(ctx, inst)
}

// brokerCall is a broker call a step decided to make: what sendCall vets, keeps, writes
// ahead and makes.
type brokerCall struct {
	op     *v1alpha1.Operation
	resend bool
	// keepsNothing: the call sends no parameters and keeps no request for a re-send
	// (a deprovision or unbind is re-sent from its operation alone).
	keepsNothing bool
	// planID is the plan the request names ("" for none).
	planID string
	// broker is the broker called.
	broker *v1alpha1.Broker
	// params are the parameters sent (nil for none), which paramsFrom of the record's
	// spec sourced: checked against the broker and kept for a re-send, unless this is one.
	params     *Parameters
	paramsFrom []v1alpha1.ParametersFromSource
	// sent is the platform context kept for a re-send.
	sent  v1alpha1.SentRequest
	osbOp osb.Operation
	// vet checks that the record may make the call; hold, when set, takes what the
	// call needs held for it (a binding's place under its instance's limit).
	vet, hold func(ctx context.Context) error
	// phase, reason and msg are what the write-ahead records.
	phase       v1alpha1.Phase
	reason, msg string
	// call makes the request, returning the answer's status and the bounded failure.
	call func(ctx context.Context) (int, error)
}

// sendCall makes c, a call about x: it vets the call, checks where its parameters go,
// holds what it needs, keeps the request of a first send, writes the call ahead, and
// makes it under the claim, then hands the record as stored and the action the answer
// asks for to outcome, which stores it. A call not made (the write-ahead conflicted or
// failed) or interrupted stores nothing.
func sendCall[T driven[T]](e *Engine, ctx context.Context, x T, c brokerCall, outcome func(stored T, act osb.Action, callErr error) (Result, error)) (Result, error) {
	op := c.op
	// A verb interrupted from here on makes the call and stores its outcome first: an
	// answer no one records would leave the record waiting for the grace (callgate.go).
	// Interrupted before, it writes nothing.
	end, begun := beginCall(ctx)
	if !begun {
		return interrupted(x, context.Canceled)
	}
	defer end()
	if opens := c.osbOp == osb.OpProvision || c.osbOp == osb.OpUpdate || c.osbOp == osb.OpBind; opens && !c.resend {
		// Checked after the record was read, so a deregister that marks the broker and
		// then finds no instance has no provision left to race (op_deregister.go).
		if err := brokerClosed(c.broker); err != nil {
			return preCallFailure(e, ctx, x, ReasonBrokerUnavailable, err)
		}
	}
	if err := c.vet(ctx); err != nil {
		return preCallFailure(e, ctx, x, ReasonPlatformUnavailable, err)
	}
	if !c.resend {
		if err := e.auth.CheckParametersTo(ctx, c.broker, x.GetNamespace(), c.paramsFrom, c.params); err != nil {
			return preCallFailure(e, ctx, x, ReasonPlatformUnavailable, err)
		}
	}
	if c.hold != nil {
		if err := c.hold(ctx); err != nil {
			return preCallFailure(e, ctx, x, ReasonRefusedLimitReached, err)
		}
	}
	if !c.resend && !c.keepsNothing {
		if err := keepRequest(e, ctx, x, op, c.sent, c.params); err != nil {
			return preCallFailure(e, ctx, x, ReasonParametersUnavailable, err)
		}
	}
	stored, ok, err := writeAhead(e, ctx, x, op, c.phase, c.reason, c.msg)
	if !ok || err != nil {
		if !ok && err == nil && !c.resend {
			dropSent(e, ctx, op, x) // not sent: someone else drives the record
		}
		return reread(e, ctx, x, err)
	}
	e.hook(ctx, HookBeforeBrokerCall, op)
	var status int
	var callErr error
	var cut error
	stored, err = callUnderClaim(e, ctx, stored, func(ctx context.Context) {
		status, cut, callErr = waitBound(ctx, c.call)
	})
	if err == nil {
		err = cut // cut off by the wait's time running out: no answer to store
	}
	if err != nil {
		return interrupted(stored, err)
	}
	e.hook(ctx, HookAfterBrokerCall, op)
	return outcome(stored, osb.Decide(c.osbOp, osb.OutcomeOf(status, callErr)), callErr)
}

// claimToPoll holds the claim on x for a poll, which is a broker call too: it renews
// the claim only when it runs low, so a long --wait costs one write per poll at most.
// An error from it goes to pollNotClaimed.
func claimToPoll[T driven[T]](e *Engine, ctx context.Context, x T, now time.Time) (T, error) {
	if l, ok := store.LeaseOf(x); ok && l.Holder == e.cfg.Holder && e.ownClaimLeft(x, l) >= e.cfg.ClaimTTL/2 {
		return x, nil
	}
	claimed, err := recordsOf[T](e.cfg.Store).Claim(ctx, x, e.cfg.Holder, e.cfg.ClaimTTL)
	if err != nil {
		return x, err
	}
	return claimed, nil
}

// pollNotClaimed is the step's result when claimToPoll failed with err: someone else
// drives the record (it is read again), or the record could not be written.
func pollNotClaimed[T driven[T]](e *Engine, ctx context.Context, x T, err error) (Result, error) {
	if store.IsClaimed(err) || store.IsConflict(err) {
		return reread(e, ctx, x, nil)
	}
	return Result{}, err
}

// polled is the broker's answer to a poll of an operation in flight, judged.
type polled struct {
	resp    *osb.LastOperationResponse
	callErr error
	outcome osb.Outcome
	act     osb.Action
	// desc is the broker's description; msg the message for the record.
	desc, msg string
}

// judgePoll judges the answer to a poll of op (pollOp): a poll past op's deadline has
// expired whatever the broker says.
func judgePoll(e *Engine, op *v1alpha1.Operation, pollOp osb.Operation, resp *osb.LastOperationResponse, callErr error) polled {
	p := polled{resp: resp, callErr: callErr, outcome: osb.PollOutcomeOf(resp, callErr)}
	if !e.now().Before(e.pollDeadline(op)) {
		p.outcome.PollingExpired = true
	}
	p.act = osb.Decide(pollOp, p.outcome)
	if resp != nil {
		p.desc = resp.Description
	}
	p.msg = p.desc
	switch {
	case p.act.Reason == osb.ReasonPollingExpired:
		p.msg = fmt.Sprintf("the broker did not finish the operation within its maximum polling duration (until %s)", e.pollDeadline(op).Format(time.RFC3339))
	case callErr != nil:
		p.msg = describe(callErr, 0)
	case p.msg == "":
		p.msg = "the broker reported " + string(p.outcome.State)
	}
	return p
}

// inProgress records in f, the operation in flight, that it is still in progress: the
// broker's description (or the poll's failure) and when to poll next.
func (p polled) inProgress(e *Engine, f *v1alpha1.Operation, now time.Time) {
	if p.desc != "" {
		f.LastDescription = storedText(p.desc)
	} else if p.callErr != nil {
		f.LastDescription = storedText("last poll failed: " + p.msg)
	}
	var retryAfter time.Duration
	if p.resp != nil {
		retryAfter = p.resp.RetryAfter
	}
	f.NextPollAt = mtime(now.Add(pollDelay(e, f, retryAfter, now)))
}

// DefaultMitigationGrace is Config.MitigationGrace by default: how long a request that
// got no answer may still be under way at the broker. Brokers answer within
// the client's timeout (60 s) as a rule; some keep working on a request long after a
// proxy or the client gave up on it.
const DefaultMitigationGrace = 10 * time.Minute

// Reasons of a deletion that waits for a create the broker may still be working on.
const (
	ReasonDeprovisionWaitingForBroker = "DeprovisionWaitingForBroker"
	ReasonUnbindWaitingForBroker      = "UnbindWaitingForBroker"
)

// mayStillWork reports whether o, the outcome of a create (provision, bind), leaves the
// broker possibly still at work on it: it gave no answer (a client timeout, a closed
// connection) or a gateway answered 504 for it.
func mayStillWork(o osb.Outcome) bool {
	return o.NoAnswer || o.StatusCode == http.StatusGatewayTimeout
}

// graceEnd is when the broker is taken to be done with op, a create first sent at
// op.StartedAt (a re-send keeps it).
func (e *Engine) graceEnd(op *v1alpha1.Operation) time.Time {
	return op.StartedAt.Add(e.cfg.MitigationGrace)
}

// awaitAnswer records in x that its create in flight got no answer (msg) while the
// broker may still be working on it (before graceEnd): the call stays in flight, and the
// identical request is sent again once the broker's work on the first is over
// (brokerMayWork), which OSB makes safe: the broker answers 200, 201 or 202 for what it
// created. Orphan mitigation, whose DELETE a broker still creating the resource would
// answer 410 before creating it, is left for a re-send that gets no answer either.
func awaitAnswer(e *Engine, x opRecord, reason, msg string, now time.Time) {
	op := x.OpStatus().InFlight
	e.retryLater(x, reason, msg+"; the broker may still be working on it: the identical request is sent again once that work is over, and what it may hold is deleted (orphan mitigation) only if that one gets no answer either", false, now)
	x.OpStatus().InFlight = op
}

// brokerMayWork records in x, whose failed call's retry was just stored, that the call
// got no answer (o: a client timeout, a closed connection, a gateway's 504): the broker
// may still be working on it for the grace (Config.MitigationGrace), and a second request
// for the id meanwhile would be two at once at the broker (one a strict broker may answer
// 409, or a DELETE it answers 410 before the create lands). So nothing about the record
// is sent before the grace has passed from now, which is after the request was sent:
// not its re-send, not a deletion, not orphan mitigation (status.retry.brokerMayWorkUntil,
// which the step honours whatever the next action is).
func brokerMayWork(e *Engine, x opRecord, o osb.Outcome, callErr error, now time.Time) {
	r := x.OpStatus().Retry
	if r == nil || !mayStillWork(o) || neverReachedBroker(callErr) {
		return
	}
	until := now.Add(e.cfg.MitigationGrace)
	r.BrokerMayWorkUntil = mtime(until)
	unansweredMayRun(e, x) // this process times the grace from now
	if r.NextRetryAt != nil && !r.NextRetryAt.Before(&metav1.Time{Time: until}) {
		return
	}
	r.NextRetryAt = mtime(until)
	reason := r.Reason
	if c := meta.FindStatusCondition(x.OpStatus().Conditions, v1alpha1.ConditionReady); c != nil {
		reason = c.Reason
	}
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, reason,
		fmt.Sprintf("%s (attempt %d; the broker may still be working on it: nothing about this record is sent to it before %s)", r.LastError, r.Attempts, until.UTC().Format(time.RFC3339)), now)
}

// neverReachedBroker reports whether err, a call's failure, says that its request never
// reached the broker: the connection could not be made (the dial failed, was refused,
// or the broker's name did not resolve). The broker has nothing to work on then.
func neverReachedBroker(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED)
}

// brokerWorkUntil is until when the broker may still be working on a call of x that got
// no answer (brokerMayWork), or on the send in flight whose outcome no one stored
// (sendMayRun): zero when none, or that time has passed.
func brokerWorkUntil(e *Engine, x opRecord) time.Time {
	until := sendMayRun(e, x)
	if u := unansweredMayRun(e, x); u.After(until) {
		return u
	}
	return until
}

// createMayRun is until when the broker may still be working on a call of x whose
// outcome is unknown (recorded with a retry: it got no answer): zero when there is none,
// or its grace has passed. A create in flight recorded without brokerMayWorkUntil (by an
// earlier release) counts from its first send.
func createMayRun(e *Engine, x opRecord) time.Time {
	if until := brokerWorkUntil(e, x); !until.IsZero() {
		return until
	}
	st := x.OpStatus()
	op := st.InFlight
	if op == nil || op.Async || (op.Type != v1alpha1.OperationProvision && op.Type != v1alpha1.OperationBind) || st.Retry == nil {
		return time.Time{}
	}
	if a := actionOf(st.Retry.Reason); a != actionProvision && a != actionBind {
		return time.Time{}
	}
	if end := e.graceEnd(op); e.now().Before(end) {
		return end
	}
	return time.Time{}
}

// waitForCreate leaves the deletion of in waiting until until: a DELETE now could reach
// the broker while it still creates what the unanswered create asked for, be answered
// 410, and let the record go while the resource appears after it. The condition says
// so (written once), no call is made.
func waitForCreate[T driven[T]](e *Engine, ctx context.Context, in T, reason string, until time.Time) (Result, error) {
	now := e.now()
	msg := fmt.Sprintf("a request to the broker got no answer and the broker may still be working on it: the deletion waits until %s (the grace for the broker's work), then deletes what it holds",
		until.UTC().Format(time.RFC3339))
	if op := in.OpStatus().InFlight; op != nil && !op.Async && (op.Type == v1alpha1.OperationProvision || op.Type == v1alpha1.OperationBind) {
		msg = fmt.Sprintf("the create sent at %s got no answer and the broker may still be working on it: the deletion waits until %s (the grace for the broker's work), then deletes what it holds",
			op.StartedAt.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	}
	res := withRecord(Result{State: StateWaiting, RequeueAfter: until.Sub(now), Message: msg}, in)
	if c := meta.FindStatusCondition(in.OpStatus().Conditions, v1alpha1.ConditionReady); c != nil && c.Reason == reason && c.Message == storedText(msg) {
		return res, nil
	}
	x := in.DeepCopy()
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg, now)
	store.ClearClaim(x, e.cfg.Holder)
	stored, err := recordsOf[T](e.cfg.Store).Update(ctx, x)
	if store.IsConflict(err) {
		return reread(e, ctx, in, nil)
	}
	if err != nil {
		return Result{}, err
	}
	return withRecord(res, stored), nil
}
