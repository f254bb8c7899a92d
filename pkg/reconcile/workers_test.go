package reconcile

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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

// --workers bounds the broker calls in flight, not the records being stepped: while
// every worker's call is at the broker, other records' steps go on with their API
// requests (their read, their claim and write-ahead), so that those requests do not add
// to the brokers' time. The broker holds the first provisions until a record beyond
// the workers' has its call written ahead (or a deadline passes, and the test fails),
// and never sees more provisions at once than there are workers.
func TestRun_StepsWriteWhileEveryWorkerCallsABroker(t *testing.T) {
	const workers, records = 2, 8
	f := newFixture(t)
	for i := range records {
		f.instance(fmt.Sprintf("db-%02d", i))
	}
	deadline, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// writtenAhead counts the records whose call is written ahead and whose answer is
	// not stored yet.
	writtenAhead := func() int {
		insts, _ := f.st.Instances().List(context.Background(), ns, store.Filter{})
		n := 0
		for _, x := range insts {
			if x.Status.InFlight != nil {
				n++
			}
		}
		return n
	}
	var inFlight, most, timedOut, calls atomic.Int32
	var seen atomic.Int32 // the most records written ahead at once while the first calls were held
	overlapped := make(chan struct{})
	var once sync.Once
	f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if calls.Add(1) > workers {
			return &osb.ProvisionResponse{StatusCode: 201}, nil
		}
		for {
			w := writtenAhead()
			for m := seen.Load(); int32(w) > m && !seen.CompareAndSwap(m, int32(w)); m = seen.Load() {
			}
			if w > workers {
				once.Do(func() { close(overlapped) })
			}
			select {
			case <-overlapped:
				return &osb.ProvisionResponse{StatusCode: 201}, nil
			case <-deadline.Done():
				timedOut.Add(1)
				return &osb.ProvisionResponse{StatusCode: 201}, nil
			case <-time.After(time.Millisecond):
			}
		}
	})

	sum := f.run(Options{Workers: workers})

	assert.Equal(t, sum.Counts[Done], records, "%+v", sum.Items)
	assert.Equal(t, timedOut.Load(), int32(0), "no record's call was written ahead while the %d workers' calls were at the broker (at most %d written ahead at once)", workers, seen.Load())
	assert.Equal(t, most.Load(), int32(workers), "more provisions at once than workers")
}
