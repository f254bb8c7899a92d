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

// The broker's work on a send no one saw answered is timed like another holder's claim:
// from this process's first sight of the send, on its monotonic clock, whatever the
// sender's stamp and this host's wall clock say; a new send of the record starts again;
// a send whose grace ran out more than MaxClockSkew ago by this host's wall clock is over
// (a process living shorter than the grace); the clock-skew test knob backdates a first
// sight of a send whose grace this clock has passed.
func TestClaims_WorkLeft_TimedFromFirstSightOnTheMonotonicClock(t *testing.T) {
	const grace = 10 * time.Minute
	sim := storetest.SampleTime().Time
	var skew time.Duration
	start := sim
	c := storetest.NewCluster().Store(store.WithClock(func() time.Time { return sim.Add(skew) }),
		store.WithMonotonicClock(func() time.Duration { return sim.Sub(start) })).Claims()
	ref := store.ClaimRef{Namespace: "dev", Name: "db"}
	sentAt := sim.Add(-2 * time.Minute) // by the sender's clock

	assert.Equal(t, c.WorkLeft(ref, "send", "r1@1", sentAt.Add(grace), grace), grace, "first seen now: the full grace")
	sim = sim.Add(4 * time.Minute)
	for _, s := range []time.Duration{0, 7 * time.Minute, -7 * time.Minute} {
		skew = s
		assert.Equal(t, c.WorkLeft(ref, "send", "r1@1", sentAt.Add(grace), grace), 6*time.Minute, "with the wall clock %s off", s)
	}
	assert.Equal(t, c.WorkLeft(ref, "send", "r1@2", sentAt.Add(grace), grace), grace, "a new send starts again")
	sim = sim.Add(grace)
	assert.Equal(t, c.WorkLeft(ref, "send", "r1@2", sentAt.Add(grace), grace), time.Duration(0))

	skew = 0
	assert.Equal(t, c.WorkLeft(ref, "send", "r2@1", sim.Add(-store.MaxClockSkew-time.Second), grace), time.Duration(0),
		"a send whose grace ran out more than MaxClockSkew ago")
	assert.Equal(t, c.WorkLeft(ref, "send", "r2@2", sim.Add(-store.MaxClockSkew+time.Minute), grace), grace)

	knob := storetest.NewCluster().Store(store.WithClock(func() time.Time { return sim.Add(3 * time.Minute) }),
		store.WithClaimsSeenEarlier(3*time.Minute)).Claims()
	assert.Equal(t, knob.WorkLeft(ref, "send", "r3@1", sim, grace), grace-3*time.Minute, "the knob's clock has passed the grace: seen 3 minutes already")
	assert.Equal(t, knob.WorkLeft(ref, "send", "r3@2", sim.Add(time.Minute), time.Minute), time.Duration(0), "a grace of a minute, passed by the knob's clock")
	assert.Equal(t, knob.WorkLeft(ref, "send", "r3@3", sim.Add(grace), grace), grace, "the knob's clock has not passed this one's grace")
}
