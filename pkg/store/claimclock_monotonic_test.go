package store_test

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// A process whose wall clock is set forward while it watches another holder's claim
// (an administrator's date, a step of NTP) still times the claim by its monotonic
// clock: with WithMonotonicClock, the jump does not make the claim expire early, and
// the claim expires once it has been seen unchanged for its duration on that clock.
func TestClaims_WallClockSetForward_MonotonicClockTimesTheClaim(t *testing.T) {
	const ttl = 2 * time.Minute
	ctx := context.Background()
	sim := storetest.SampleTime().Time // the true time
	var skew time.Duration
	cluster := storetest.NewCluster()
	cluster.SetClock(func() time.Time { return sim })
	a := cluster.Store(store.WithClock(func() time.Time { return sim }))
	start := sim
	b := cluster.Store(store.WithClock(func() time.Time { return sim.Add(skew) }),
		store.WithMonotonicClock(func() time.Duration { return sim.Sub(start) }))
	inst := mustCreateInstance(t, a, "db")
	inst, err := a.Instances().Claim(ctx, inst, "a", ttl)
	assert.NilError(t, err)
	l, _ := store.LeaseOf(inst)
	ref := store.RefOf(inst)

	assert.Equal(t, b.Claims().Left(ref, l), ttl) // first seen now
	sim = sim.Add(20 * time.Second)
	for _, jump := range []time.Duration{5 * time.Minute, -5 * time.Minute, 7*time.Minute + 30*time.Second} {
		skew = jump
		assert.Equal(t, b.Claims().Left(ref, l), ttl-20*time.Second, "with the wall clock %s off", jump)
	}
	seen, err := b.Instances().Get(ctx, "dev", "db")
	assert.NilError(t, err)
	_, err = b.Instances().Claim(ctx, seen, "b", ttl)
	assert.Assert(t, store.IsClaimed(err), "a wall clock set forward took over a live claim: %v", err)

	sim = start.Add(ttl)
	assert.Equal(t, b.Claims().Left(ref, l), time.Duration(0))
	_, err = b.Instances().Claim(ctx, seen, "b", ttl)
	assert.NilError(t, err)
}
