package reconcile

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func newGroup(core kubernetes.Interface, name, id string, clock func() time.Time) *shard.Group {
	return &shard.Group{Name: name, ID: id, LeaseDuration: 15 * time.Second, Now: clock,
		Leases: core.CoordinationV1().Leases(storetest.CatalogNamespace)}
}

func TestRun_ShardGroupSplitsWithoutOverlap(t *testing.T) {
	f := newFixture(t)
	for i := range 30 {
		f.instance(fmt.Sprintf("db-%d", i))
	}
	clock := func() time.Time { return f.now }
	var groups []*shard.Group
	for _, id := range []string{"a", "b", "c"} {
		g := newGroup(f.cluster.Core, "g", id, clock)
		assert.NilError(t, g.Renew(context.Background()))
		groups = append(groups, g)
	}
	seen := map[string]int{}
	for _, g := range groups {
		sum := f.run(Options{Group: g, DryRun: true})
		assert.Assert(t, sum.Group != nil)
		assert.DeepEqual(t, sum.Group.Members, []string{"a", "b", "c"})
		assert.Equal(t, sum.Group.Listed, 30)
		assert.Equal(t, sum.Group.Owned, len(sum.Items))
		assert.Assert(t, len(sum.Items) > 0 && len(sum.Items) < 30, "%s took %d", g.ID, len(sum.Items))
		for _, it := range sum.Items {
			seen[it.Name]++
		}
	}
	assert.Equal(t, len(seen), 30)
	for name, n := range seen {
		assert.Equal(t, n, 1, name)
	}
}
func TestRun_AStarvedRecordOfAnotherMemberIsTakenUpPastTheBound(t *testing.T) {
	f := newFixture(t)
	clock := func() time.Time { return f.now }
	a := newGroup(f.cluster.Core, "g", "a", clock)
	forged := newGroup(f.cluster.Core, "g", "forged", clock)
	forged.LeaseDuration = time.Hour // renewed "forever" by someone who never works
	assert.NilError(t, a.Renew(context.Background()))
	assert.NilError(t, forged.Renew(context.Background()))
	asg := shard.NewAssignment("a", []string{"a", "forged"})
	name := ""
	for i := 0; name == ""; i++ {
		if n := fmt.Sprintf("db-%d", i); asg.Owner(ns, n) == "forged" {
			name = n
		}
	}
	f.instance(name)
	bound := a.StarvationBound(0)
	assert.Equal(t, bound, 45*time.Second)
	runA := func() Summary {
		assert.NilError(t, a.Renew(context.Background()))
		return f.run(Options{Group: a, StarvationBound: bound})
	}
	sum := runA()
	assert.Equal(t, len(sum.Items), 0, "another member's record is not taken at first")
	f.now = f.now.Add(bound - time.Second)
	sum = runA()
	assert.Equal(t, len(sum.Items), 0, "nor before the bound")
	assert.Equal(t, sum.Group.Listed, 1)

	// A live claim by someone else holds it off, and starts the count over.
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, name, func(x *v1alpha1.ServiceInstance) error {
		return store.SetClaim(x, "someone", time.Minute, f.now)
	})
	assert.NilError(t, err)
	f.now = f.now.Add(2 * time.Second)
	sum = runA()
	assert.Equal(t, len(sum.Items), 0, "a claimed record is left to its claim")
	f.now = f.now.Add(time.Minute)
	sum = runA()
	assert.Equal(t, len(sum.Items), 0, "the count starts over once the claim lapses")
	f.now = f.now.Add(bound)
	sum = runA()
	assert.Equal(t, len(sum.Items), 1, "%+v", sum)
	assert.Equal(t, sum.Items[0].Outcome, Done)
	assert.Equal(t, sum.Group.TakenOver, 1)
	assert.Equal(t, sum.Group.Owned, 1)
}
