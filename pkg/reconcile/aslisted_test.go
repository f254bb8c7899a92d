package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// fullPassAlways are the options of runs that make a full pass each (the default), with
// the catalog namespace that says whether every record has its id claims.
func fullPassAlways() Options {
	return Options{CatalogNamespace: storetest.CatalogNamespace}
}

// asListedFixture is a fixture whose settled records fill a namespace listed last
// ("z-last"), over more than one page of the store's metadata lists (the first of 8).
func asListedFixture(t *testing.T, settled int) *fixture {
	f := newFixture(t)
	for i := range settled {
		f.instanceWithID("z-last", fmt.Sprintf("settled-%02d", i), v1alpha1.NewNamespaceBoundID("z-last"))
	}
	return f
}

// swept asserts that the records have their id claims (reconcile's first full pass gave
// them): a full pass steps records while its list is read.
func (f *fixture) swept() {
	f.t.Helper()
	swept, err := f.st.IDClaimsSwept(context.Background(), storetest.CatalogNamespace)
	assert.NilError(f.t, err)
	assert.Assert(f.t, swept)
}

// stepStarted makes the run's first step of an instance close the channel it returns.
func (f *fixture) stepStarted() <-chan struct{} {
	started := make(chan struct{})
	var once atomic.Bool
	f.rec.stepInstance = func(ctx context.Context, inst *v1alpha1.ServiceInstance) (engine.Result, error) {
		if once.CompareAndSwap(false, true) {
			close(started)
		}
		return f.rec.Engine.StepInstance(ctx, inst)
	}
	return started
}

// A full pass steps the records with work of a namespace once its list has read that
// namespace: the first step starts before the list's last page is read, and the run
// still drives every record with work, those of the namespaces the list reads last and
// a deletion no label marks included.
func TestRun_FullPass_StepsWhileItsListIsRead(t *testing.T) {
	f := asListedFixture(t, 20)
	const first, last = "a-first", "z-last"
	f.instanceWithID(first, "early", v1alpha1.NewNamespaceBoundID(first))
	assert.Equal(t, f.run(fullPassAlways()).Counts[Done], 21)
	f.swept()
	f.broker.ResetCalls()
	f.instanceWithID(first, "new", v1alpha1.NewNamespaceBoundID(first))
	f.instanceWithID(last, "late", v1alpha1.NewNamespaceBoundID(last))
	f.kubectlDelete(last, "settled-13")
	started := f.stepStarted()
	var beforeLastPage atomic.Bool
	var waited atomic.Bool
	f.cluster.OnMetadataList(func(cont string) {
		if !strings.HasPrefix(cont, last+"/") || waited.Swap(true) {
			return
		}
		// The list is in the last namespace, with pages of it to read: the first
		// namespace's records are being stepped.
		select {
		case <-started:
			beforeLastPage.Store(true)
		case <-time.After(5 * time.Second):
		}
	})

	sum := f.run(fullPassAlways())

	assert.Assert(t, waited.Load(), "the list was not read in pages")
	assert.Assert(t, beforeLastPage.Load(), "no step started before the full pass's list was read to its end")
	assert.Equal(t, f.itemIn(sum, first, "new").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, f.itemIn(sum, last, "late").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, f.itemIn(sum, last, "settled-13").Outcome, Done, "%+v", sum.Items)
	_, err := f.st.Instances().Get(context.Background(), last, "settled-13")
	assert.Assert(t, store.IsNotFound(err), "the deletion only the full list finds is finished: %v", err)
	assert.Equal(t, sum.Counts[Done], 3, "%+v", sum.Items)
}

// The checks of the ids of a namespace the list has passed are answered as a full pass
// answers them: a copy of an older record's id, of an id bound to nothing another
// namespace adopted first, of another namespace's id, is refused, while the list still
// reads the namespaces after it.
func TestRun_FullPass_StepsWhileItsListIsRead_RefusesCopiedIDs(t *testing.T) {
	f := asListedFixture(t, 20)
	const first, last = "a-first", "z-last"
	owned := v1alpha1.NewNamespaceBoundID(first)
	f.instanceWithID(first, "owner", owned)
	f.instanceWithID(last, "adopter", "osb-adopted")
	theirs := v1alpha1.NewNamespaceBoundID(last)
	f.instanceWithID(last, "theirs", theirs)
	assert.Equal(t, f.run(fullPassAlways()).Counts[Done], 23)
	f.swept()
	f.broker.ResetCalls()
	f.now = f.now.Add(time.Minute)
	f.instanceWithID(first, "copy", owned)
	f.instanceWithID(first, "adopted-copy", "osb-adopted")
	f.instanceWithID(first, "theirs-copy", theirs)
	f.instanceWithID(first, "new", v1alpha1.NewNamespaceBoundID(first))
	started := f.stepStarted()
	var beforeLastPage, waited atomic.Bool
	f.cluster.OnMetadataList(func(cont string) {
		if !strings.HasPrefix(cont, last+"/") || waited.Swap(true) {
			return
		}
		select {
		case <-started:
			beforeLastPage.Store(true)
		case <-time.After(5 * time.Second):
		}
	})

	sum := f.run(fullPassAlways())

	assert.Assert(t, beforeLastPage.Load(), "no step started before the full pass's list was read to its end")
	for _, name := range []string{"copy", "adopted-copy", "theirs-copy"} {
		assert.Equal(t, f.itemIn(sum, first, name).Outcome, Refused, "%s: %s", name, f.itemIn(sum, first, name).Detail)
	}
	assert.Equal(t, f.itemIn(sum, first, "new").Outcome, Done, "%+v", sum.Items)
}

