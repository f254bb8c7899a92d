package sim

import (
	"flag"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// A run that names the catalog namespace (reconcile.Options.CatalogNamespace), over a
// cluster whose records all have their id claims (the ConfigMap catalog-idclaims that
// the first full pass to settle every claim writes), steps the records with work of
// each namespace as its full pass's list passes them, the list still read
// (pkg/reconcile/aslisted.go). A share of the reconcile processes names it: once a
// full pass marked the cluster swept, each of their runs takes that path.
//
// The list and the work it hands over (the copies of its records it lists, the id
// claims it settles at its end) run in goroutines of their own beside the run's
// worker. The simulation's run clock gives them turns (reconcile.ListingTurns): they
// run only while the run waits for them, with no step under way, and the steps only
// while they wait. When the run has a record due, the seed draws whether the list reads
// on first (to its next namespace, or its end) or the steps due go first; with no record
// due, the list reads on. So one seed is still one interleaving.

var asListedAll = flag.Int("sim.aslisted", 0, "let every reconcile process name the catalog namespace, so that its full passes step records while their list is read once the cluster is swept (by default one process in two does; -1: none does)")

// catalogNamespace is the reconcile option CatalogNamespace of process p: the catalog
// namespace for one reconcile process in two (by the seed and the process's name, so
// that no draw of the world's changes), or every one with -sim.aslisted=1 (none with
// -1); "" for the others.
func (p *proc) catalogNamespace() string {
	switch {
	case *asListedAll > 0:
		return storetest.CatalogNamespace
	case *asListedAll < 0:
		return ""
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "aslisted/%d/%s", p.w.seed, p.name)
	if h.Sum32()%2 == 0 {
		return storetest.CatalogNamespace
	}
	return ""
}

var _ reconcile.ListingTurns = runClock{}

// ListingTurn draws whether a full pass's list reads on before the steps due.
func (c runClock) ListingTurn() bool {
	if c.p.w.rng.IntN(2) == 0 {
		c.p.w.listingTurns[0]++
		c.p.w.logf("%-14s the full pass's list reads on before the steps due", c.p.name)
		return true
	}
	c.p.w.listingTurns[1]++
	c.p.w.logf("%-14s the steps due go before the full pass's list", c.p.name)
	return false
}

// TestSim_AsListed runs a few seeds with every reconcile process naming the catalog
// namespace (-sim.aslisted=1) as part of the default seeds (make soak runs many more):
// each seed twice, with the same trace, and fails if a seed fails or if no seed drew
// both the list's turn and the steps' first: the seeds must reach the path. A run naming
// seeds or flags leaves it out.
func TestSim_AsListed(t *testing.T) {
	if *firstSeed != 0 || *seeds != 0 {
		t.Skip("a run of chosen seeds")
	}
	was := *asListedAll
	*asListedAll = 1
	defer func() { *asListedAll = was }()
	count := 6
	if testing.Short() {
		count = 2
	}
	var turns [2]int
	for seed := uint64(1); seed <= uint64(count); seed++ {
		w := runSeed(seed, *steps)
		if len(w.failures) > 0 {
			t.Errorf("-sim.aslisted=1, seed %d: %s\nreplay: %s\n%s", seed, w.failures[0], replay("-sim.aslisted=1", seed), tail(w.trace, 60))
			continue
		}
		again := runSeed(seed, *steps)
		if a, b := strings.Join(w.trace, "\n"), strings.Join(again.trace, "\n"); a != b {
			t.Errorf("-sim.aslisted=1, seed %d: the same seed gave two traces (%d and %d lines)", seed, len(w.trace), len(again.trace))
		}
		turns[0] += w.listingTurns[0]
		turns[1] += w.listingTurns[1]
	}
	t.Logf("-sim.aslisted=1: of %d seeds, %d draws gave the list its turn first, %d the steps", count, turns[0], turns[1])
	if turns[0] == 0 || turns[1] == 0 {
		t.Errorf("-sim.aslisted=1: %d seeds drew the list's turn first %d times and the steps first %d: the seeds miss the path", count, turns[0], turns[1])
	}
}
