package reconcile

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// A run drives its records --workers at a time, not one after another: the broker holds
// each provision until as many as the workers are under way (or a deadline passes, and
// the test fails), and never sees more at once.
func TestRun_DrivesRecordsWorkersAtATime(t *testing.T) {
	const workers, records = 4, 10
	f := newFixture(t)
	for i := range records {
		f.instance(fmt.Sprintf("db-%02d", i))
	}
	deadline, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var inFlight, most, timedOut atomic.Int32
	all := make(chan struct{})
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if n == workers {
			close(all)
		}
		select {
		case <-all:
		case <-deadline.Done():
			timedOut.Add(1)
		}
		return &osb.ProvisionResponse{StatusCode: 201}, nil
	})

	sum := f.run(Options{Workers: workers})

	assert.Equal(t, sum.Counts[Done], records, "%+v", sum.Items)
	assert.Equal(t, timedOut.Load(), int32(0), "the records were not driven %d at a time (at most %d provisions at once)", workers, most.Load())
	assert.Equal(t, most.Load(), int32(workers), "more provisions at once than workers")
}
