package sim

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Shard groups in the simulation (-sim.shards): the reconcile replicas are members of
// one shard group, as "reconcile --serve --shard-group" runs them. Each renews its
// Lease in the catalog namespace before every run (with its own clock, skewed as the
// seed says) and its run drives only its share of the records, as the group's Leases
// say at the run's start, plus the records of other members' shares that starved (the
// real reconcile.Options.Group). A killed or stopped replica restarts as a new member;
// the Lease of the one it replaces is left to go stale, so its share is taken over only
// once the others see that Lease expire, or the records starve. Every invariant holds
// as in the other worlds: a record two members count as theirs (their clocks differ, a
// member died) is still driven by one at a time, by the records' claims.
var shardGroups = flag.Bool("sim.shards", false, "run the reconcile replicas as members of one shard group (--shard-group): their Leases divide the records among them")

// memberLease is how long a member's Lease lasts unrenewed in the simulation: a run
// (at most 30 s with --serve) renews it once, before it starts.
const memberLease = 2 * time.Minute

// shardGroup is the reconcile process's membership of the simulation's shard group
// (nil without -sim.shards): one member per process lifetime.
func (p *proc) shardGroup() *shard.Group {
	if !*shardGroups || p.kind != reconciler {
		return nil
	}
	if p.group == nil || p.groupGen != p.gen {
		h := fnv.New32a()
		fmt.Fprintf(h, "member/%d/%s/%d", p.w.seed, p.name, p.gen)
		p.group = &shard.Group{
			Name: p.groupName(), ID: fmt.Sprintf("%s-%08x", p.name, h.Sum32()), LeaseDuration: memberLease,
			Leases: p.w.cluster.Core.CoordinationV1().Leases(storetest.CatalogNamespace),
			Now:    p.now,
			Logf: func(format string, args ...any) {
				p.w.logf("%-14s shard group: %s", p.name, firstLine(fmt.Sprintf(format, args...)))
			},
		}
		p.groupGen = p.gen
	}
	return p.group
}

// joinGroup renews the process's Lease before a run and returns the group the run
// takes its share from (nil without -sim.shards). A Lease that cannot be renewed leaves
// the run to the other members: it is not made.
func (p *proc) joinGroup(ctx context.Context) (*shard.Group, error) {
	g := p.shardGroup()
	if g == nil {
		return nil, nil
	}
	if err := g.Renew(ctx); err != nil {
		return nil, err
	}
	p.w.logf("%-14s renewed Lease %s", p.name, shard.LeaseName(g.Name, g.ID))
	return g, nil
}
