package sim

import (
	"flag"
	"fmt"
	"hash/fnv"
)

// A reconcile run with many instances (or bindings) with work lists them in full once
// and steps a due poll on the list's copy, its claim guarded by the copy's
// resourceVersion (pkg/reconcile/listed.go). The simulation's worlds hold a few
// records, fewer than the run's threshold, so a share of the reconcile processes runs
// with the threshold at 1: each of their runs takes that path.

var listedAll = flag.Int("sim.listed", 0, "let every reconcile process list the records with work and step due polls on the list's copies from this many records with work on (by default one process in four does, from 1)")

// listedCopiesMin is the reconcile option ListedCopiesMin of process p: 1 for one
// reconcile process in four (by the seed and the process's name, so that no draw of
// the world's changes), or every one with -sim.listed=N (N); 0 (the default threshold,
// above the world's records) for the others.
func (p *proc) listedCopiesMin() int {
	if *listedAll > 0 {
		return *listedAll
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "listed/%d/%s", p.w.seed, p.name)
	if h.Sum32()%4 == 0 {
		return 1
	}
	return 0
}
