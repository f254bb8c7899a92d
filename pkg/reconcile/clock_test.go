package reconcile

import (
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// virtualClock is a fake clock under which time stands still while anything runs, and
// moves on only when someone is about to wait on a timer (Reset, After, Sleep): to the
// time that timer is due, calling on the way the AfterFuncs due before it (MaxDuration
// running out). A run on one worker then goes through its polls, retries and
// MaxDuration in no time, in the same order whatever the machine's load. NewTimer
// alone moves nothing: the run makes its timer up front and Resets it to wait.
//
// With more than one worker a timer may be waited on while another worker works, and
// time would move under it: tests on this clock use one worker.
type virtualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiting []*virtualTimer
}

var _ clock.WithDelayedExecution = (*virtualClock)(nil)

func newVirtualClock(start time.Time) *virtualClock { return &virtualClock{now: start} }

type virtualTimer struct {
	c  *virtualClock
	at time.Time
	ch chan time.Time
	f  func() // AfterFunc's: called instead of sending on ch
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *virtualClock) NewTimer(d time.Duration) clock.Timer {
	t := &virtualTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.at = c.now.Add(d)
	c.waiting = append(c.waiting, t)
	return t
}

func (c *virtualClock) After(d time.Duration) <-chan time.Time {
	t := &virtualTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t.ch
}

func (c *virtualClock) Sleep(d time.Duration) { <-c.After(d) }

func (c *virtualClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &virtualTimer{c: c, f: f}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.at = c.now.Add(d)
	c.waiting = append(c.waiting, t)
	return t
}

func (c *virtualClock) Tick(time.Duration) <-chan time.Time {
	panic("virtualClock: Tick is not used by a run")
}

func (t *virtualTimer) C() <-chan time.Time { return t.ch }

func (t *virtualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.removeLocked(t)
}

func (c *virtualClock) removeLocked(t *virtualTimer) bool {
	n := len(c.waiting)
	c.waiting = slices.DeleteFunc(c.waiting, func(w *virtualTimer) bool { return w == t })
	return len(c.waiting) < n
}

// Reset arms the timer and, since its owner is about to wait on it, moves time to when
// it is due.
func (t *virtualTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	active := c.removeLocked(t)
	select {
	case <-t.ch: // a value the owner never took is stale now
	default:
	}
	t.at = c.now.Add(d)
	c.waiting = append(c.waiting, t)
	// Time moves through each timer due by then, in order; AfterFuncs are called
	// before the owner wakes, as they would have been called before, in real time.
	var calls []func()
	slices.SortStableFunc(c.waiting, func(a, b *virtualTimer) int { return a.at.Compare(b.at) })
	for len(c.waiting) > 0 && !c.waiting[0].at.After(t.at) {
		w := c.waiting[0]
		c.waiting = c.waiting[1:]
		if w.at.After(c.now) {
			c.now = w.at
		}
		if w.f != nil {
			calls = append(calls, w.f)
			continue
		}
		select {
		case w.ch <- c.now:
		default:
		}
	}
	c.mu.Unlock()
	for _, f := range calls {
		f()
	}
	return active
}
