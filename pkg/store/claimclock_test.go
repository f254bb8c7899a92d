package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Two drivers of one record whose wall clocks are ten minutes apart, either way: the
// claim of the one is judged by the other on its own clock, from what it saw. While the
// holder renews, the other never takes the record over (no second request for it);
// once the holder stops (it died), the other takes it over one claim duration after the
// last renewal it saw, and a process started only then waits the full duration from its
// first sight of the claim.
func TestClaims_ClocksTenMinutesApart_NoDoubleTakeOver_ADeadHoldersClaimIsTakenAfterItsDuration(t *testing.T) {
	const ttl = 2 * time.Minute
	const tick = 5 * time.Second
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute, 0} {
		t.Run(fmt.Sprintf("other clock %s", skew), func(t *testing.T) {
			ctx := context.Background()
			sim := storetest.SampleTime().Time // the true time
			clockA := func() time.Time { return sim }
			clockB := func() time.Time { return sim.Add(skew) }
			cluster := storetest.NewCluster()
			cluster.SetClock(clockA)
			a := cluster.Store(store.WithClock(clockA))
			b := cluster.Store(store.WithClock(clockB))
			inst := mustCreateInstance(t, a, "db")
			inst, err := a.Instances().Claim(ctx, inst, "a", ttl)
			assert.NilError(t, err)

			// Half an hour of a holder that renews its claim when a third of it has run,
			// as a driver does during a long call, by its own count.
			lastRenewal := sim
			for end := sim.Add(30 * time.Minute); sim.Before(end); sim = sim.Add(tick) {
				l, _ := store.LeaseOf(inst)
				if a.Claims().OwnLeft(store.RefOf(inst), l) <= ttl*2/3 {
					inst, err = a.Instances().Claim(ctx, inst, "a", ttl)
					assert.NilError(t, err)
					lastRenewal = sim
				}
				seen, err := b.Instances().Get(ctx, "dev", "db")
				assert.NilError(t, err)
				_, err = b.Instances().Claim(ctx, seen, "b", ttl)
				assert.Assert(t, store.IsClaimed(err), "at %s (%s after the last renewal) the other driver took over a claim being renewed: %v",
					sim.Sub(storetest.SampleTime().Time), sim.Sub(lastRenewal), err)
			}

			// The holder dies. A process that starts half a claim later has never seen
			// the claim: it waits its full duration from then.
			died := lastRenewal
			var c *store.Store
			var expiredForB, expiredForC time.Time
			for ; expiredForB.IsZero() || expiredForC.IsZero(); sim = sim.Add(tick) {
				assert.Assert(t, sim.Before(died.Add(10*time.Minute)), "the dead holder's claim is never taken over")
				if c == nil && !sim.Before(died.Add(ttl/2)) {
					c = cluster.Store(store.WithClock(clockB))
				}
				// Each tries a claim as a dry run: the API server checks it, nothing is
				// stored, so both observers' turns are seen.
				dry := store.WithDryRun(ctx)
				seen, err := b.Instances().Get(ctx, "dev", "db")
				assert.NilError(t, err)
				if _, err := b.Instances().Claim(dry, seen, "b", ttl); expiredForB.IsZero() && err == nil {
					expiredForB = sim
				}
				if c != nil {
					if _, err := c.Instances().Claim(dry, seen, "c", ttl); expiredForC.IsZero() && err == nil {
						expiredForC = sim
					}
				}
			}
			seen, err := b.Instances().Get(ctx, "dev", "db")
			assert.NilError(t, err)
			_, err = b.Instances().Claim(ctx, seen, "b", ttl)
			assert.NilError(t, err, "the dead holder's claim is taken over")
			takenByB, takenByC := expiredForB, expiredForC
			assert.Assert(t, !takenByB.Before(died.Add(ttl)), "taken over %s after the last renewal, before the claim's duration", takenByB.Sub(died))
			assert.Assert(t, takenByB.Before(died.Add(ttl+2*tick)), "taken over only %s after the last renewal", takenByB.Sub(died))
			started := died.Add(ttl / 2)
			assert.Assert(t, !takenByC.Before(started.Add(ttl)), "a process started %s after the last renewal took over %s after it", started.Sub(died), takenByC.Sub(died))
			assert.Assert(t, takenByC.Before(started.Add(ttl+2*tick)))
		})
	}
}

// A process that lives shorter than a claim (a run of the CronJob) takes over the claim
// of a holder that died long ago: one whose stamp ran out more than MaxClockSkew ago by
// its wall clock. A stamp that ran out less long ago is watched for its full duration.
func TestClaims_AShortLivedProcess_TakesOverAClaimThatRanOutLongAgo(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		ranOut time.Duration // how long before the process starts the claim's stamp ran out
		live   bool
	}{
		{store.MaxClockSkew + time.Second, false},
		{store.MaxClockSkew - time.Second, true},
		{10 * time.Minute, true},
	} {
		t.Run(tc.ranOut.String(), func(t *testing.T) {
			sim := storetest.SampleTime().Time
			clk := func() time.Time { return sim }
			cluster := storetest.NewCluster()
			cluster.SetClock(clk)
			dead := cluster.Store(store.WithClock(clk))
			inst := mustCreateInstance(t, dead, "db")
			_, err := dead.Instances().Claim(ctx, inst, "dead", 2*time.Minute)
			assert.NilError(t, err)
			sim = sim.Add(2*time.Minute + tc.ranOut)

			fresh := cluster.Store(store.WithClock(clk))
			seen, err := fresh.Instances().Get(ctx, "dev", "db")
			assert.NilError(t, err)
			_, err = fresh.Instances().Claim(store.WithDryRun(ctx), seen, "fresh", 2*time.Minute)
			assert.Equal(t, store.IsClaimed(err), tc.live, "%v", err)
		})
	}
}

// The clock-skew test knob: a process whose clock is set ahead counts a claim whose stamp
// its clock has passed (one written by a process with a true clock) as watched that
// long already, and judges the claims of processes whose clocks are set alike as usual.
func TestClaims_SeenEarlierKnob_OnlyForClaimsWhoseStampTheClockPassed(t *testing.T) {
	ctx := context.Background()
	sim := storetest.SampleTime().Time
	trueClock := func() time.Time { return sim }
	ahead := func() time.Time { return sim.Add(3 * time.Minute) }
	cluster := storetest.NewCluster()
	cluster.SetClock(trueClock)
	for _, tc := range []struct {
		writer func() time.Time
		live   bool
	}{{trueClock, false}, {ahead, true}} {
		writer := cluster.Store(store.WithClock(tc.writer))
		inst := mustCreateInstance(t, writer, fmt.Sprintf("db-%v", tc.live))
		_, err := writer.Instances().Claim(ctx, inst, "writer", 2*time.Minute)
		assert.NilError(t, err)

		reader := cluster.Store(store.WithClock(ahead), store.WithClaimsSeenEarlier(3*time.Minute))
		seen, err := reader.Instances().Get(ctx, "dev", inst.Name)
		assert.NilError(t, err)
		_, err = reader.Instances().Claim(store.WithDryRun(ctx), seen, "reader", 2*time.Minute)
		assert.Equal(t, store.IsClaimed(err), tc.live, "%v", err)
	}
}
