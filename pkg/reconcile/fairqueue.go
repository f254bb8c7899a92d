package reconcile

import (
	"container/heap"
	"slices"
	"time"
)

// Fairness. Records of one namespace are written by whoever may write ConfigMaps there,
// and a tenant's brokers may be slow on purpose (tarpits): each call then holds a worker
// until the broker client's timeout. So the queue is kept per namespace, due records
// are taken up round robin between namespaces, and a namespace gets at most its share
// of the workers (the workers divided among the namespaces that have work queued or
// under way, at least one) while another has due work waiting. A namespace alone uses
// every worker; forty slow brokers in one namespace hold its share, and the records of
// the others are driven beside them.

// fairQueue is the run's queue: a heap by due time per namespace.
type fairQueue struct {
	byNS map[string]*queue
	// order is the namespaces in the order they first queued; next is where the next
	// round robin starts.
	order []string
	next  int
	n     int
	// busy counts the workers each namespace holds.
	busy map[string]int
}

func newFairQueue() *fairQueue {
	return &fairQueue{byNS: map[string]*queue{}, busy: map[string]int{}}
}

func (f *fairQueue) len() int { return f.n }

func (f *fairQueue) push(t *task) {
	q := f.byNS[t.w.namespace]
	if q == nil {
		q = &queue{}
		f.byNS[t.w.namespace] = q
		f.order = append(f.order, t.w.namespace)
	}
	heap.Push(q, t)
	f.n++
}

// share is how many workers of workers one namespace may hold now.
func (f *fairQueue) share(workers int) int {
	active := 0
	for _, ns := range f.order {
		if f.byNS[ns].Len() > 0 || f.busy[ns] > 0 {
			active++
		}
	}
	return max(1, (workers+active-1)/max(active, 1))
}

// pop takes the first due task of the next namespace in turn that holds fewer than
// share workers; nil when there is none.
func (f *fairQueue) pop(now time.Time, share int) *task {
	for i := range f.order {
		k := (f.next + i) % len(f.order)
		ns := f.order[k]
		q := f.byNS[ns]
		if q.Len() == 0 || f.busy[ns] >= share || (*q)[0].due.After(now) {
			continue
		}
		f.next = k + 1
		f.n--
		f.busy[ns]++
		return heap.Pop(q).(*task)
	}
	return nil
}

// done gives back the worker t's namespace held.
func (f *fairQueue) done(t *task) { f.busy[t.w.namespace]-- }

// earliest is when the first task of a namespace that may take a worker is due.
func (f *fairQueue) earliest(share int) (time.Time, bool) {
	var at time.Time
	found := false
	for _, ns := range f.order {
		q := f.byNS[ns]
		if q.Len() == 0 || f.busy[ns] >= share {
			continue
		}
		if d := (*q)[0].due; !found || d.Before(at) {
			at, found = d, true
		}
	}
	return at, found
}

// all is every queued task, by due time.
func (f *fairQueue) all() []*task {
	var ts []*task
	for _, ns := range f.order {
		ts = append(ts, *f.byNS[ns]...)
	}
	slices.SortFunc(ts, func(a, b *task) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return ts
}

// queue is a heap of tasks by due time.
type queue []*task

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*task)) }
func (q *queue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return t
}
