package engine

import (
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// quietPollWriteAfter bounds how long a new description of the broker's, which
// describe shows, may stay in the driver's copy of a record only: a poll this long after
// the driver last wrote the record writes a description that changed.
const quietPollWriteAfter = 10 * time.Second

// quietPoll is the result of a poll of x's operation in flight whose answer, p, need
// not be written now, and true; false when it must be (finish). An answer is quiet when
// the broker only said "in progress" again, without asking for a later poll
// (Retry-After, which must hold for whoever drives the record next), the poll did not
// fail (a failing broker is for the user to see), and this driver holds the record's
// claim. An answer that changes the broker's description is quiet only while the claim,
// which every write of the driver sets, was written less than quietPollWriteAfter ago
// (and less than a quarter of the claim's duration): describe shows it at most that
// late. An answer that changes nothing but the time of the next poll is quiet however
// long ago the record was written: the claim is renewed before a poll once less than
// half of it is left (claimToPoll), and that write carries it. The answer is applied to
// a copy of x, returned unstored, with x's resourceVersion: the driver's next step
// starts from it, and the record's next write (the claim's renewal, the operation's
// outcome, the release of the claim) carries it. Nothing is lost that matters: a driver
// that stops without a write leaves the record as its last write had it (its next poll
// time then past), and whoever takes it up polls again, which is safe.
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
	y := x.DeepCopy()
	op := y.OpStatus().InFlight
	if op == nil {
		return Result{}, false
	}
	desc := op.LastDescription
	p.inProgress(e, op, e.now())
	// Every write of the record by this driver sets its claim (finish, claimToPoll):
	// how long the claim has run is how long ago the record was last written.
	if op.LastDescription != desc && l.Duration()-e.ownClaimLeft(x, l) >= min(quietPollWriteAfter, l.Duration()/4) {
		return Result{}, false
	}
	return resultOf(e, y), true
}
