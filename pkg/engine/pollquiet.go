package engine

import (
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// quietPollWriteAfter bounds how long what quiet polls learnt (the broker's latest
// description, the time of the next poll) may stay in the driver's copy of a record
// only: a poll this long after the driver last wrote the record writes its answer.
const quietPollWriteAfter = 10 * time.Second

// quietPoll is the result of a poll of x's operation in flight whose answer, p, need
// not be written now, and true; false when it must be (finish). An answer is quiet when
// the broker only said "in progress" again, without asking for a later poll
// (Retry-After, which must hold for whoever drives the record next), the poll did not
// fail (a failing broker is for the user to see), and this driver holds the record's
// claim, written by it less than quietPollWriteAfter ago (and less than a quarter of
// the claim's duration: the claim needs no renewal before the next poll, which renews
// it as it runs low, claimToPoll). The answer is applied to a copy of x, returned
// unstored, with x's resourceVersion: the driver's next step starts from it, and the
// record's next write (the next claim renewal, the operation's outcome, the release of
// the claim) carries it. Nothing is lost that matters: a driver that stops without a
// write leaves the record as its last write had it, and whoever takes it up polls
// again, which is safe.
func quietPoll[T driven[T]](e *Engine, x T, p polled) (Result, bool) {
	if p.act.Result != osb.ResultInProgress || p.callErr != nil || p.resp == nil || p.resp.RetryAfter > 0 {
		return Result{}, false
	}
	if failureShown(x) {
		// The record shows a failure this answer ends (resumeShown): written now.
		return Result{}, false
	}
	l, ok := store.LeaseOf(x)
	if !ok || l.Holder != e.cfg.Holder {
		return Result{}, false
	}
	// Every write of the record by this driver sets its claim (finish, claimToPoll):
	// how long the claim has run is how long ago the record was last written.
	if l.Duration()-e.ownClaimLeft(x, l) >= min(quietPollWriteAfter, l.Duration()/4) {
		return Result{}, false
	}
	y := x.DeepCopy()
	if y.OpStatus().InFlight == nil {
		return Result{}, false
	}
	p.inProgress(e, y.OpStatus().InFlight, e.now())
	return resultOf(e, y), true
}
