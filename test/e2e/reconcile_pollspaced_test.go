package e2e

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// An asynchronous provision polled by a reconcile by hand at 6 s intervals: the run keeps
// its claim between two polls (it used to release it when the next poll was more than 5 s
// away, then read and claim the record again), so the record is written twice, its claim
// before the first poll and the outcome after the last, no other write between them, and
// no other driver could take the record up between the polls: each watched write names
// the run as the claim's holder, or none once the outcome is written.
func TestReconcilePolls_SecondsApart_KeepTheClaimAndWriteTwice(t *testing.T) {
	t.Parallel()
	e := instSetupCatalog(t, nil)
	e.b.SetAsyncDelay(7 * time.Second)
	r := instCatalog(t, e.ns, "provision", "cache", "--class", "postgresql", "--plan", "standard")
	assert.Equal(t, r.ExitCode, 0, r.Stderr)
	polled := len(e.b.RequestsFor(broker.OpLastOperation))

	writesSince := watchRecordWrites(t, e.ns, "cache")

	idleReconcile(t, e.ns, nil, "--interval", "6s")
	idleAssertReady(t, e, "cache")
	polls := len(e.b.RequestsFor(broker.OpLastOperation)) - polled
	assert.Assert(t, polls >= 2, "the broker was polled %d times", polls)

	holders := writesSince()
	assert.Equal(t, len(holders), 2, "%d polls 6 s apart wrote the record %d times (claim holders %q), want the claim and the outcome", polls, len(holders), holders)
	assert.Assert(t, holders[0] != "" && holders[1] == "", "claim holders %q", holders)
}
