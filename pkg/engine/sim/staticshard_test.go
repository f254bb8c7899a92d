package sim

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
)

// Static shards in the simulation (-sim.staticshard, and one seed in eight): the
// reconcile replicas run "reconcile --shard i/n", one replica per shard (reconcile-1
// --shard 0/2, reconcile-2 --shard 1/2), as the CronJobs or Deployments of "reconcile
// install --shards 2" do. Killed or stopped, a replica comes back with the same shard.
// At quiescence each shard's replica runs in turn, so that every record is finished by
// its own shard. With -sim.shards too, each static shard's replicas form a shard group
// of their own (one group per shard's Deployment).
//
// Checked as each step starts: the record stepped is of the replica's shard, by the
// simulation's own hash of namespace/name (FNV-1a, as docs/engine.md states the shard
// function; not reconcile.Shard.Owns, which is what is under test), and no record is
// ever stepped by two shards. At quiescence, every record of each shard is settled by
// that shard's replica (settled, as every world checks), which a quiescence running one
// shard only cannot reach.
var staticShards = flag.Bool("sim.staticshard", false, "run the reconcile replicas with a static --shard i/n each (one replica per shard), and check that no record is stepped outside its shard")

// withStaticShards reports whether a seed runs its replicas with static shards: one
// seed in eight, or every seed with -sim.staticshard.
func withStaticShards(seed uint64) bool {
	r := rand.New(rand.NewPCG(seed^0x082efa98ec4e6c89, seed))
	return r.IntN(8) == 0 || *staticShards
}

// staticShard is the --shard of reconcile process p: its place among the world's
// reconcile processes (the zero Shard, every record, without static shards).
func (p *proc) staticShard() reconcile.Shard {
	if !p.w.staticShardsOn || p.kind != reconciler {
		return reconcile.Shard{}
	}
	var s reconcile.Shard
	for _, q := range p.w.procs {
		if q.kind != reconciler {
			continue
		}
		if q == p {
			s.I = s.N
		}
		s.N++
	}
	return s
}

// shardOf is the shard of n that namespace/name falls in, computed by the simulation
// itself: FNV-1a of "namespace/name", modulo n.
func shardOf(namespace, name string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace + "/" + name))
	return int(h.Sum32() % uint32(n))
}

// inShard reports whether the record namespace/name is p's to step (always, without
// static shards).
func (p *proc) inShard(namespace, name string) bool {
	s := p.staticShard()
	return s.N <= 1 || shardOf(namespace, name, s.N) == s.I
}

// checkShard is checked as a reconcile step starts on ref: the record is of the
// replica's static shard, and no other shard ever stepped it.
func (p *proc) checkShard(ref reconcile.Ref) {
	s := p.staticShard()
	if s.N <= 1 {
		return
	}
	w := p.w
	if !p.inShard(ref.Namespace, ref.Name) {
		w.fail("%s (--shard %s) steps %s, which is shard %d/%d's", p.name, s, ref, shardOf(ref.Namespace, ref.Name, s.N), s.N)
	}
	key := ref.String()
	if w.steppedBy == nil {
		w.steppedBy = map[string]int{}
	}
	if i, ok := w.steppedBy[key]; ok && i != s.I {
		w.fail("%s is stepped by two shards: %d/%d and now %s (%s)", ref, i, s.N, s, p.name)
	}
	w.steppedBy[key] = s.I
}

// quiescers are the reconcile processes the quiescence runs, each in turn: the last
// replica, or with static shards one of each shard.
func (w *world) quiescers() []*proc {
	var rs []*proc
	for _, p := range w.procs {
		if p.kind == reconciler {
			rs = append(rs, p)
		}
	}
	if w.staticShardsOn {
		return rs
	}
	return rs[len(rs)-1:]
}

// groupName is the shard group of p's replicas: one group, or with static shards one
// group per static shard.
func (p *proc) groupName() string {
	if s := p.staticShard(); s.N > 1 {
		return fmt.Sprintf("sim-%d", s.I)
	}
	return "sim"
}
