package reconcile

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	k8sclock "k8s.io/utils/clock"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// turnsClock is a wall clock that gives a full pass's listing its turns as draw says
// (ListingTurns), as the engine's simulation's run clock does.
type turnsClock struct {
	k8sclock.RealClock
	draw  func() bool
	asked atomic.Int32
}

func (c *turnsClock) ListingTurn() bool {
	c.asked.Add(1)
	return c.draw()
}

// turnsLog is what a run on turns did, in order: "page" for each page of a metadata
// list read, "step" for each step of an instance; overlap is set when a page is read
// while a step is under way.
type turnsLog struct {
	mu       sync.Mutex
	events   []string
	stepping atomic.Bool
	overlap  atomic.Bool
}

func (l *turnsLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *turnsLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.events, " ")
}

// onTurns makes a fixture (swept, with records of a first namespace and of one listed
// last over several pages) run on a turnsClock drawing draw, and logs what the run
// does. Each step of an instance lasts a while, and the list's first page of the last
// namespace waits (300 ms at most) for a step to start, so that a listing that is not
// on the run's turns reads that page while a step is under way.
func onTurns(t *testing.T, draw func() bool) (*fixture, *turnsClock, *turnsLog) {
	f := asListedFixture(t, 20)
	const first, last = "a-first", "z-last"
	f.instanceWithID(first, "early", v1alpha1.NewNamespaceBoundID(first))
	assert.Equal(t, f.run(fullPassAlways()).Counts[Done], 21)
	f.swept()
	f.broker.ResetCalls()
	f.instanceWithID(first, "new", v1alpha1.NewNamespaceBoundID(first))
	f.instanceWithID(last, "late", v1alpha1.NewNamespaceBoundID(last))
	f.kubectlDelete(last, "settled-13")
	clk := &turnsClock{draw: draw}
	f.rec.WithRunClock(clk)
	log := &turnsLog{}
	started := make(chan struct{})
	var once sync.Once
	f.rec.stepInstance = func(ctx context.Context, inst *v1alpha1.ServiceInstance) (engine.Result, error) {
		log.stepping.Store(true)
		defer log.stepping.Store(false)
		log.add("step")
		once.Do(func() { close(started) })
		time.Sleep(30 * time.Millisecond)
		return f.rec.Engine.StepInstance(ctx, inst)
	}
	var waited atomic.Bool
	f.cluster.OnMetadataList(func(cont string) {
		if strings.HasPrefix(cont, last+"/") && !waited.Swap(true) {
			select {
			case <-started:
			case <-time.After(300 * time.Millisecond):
			}
		}
		if log.stepping.Load() {
			log.overlap.Store(true)
		}
		log.add("page")
	})
	return f, clk, log
}

// A run whose clock gives the listing its turns (the simulation's) reads its full
// pass's list only while no step is under way, and steps the records the list handed
// over as the clock draws: taking the steps first, it steps the first namespace's
// records before the list reads the last namespace's pages, and still drives every
// record with work.
func TestRun_FullPass_ListedOnTheRunsTurns_StepsFirst(t *testing.T) {
	f, clk, log := onTurns(t, func() bool { return false })

	sum := f.run(Options{CatalogNamespace: fullPassAlways().CatalogNamespace, Workers: 1})

	assert.Assert(t, !log.overlap.Load(), "a page of the list was read while a step was under way: %s", log)
	assert.Assert(t, clk.asked.Load() > 0, "the run never drew the listing's turn")
	assert.Assert(t, strings.Contains(log.String(), "step page"), "no page was read after a step: %s", log)
	assert.Equal(t, f.itemIn(sum, "a-first", "new").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, f.itemIn(sum, "z-last", "late").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, f.itemIn(sum, "z-last", "settled-13").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, sum.Counts[Done], 3, "%+v", sum.Items)
}

// Drawing the listing's turns first, the run reads the whole list before its first
// step.
func TestRun_FullPass_ListedOnTheRunsTurns_ListsFirst(t *testing.T) {
	f, _, log := onTurns(t, func() bool { return true })

	sum := f.run(Options{CatalogNamespace: fullPassAlways().CatalogNamespace, Workers: 1})

	assert.Assert(t, !log.overlap.Load(), "a page of the list was read while a step was under way: %s", log)
	assert.Assert(t, !strings.Contains(log.String(), "step page"), "a page was read after a step: %s", log)
	assert.Equal(t, sum.Counts[Done], 3, "%+v", sum.Items)
}

// A run on turns that is interrupted while its list is still to be read ends, and its
// listing with it: nothing waits for a turn for ever.
func TestRun_FullPass_ListedOnTheRunsTurns_Interrupted(t *testing.T) {
	f, _, _ := onTurns(t, func() bool { return false })
	interrupt := make(chan struct{})
	step := f.rec.stepInstance
	f.rec.stepInstance = func(ctx context.Context, inst *v1alpha1.ServiceInstance) (engine.Result, error) {
		select {
		case <-interrupt:
		default:
			close(interrupt)
		}
		return step(ctx, inst)
	}
	done := make(chan Summary, 1)
	go func() {
		sum, _ := f.rec.Run(context.Background(), Options{CatalogNamespace: fullPassAlways().CatalogNamespace, Workers: 1, Interrupt: interrupt})
		done <- sum
	}()
	select {
	case sum := <-done:
		assert.Assert(t, sum.Interrupted, "%+v", sum)
		assert.Equal(t, f.itemIn(sum, "a-first", "new").Outcome, Done, "%+v", sum.Items)
		for _, it := range sum.Items {
			assert.Assert(t, it.Namespace != "z-last", "the list was read on after the interruption: %+v", sum.Items)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupted run did not end")
	}
}
