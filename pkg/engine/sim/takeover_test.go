package sim

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Every process of the simulation runs in one OS process, so what the system tells
// (store.SystemProcesses) would name the same process in every claim, and no claim would
// ever be abandoned. Each process's store is given its own process instead
// (store.WithProcesses), and a table of the processes running beside it that tells the
// truth about the model:
//
//   - the processes of a person (her verbs, her edits, her runs of reconcile by hand)
//     run on her machine: one host, one boot, one pid namespace. Each lifetime of a
//     process (its generation: a command, or what replaced a killed one) has a pid of
//     its own, and once killed or ended it runs no more: a process of the same machine
//     judges its claims abandoned, as store.Process.Gone would;
//   - a reconcile replica (and the move world's reconcile of the new cluster) is PID 1
//     of its container, its host name the Pod's; restarted, it keeps both and is in a
//     new pid namespace. No one judges its claims abandoned: another host (another Pod,
//     a person's machine), or, for its successor, its own pid.
//
// The judgement itself is the store's (Claims.Abandoned), from those identities and
// tables. The person's machine where takeovers happen is alice's: besides her verbs, she
// runs reconcile by hand there now and then (reconcileByHand), which takes over the
// claims her killed or interrupted commands left (engine.Engine.TakeOverInstance), as a
// run by hand after a killed "--wait" does.

// reconcileByHand is the kind of a person's runs of "kubectl catalog reconcile" on her
// machine: each run a command, a process of its own, on her namespace ("kubectl catalog
// reconcile -n dev"), with no --serve and no shard.
const reconcileByHand kind = 1 << 9

// handReconcileName is alice's process that runs reconcile by hand, on dev.
const handReconcileName = "alice-reconcile"

// reconciles reports whether p runs reconcile: a replica, or runs by hand.
func (p *proc) reconciles() bool { return p.kind == reconciler || p.kind == reconcileByHand }

// handReconcileFlag gives every seed alice's runs of reconcile by hand.
var handReconcileFlag = flag.Bool("sim.handreconcile", false, "give every seed a person's runs of reconcile by hand on her machine, which take over the claims her ended processes left (one seed in two without it)")

// withHandReconcile reports whether a seed has alice's runs of reconcile by hand: one
// seed in two, or every seed with -sim.handreconcile; never under the trust policy,
// whose checks (who a request is made for, who may read the vault) know reconcile only
// as the replicas' ServiceAccount (trust_test.go), nor in the rebind and move worlds,
// whose processes are their own.
func (w *world) withHandReconcile() bool {
	if *trustPolicy || w.rebind.on || withMove(w.seed) {
		return false
	}
	r := rand.New(rand.NewPCG(w.seed^0x5be0cd19137e2179, w.seed))
	return r.IntN(2) == 0 || *handReconcileFlag
}

// addHandReconcile adds alice's runs of reconcile by hand, in the seeds that have them.
// (A seed without them draws as it did before they were modelled.)
func (w *world) addHandReconcile() {
	if w.withHandReconcile() {
		w.procs = append(w.procs, w.newProc(handReconcileName, reconcileByHand, "dev"))
	}
}

// machine is the host process p runs on, and whether it is a Pod's container (each
// lifetime of which is PID 1 of a pid namespace of its own) rather than a person's
// machine.
func (p *proc) machine() (host string, pod bool) {
	switch {
	case p.kind == reconciler:
		return p.name, true
	case p.name == newRecName:
		return p.name + ".new-cluster", true
	}
	person := p.name
	switch p.name {
	case "alice-vault", handReconcileName:
		person = "alice"
	case "mallory-edits", "mallory-dev":
		person = "mallory"
	case "bob-edits":
		person = "bob"
	}
	return person + "-laptop", false
}

// newProcess gives p's new lifetime its process: on a person's machine the next pid
// there, in a Pod's container PID 1 of a new pid namespace.
func (p *proc) newProcess() {
	w := p.w
	host, pod := p.machine()
	start := fmt.Sprint(w.t.UnixMilli() / 10)
	if pod {
		p.process = &store.Process{Host: host, PID: 1, Boot: "node-boot", PIDNamespace: fmt.Sprintf("pid:[%s/%d]", p.name, p.gen), Start: start}
		return
	}
	if w.pids == nil {
		w.pids = map[string]int{}
	}
	w.pids[host]++
	p.process = &store.Process{Host: host, PID: 1000 + w.pids[host], Boot: "boot-" + host, PIDNamespace: "pid:[" + host + "]", Start: start}
}

// processes is what p's current lifetime knows of processes (store.WithProcesses):
// itself, and the processes of the world running in its pid namespace, those of a
// lifetime that ended or was killed no more.
func (p *proc) processes() store.ProcessTable {
	me := p.process
	return store.ProcessTable{Self: me, Running: func(pid int) (string, bool) {
		for _, q := range p.w.procs {
			if r := q.process; r != nil && !q.dead && r.PIDNamespace == me.PIDNamespace && r.PID == pid {
				return r.Start, true
			}
		}
		return "", false
	}}
}

// handHolder is the holder of a run of reconcile by hand: "reconcile@HOST/PID.NONCE".
func (p *proc) handHolder() string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%s/%d", p.w.seed, p.name, p.gen)
	return fmt.Sprintf("reconcile@%s/%d.%08x", p.process.Host, p.process.PID, h.Sum32())
}

// noteTakeOver counts a write of p that removed another holder's claim on a record
// whose process p judges abandoned: a takeover (TestSim checks that the default seeds
// reach one).
func (p *proc) noteTakeOver(old, cm *corev1.ConfigMap) {
	v, ok := old.Annotations[store.AnnotationClaim]
	if !ok || !p.reconciles() {
		return
	}
	if _, still := cm.Annotations[store.AnnotationClaim]; still {
		return
	}
	var l store.Lease
	if json.Unmarshal([]byte(v), &l) != nil || l.Holder == p.holderName() || !p.st.Claims().Abandoned(l) {
		return
	}
	p.w.takeovers++
	p.w.logf("%-14s takes over %s/%s from %s, whose process %s/%d has ended", p.name, cm.Namespace, cm.Name, l.Holder, l.Process.Host, l.Process.PID)
}

// TestSim_TakeOver runs seeds of -sim.handreconcile until two of them have taken over the
// claim of an ended process (a few dozen seeds: the path needs a command of alice's
// killed holding a claim over no call in flight, then her run of reconcile by hand while
// that claim is live), and fails if none of the first 600 has, or if a seed fails.
func TestSim_TakeOver(t *testing.T) {
	if *firstSeed != 0 || *seeds != 0 {
		t.Skip("a run of chosen seeds")
	}
	was := *handReconcileFlag
	*handReconcileFlag = true
	defer func() { *handReconcileFlag = was }()
	var tookOver []uint64
	for seed, w := range runSeeds(1, 600) {
		if len(w.failures) > 0 {
			t.Errorf("-sim.handreconcile, seed %d: %s\nreplay: %s\n%s", seed, w.failures[0], replay("-sim.handreconcile", seed), tail(w.trace, 60))
		}
		if w.takeovers > 0 {
			if tookOver = append(tookOver, seed); len(tookOver) == 2 {
				break
			}
		}
	}
	t.Logf("seeds that took over the claim of an ended process: %v", tookOver)
	if len(tookOver) == 0 {
		t.Errorf("no seed of 600 took over the claim of a process that ended")
	}
}
