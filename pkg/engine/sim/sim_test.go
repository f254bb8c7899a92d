// Package sim is a deterministic simulation of the engine: verbs, reconcile replicas and
// a hostile tenant as processes over one fake API server and one fake broker, every
// choice (who moves, what fails, how clocks move) taken from one seeded random source,
// and the engine's invariants (/docs/engine.md) checked after every step and once
// everything is quiet. It runs in "go test"; see docs/engine.md for replaying a seed.
package sim

import (
	"flag"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"testing"
	"time"
)

var (
	seeds      = flag.Int("sim.seeds", 0, "how many seeds to run (default 400, 100 with -short)")
	firstSeed  = flag.Uint64("sim.seed", 0, "run only this seed (with -sim.seeds: run that many from it)")
	steps      = flag.Int("sim.steps", 150, "steps of each seed before the faults stop")
	foreignIDs = flag.Bool("sim.foreign", true, "let the tenant copy OSB ids of other namespaces into her records (status and spec), and the verbs adopt ids bound to nothing (--external-id)")
)

// runSeed runs one seed and returns the world it leaves.
func runSeed(seed uint64, n int) *world {
	w := newWorld(seed)
	w.logf("seed %d: rates %+v", seed, w.rates)
	if w.rates.outage {
		// A broker that is down long enough for retries to reach long waits.
		n *= 3
	}
	if w.rebind.on {
		// Instances bound, updated, then rebound take longer (rebind_test.go).
		n *= 3
	}
	if w.move.on {
		// Records made, exported, moved in and released take longer (move_test.go).
		n *= 3
	}
	for range n {
		w.step()
		if len(w.failures) > 0 {
			return w
		}
	}
	w.quiesce()
	if len(w.failures) == 0 {
		w.checkQuiescence()
	}
	if len(w.failures) == 0 {
		w.checkRotatedAtQuiescence() // rotatedue_test.go
	}
	if len(w.failures) == 0 {
		w.checkEvents()
	}
	return w
}

func TestSim(t *testing.T) {
	count, from := 150, uint64(1)
	if testing.Short() {
		count = 60
	}
	if *firstSeed != 0 {
		from, count = *firstSeed, 1
	}
	if *seeds > 0 {
		count = *seeds
	}
	start := time.Now()
	failed := 0
	var reached gateReached
	takeovers, tookOver := 0, []uint64{}
	var renewed renewReached
	rotated := 0
	for seed, w := range runSeeds(from, count) {
		reached.add(w.gateReached)
		rotated += w.rot.count
		if w.takeovers > 0 {
			takeovers += w.takeovers
			tookOver = append(tookOver, seed)
		}
		if w.trust != nil {
			renewed.add(w.trust.renew.reached)
		}
		if len(w.failures) == 0 {
			if *firstSeed != 0 && testing.Verbose() {
				t.Log("trace:\n" + strings.Join(w.trace, "\n"))
			}
			continue
		}
		failed++
		if failed <= 3 {
			t.Errorf("seed %d: %s\nreplay: %s\n%s",
				seed, w.failures[0], replay("", seed), tail(w.trace, 60))
		} else {
			t.Errorf("seed %d: %s", seed, firstLine(w.failures[0]))
		}
	}
	t.Logf("%d seeds (from %d) in %s, %d failed", count, from, time.Since(start).Round(time.Millisecond), failed)
	t.Logf("the call gate: %+v", reached)
	t.Logf("claims of ended processes taken over: %d (seeds %v)", takeovers, tookOver)
	t.Logf("reconcile --rotate-due rotated %d bindings whose renew_before had passed", rotated)
	if count >= 150 && *firstSeed == 0 {
		reached.check(t)
		if rotated == 0 {
			t.Errorf("%d seeds: no reconcile --rotate-due run rotated a binding", count)
		}
	}
	if *trustPolicy {
		t.Logf("the trust token created anew: %+v", renewed)
		// (The brokers world's broker clients are its own: the calls' identities are
		// not checked there, so reconcile's calls after an adopt are not counted.)
		if count >= 100 && !*brokersWorld {
			renewed.check(t) // renew_test.go
		}
	}
}

// runSeeds runs count seeds from from, as many at once as Go runs goroutines in
// parallel (each world is its own: its random source, clocks, API server and broker),
// and yields each seed's world in the order of the seeds.
func runSeeds(from uint64, count int) iter.Seq2[uint64, *world] {
	return func(yield func(uint64, *world) bool) {
		results := make([]chan *world, count)
		for i := range results {
			results[i] = make(chan *world, 1)
		}
		next := make(chan int)
		stop := make(chan struct{})
		defer close(stop)
		for range runtime.GOMAXPROCS(0) {
			go func() {
				for i := range next {
					results[i] <- runSeed(from+uint64(i), *steps)
				}
			}()
		}
		go func() {
			defer close(next)
			for i := range count {
				select {
				case next <- i:
				case <-stop:
					return
				}
			}
		}()
		for i := range count {
			w := <-results[i]
			// A world's trace is kept only as long as its seed's result is needed.
			if !yield(from+uint64(i), w) {
				return
			}
		}
	}
}

// tail is the end of a trace: the steps that led to a failure.
func tail(trace []string, n int) string {
	if *firstSeed != 0 {
		return strings.Join(trace, "\n")
	}
	if len(trace) > n {
		trace = append([]string{fmt.Sprintf("... %d earlier lines (replay the seed for all)", len(trace)-n)}, trace[len(trace)-n:]...)
	}
	return strings.Join(trace, "\n")
}

func TestSim_SameSeedSameTrace(t *testing.T) {
	sameTraces(t)
	// And in the world with every flag on.
	flags := []*bool{rogueAll, asyncBindAll, wideSkew, longWork, lostAnswers, gcLag, nsDelete, heldPlan, crossNamespace, abandon, upShare, otherReleases, paramSecret, dryRuns, upCreds, fileProjections, brokersWorld, limitsWorld, shardGroups, staticShards, upgradeWorld, migrateWorld, rebindWorld, moveWorld}
	was := make([]bool, len(flags))
	for i, f := range flags {
		was[i], *f = *f, true
	}
	defer func() {
		for i, f := range flags {
			*f = was[i]
		}
	}()
	sameTraces(t)
}

func sameTraces(t *testing.T) {
	t.Helper()
	for _, seed := range []uint64{7, 99} {
		a := strings.Join(runSeed(seed, *steps).trace, "\n")
		b := strings.Join(runSeed(seed, *steps).trace, "\n")
		if a != b {
			al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
			for i := range min(len(al), len(bl)) {
				if al[i] != bl[i] {
					t.Fatalf("seed %d: the traces differ at line %d:\n%s\n%s", seed, i, al[i], bl[i])
				}
			}
			t.Fatalf("seed %d: the traces differ in length: %d and %d lines", seed, len(al), len(bl))
		}
	}
}
