package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// An asynchronous operation whose poll failed before the call (the broker record or the
// platform could not be read: an API timeout under load, say) is recorded as a failure
// with a retry (preCallFailure): phase Failed, status.retry, a Ready condition saying
// when the next attempt is. The operation itself goes on at the broker, and the next poll
// that gets an answer says so: that poll puts the operation's phase and condition back
// (resumeShown), so that describe, get and wait show the operation, not a failure that
// no longer stands.

// failureShown reports whether x, with an asynchronous operation in flight, shows a
// failure recorded since the operation was accepted (a failure before a poll's call, or
// an answer that could not be stored): retryLater wrote its retry and its Ready
// condition together, and nothing has written the condition since. A retry kept from an
// earlier attempt of the call (its attempts count the backoff), under an in-progress
// condition, is not one.
func failureShown(x opRecord) bool {
	st := x.OpStatus()
	if st.InFlight == nil || !st.InFlight.Async || st.Retry == nil {
		return false
	}
	if st.Phase == v1alpha1.PhaseFailed {
		return true
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == st.Retry.Reason
}

// resumeShown puts back on x, whose operation in flight the broker just said goes on,
// the phase and Ready condition of that operation in progress (phase, reason, msg: as
// its acceptance recorded them) when x shows a failure recorded since (failureShown):
// the retry and a refusal recorded with it no longer stand, since this poll was made.
func resumeShown(x opRecord, phase v1alpha1.Phase, reason, msg string, now time.Time) {
	if !failureShown(x) {
		return
	}
	st := x.OpStatus()
	st.Retry = nil
	st.Phase = phase
	setCondition(x, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg, now)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionRefused)
}

// cutShort returns the interruption err stands for when the step's own context, not
// what the step read or called, ended it, and nil otherwise: ctx ended; or ctx has a
// deadline and it has passed (a request's context, derived from ctx, may report its end
// a moment before ctx does); or a request refused to start so close to ctx's deadline
// that it could not finish (client-go's rate limiter says "would exceed context
// deadline", wrapping nothing). Such an error is an interruption: nothing is recorded
// (interrupted). A timeout of the request's own (a broker that does not answer within
// the client's timeout) is a failure, recorded; so is a cancellation while ctx is live
// (a broker client or an API call that returns a Canceled error of its own): a
// cancellation of ctx reaches ctx before any context derived from it, so ctx.Err()
// already says so when it is the step's.
func cutShort(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err == nil {
		return nil
	}
	deadline, bounded := ctx.Deadline()
	if !bounded {
		return nil
	}
	if !time.Now().Before(deadline) || strings.Contains(err.Error(), "would exceed context deadline") {
		if errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return nil
}
