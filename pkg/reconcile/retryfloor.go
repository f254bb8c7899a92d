package reconcile

import (
	"sync"
	"time"
)

// A record's backoff (status.retry) is written where anyone who may update its ConfigMap
// writes too: a tenant may clear it after every failure, and make every run retry the
// record at once. So reconcile keeps a retry floor of its own, in memory: each step of a
// record that failed, was refused or scheduled a retry counts, and the record is not
// taken up again before the engine's backoff for that many failures in a row has passed,
// whatever its status says; a step that settles or deletes it forgets the count. The
// memory lasts as long as the Reconciler: every run of "reconcile --serve", one run of
// the CronJob (whose schedule spaces its runs).

// retryFloors is the retry floor of each record (by work.key) that failed last.
type retryFloors struct {
	mu sync.Mutex
	m  map[string]retryFloor
}

type retryFloor struct {
	failures  int32
	notBefore time.Time
}

// maxFloors bounds the memory: past it, the floors are forgotten (they only ever delay).
const maxFloors = 100000

// until is when the record of key may be taken up again; false when it may now.
func (f *retryFloors) until(key string, now time.Time) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.m[key]
	return fl.notBefore, ok && fl.notBefore.After(now)
}

// failed counts a failure of the record of key at now; delay is the engine's backoff
// for a number of failures in a row.
func (f *retryFloors) failed(key string, now time.Time, delay func(int32) time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil || len(f.m) >= maxFloors {
		f.m = map[string]retryFloor{}
	}
	fl := f.m[key]
	fl.failures++
	fl.notBefore = now.Add(delay(fl.failures))
	f.m[key] = fl
}

// cleared forgets the failures of the record of key.
func (f *retryFloors) cleared(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}
