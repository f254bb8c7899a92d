package broker

import (
	"fmt"
	"sync"
	"time"
)

// SlowWork makes the broker work longer on some requests than a client waits: each of
// the next Times requests of Op (once when Times is 0) waits Delay before the broker acts
// on it, and the broker then acts whether or not the client is still there, as a broker
// does that keeps working after a proxy or the platform gave up on the request. The
// client that times out meanwhile gets no answer; what the request creates or deletes
// lands after it gave up.
type SlowWork struct {
	Op    Op
	Delay time.Duration
	Times int
}

// slowWork is the broker's SlowWork settings and how many such requests finished.
type slowWork struct {
	mu      sync.Mutex
	pending []SlowWork
	done    int
}

// AddSlowWork adds w (see SlowWork); settings are tried in the order they were added.
func (b *Broker) AddSlowWork(w SlowWork) error {
	if w.Delay <= 0 {
		return fmt.Errorf("slow work: delay must be positive")
	}
	if w.Times == 0 {
		w.Times = 1
	}
	b.slow.mu.Lock()
	defer b.slow.mu.Unlock()
	b.slow.pending = append(b.slow.pending, w)
	return nil
}

// SlowWorkDone is how many requests slowed down by SlowWork the broker has finished
// acting on.
func (b *Broker) SlowWorkDone() int {
	b.slow.mu.Lock()
	defer b.slow.mu.Unlock()
	return b.slow.done
}

// workSlowly waits out the SlowWork matching c, if any, whatever the client does, and
// returns the function that counts it done once the broker acted on it.
func (b *Broker) workSlowly(c *call) func() {
	b.slow.mu.Lock()
	var d time.Duration
	for i := range b.slow.pending {
		w := &b.slow.pending[i]
		if w.Op == c.op && w.Times > 0 {
			w.Times--
			d = w.Delay
			break
		}
	}
	b.slow.mu.Unlock()
	if d <= 0 {
		return func() {}
	}
	sleepCtx(nil, b.closing, d)
	return func() {
		b.slow.mu.Lock()
		b.slow.done++
		b.slow.mu.Unlock()
	}
}
