package sim

import (
	"flag"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// A reconcile run with many instances (or bindings) with work lists them in full once
// and steps a due poll on the list's copy, its claim guarded by the copy's
// resourceVersion (pkg/reconcile/listed.go). The simulation's worlds hold a few
// records, fewer than the run's threshold, so a share of the reconcile processes runs
// with the threshold at 1: each of their runs takes that path.

var listedAll = flag.Int("sim.listed", 0, "let every reconcile process list the records with work and step due polls on the list's copies from this many records with work on (by default one process in four does, from 1; -1: none does)")

// listedCopiesMin is the reconcile option ListedCopiesMin of process p: 1 for one
// reconcile process in four (by the seed and the process's name, so that no draw of
// the world's changes), or every one with -sim.listed=N (N; none with -1); 0 (the default threshold,
// above the world's records) for the others.
func (p *proc) listedCopiesMin() int {
	if *listedAll != 0 {
		return max(*listedAll, 0)
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "listed/%d/%s", p.w.seed, p.name)
	if h.Sum32()%4 == 0 {
		return 1
	}
	return 0
}

// lostByRogue reports an instance whose broker answered off the OSB spec for one of its
// ids (a provision answered 201 and not carried out, say) and that still fails on the
// broker's answers: an update or a rebind after it cannot end (every update and bind is
// answered 404 for ever), as checkFinal lets such a record stay unsettled. Seed 143 of
// the default world, with its reconcile processes stepping polls on their lists' copies.
func (w *world) lostByRogue(x *v1alpha1.ServiceInstance) bool {
	rogue := slices.ContainsFunc(instanceIDs(x), func(id string) bool { t := w.book.ids[id]; return t != nil && t.rogue })
	msg, _ := readyMessage(&x.Status.OperationStatus)
	return rogue && strings.Contains(msg, "the broker answered")
}