// A run interrupted (or out of time) while its full pass's list is read ends as any
// interrupted run: what it stepped is reported, the list is not waited for, nothing
// fails.
func TestRun_FullPass_InterruptedWhileItsListIsRead(t *testing.T) {
	for _, how := range []string{"interrupt", "drain"} {
		t.Run(how, func(t *testing.T) {
			f := asListedFixture(t, 20)
			assert.Equal(t, f.run(fullPassAlways()).Counts[Done], 20)
			f.swept()
			before := f.cluster.MetadataItems()
			f.run(fullPassAlways())
			fullList := f.cluster.MetadataItems() - before
			f.instanceWithID("a-first", "new", v1alpha1.NewNamespaceBoundID("a-first"))
			lastFull := f.rec.fullPasses.last("")
			f.now = f.now.Add(time.Minute)
			before = f.cluster.MetadataItems()
			stop := make(chan struct{})
			var once atomic.Bool
			f.cluster.OnMetadataList(func(cont string) {
				if strings.HasPrefix(cont, "z-last/") && once.CompareAndSwap(false, true) {
					close(stop)
				}
			})
			o := fullPassAlways()
			o.Workers = 4
			if how == "interrupt" {
				o.Interrupt = stop
			} else {
				o.Drain = stop
			}

			sum, err := f.rec.Run(context.Background(), o)

			if how == "interrupt" && len(sum.Items) == 0 {
				// Nothing done before the interruption: as when it came before the list.
				assert.ErrorIs(t, err, context.Canceled)
			} else {
				assert.NilError(t, err)
			}
			assert.Equal(t, sum.Interrupted, how == "interrupt", "%+v", sum)
			assert.Assert(t, sum.Counts[Failed] == 0, "%+v", sum.Items)
			// A list not read to its end is no full pass.
			if f.cluster.MetadataItems()-before < fullList {
				assert.Equal(t, f.rec.fullPasses.last(""), lastFull)
			}
		})
	}
}

// A full pass whose list's snapshot expires after it has handed namespaces to the run
// (410 Gone on a continue token) reads the list again from its start: the records with
// work it handed over before are stepped once, each reported once.
func TestRun_FullPass_ListExpiredWhileItsListIsRead_StepsEachRecordOnce(t *testing.T) {
	f := asListedFixture(t, 20)
	const first, last = "a-first", "z-last"
	assert.Equal(t, f.run(fullPassAlways()).Counts[Done], 20)
	f.swept()
	f.instanceWithID(first, "new", v1alpha1.NewNamespaceBoundID(first))
	f.instanceWithID(last, "late", v1alpha1.NewNamespaceBoundID(last))
	f.kubectlDelete(last, "settled-13")
	var expired atomic.Bool
	var restarts atomic.Int32
	f.cluster.OnMetadataList(func(cont string) {
		if cont == "" && expired.Load() {
			restarts.Add(1)
		}
		if strings.HasPrefix(cont, last+"/") && !expired.Swap(true) {
			// This page, in the last namespace, is answered 410 Gone.
			f.cluster.ExpireContinueTokens(1)
		}
	})
	var steps atomic.Int32
	f.rec.stepInstance = func(ctx context.Context, inst *v1alpha1.ServiceInstance) (engine.Result, error) {
		if inst.Namespace == first && inst.Name == "new" {
			steps.Add(1)
		}
		return f.rec.Engine.StepInstance(ctx, inst)
	}

	sum := f.run(fullPassAlways())

	assert.Assert(t, expired.Load(), "the list was not read in pages")
	assert.Assert(t, restarts.Load() >= 1, "the list did not start again")
	assert.Equal(t, f.itemIn(sum, first, "new").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, f.itemIn(sum, last, "late").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, f.itemIn(sum, last, "settled-13").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, sum.Counts[Done], 3, "%+v", sum.Items)
	assert.Equal(t, len(sum.Items), 3, "%+v", sum.Items)
	assert.Equal(t, steps.Load(), int32(1))
}

// A full pass whose list fails after it has handed namespaces to the run returns the
// list's error with what it did: the records of the namespaces it passed are stepped and
// reported, those of the namespaces it did not read are left as they were for the next
// run, and the run is no full pass.
func TestRun_FullPass_ListFailsWhileItsListIsRead_ReportsWhatItDidAndTheError(t *testing.T) {
	f := asListedFixture(t, 20)
	const first, last = "a-first", "z-last"
	assert.Equal(t, f.run(fullPassAlways()).Counts[Done], 20)
	f.swept()
	lastFull := f.rec.fullPasses.last("")
	f.now = f.now.Add(time.Minute)
	f.instanceWithID(first, "new", v1alpha1.NewNamespaceBoundID(first))
	f.instanceWithID(last, "late", v1alpha1.NewNamespaceBoundID(last))
	started := f.stepStarted()
	failed := errors.New("connection reset by peer")
	f.cluster.FailMetadataLists(func(cont string) error {
		if !strings.HasPrefix(cont, last+"/") {
			return nil
		}
		// The first namespace was handed over: its step has started.
		select {
		case <-started:
		case <-time.After(5 * time.Second):
		}
		return failed
	})

	sum, err := f.rec.Run(context.Background(), fullPassAlways())

	assert.ErrorIs(t, err, failed)
	assert.Equal(t, f.itemIn(sum, first, "new").Outcome, Done, "%+v", sum.Items)
	assert.Equal(t, len(sum.Items), 1, "%+v", sum.Items)
	assert.Equal(t, f.rec.fullPasses.last(""), lastFull)
}
