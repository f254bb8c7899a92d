package store_test

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestClaim(t *testing.T) {
	const ttl = 30 * time.Second
	tests := []struct {
		name       string
		first      string        // holder of an existing claim, if any
		wait       time.Duration // time passing after the first claim
		holder     string
		stale      bool // claim with a copy read before the first claim
		wantHolder string
		wantErr    string
	}{
		{name: "an unclaimed record is claimed", holder: "bob", wantHolder: "bob"},
		{name: "another holder's live claim refuses", first: "alice", wait: 10 * time.Second, holder: "bob",
			wantErr: `service instance "db" in namespace "dev" is being worked on by "alice" until 2026-12-02T14:00:30Z: ` +
				`wait and retry, or let "kubectl catalog reconcile" finish it`},
		{name: "another holder's expired claim is taken over", first: "alice", wait: 31 * time.Second, holder: "bob",
			wantHolder: "bob"},
		{name: "the holder renews its own claim", first: "alice", wait: 20 * time.Second, holder: "alice",
			wantHolder: "alice"},
		{name: "a record changed since it was read refuses", first: "alice", wait: time.Hour, holder: "bob", stale: true,
			wantErr: `service instance "db" in namespace "dev" changed while claiming it: someone else is working on it`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, st, clk := newCluster(t)
			inst := mustCreateInstance(t, st, "db")
			stale := inst.DeepCopy()
			if tc.first != "" {
				var err error
				inst, err = st.Instances().Claim(ctx, inst, tc.first, ttl)
				assert.NilError(t, err)
			}
			clk.advance(tc.wait)
			if tc.stale {
				inst = stale
			}

			got, err := st.Instances().Claim(ctx, inst, tc.holder, ttl)
			if tc.wantErr != "" {
				assert.Assert(t, store.IsClaimed(err), "%v", err)
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				assert.Check(t, !store.IsConflict(err), "a failed claim is Claimed, not Conflict")
				assert.Check(t, apierrors.IsConflict(err) == tc.stale, "the API conflict is wrapped")
				return
			}
			assert.NilError(t, err)
			lease, ok := store.LeaseOf(got)
			assert.Assert(t, ok)
			assert.Equal(t, lease.Holder, tc.wantHolder)
			assert.Equal(t, lease.ExpiresAt, clk.now().Add(ttl).UTC())
			stored, err := st.Instances().Get(ctx, "dev", "db")
			assert.NilError(t, err)
			assert.DeepEqual(t, stored, got)
		})
	}
}

func TestSetClaim_IsWrittenInOneUpdateWithTheOperation(t *testing.T) {
	ctx := context.Background()
	c, st, clk := newCluster(t)
	inst := mustCreateInstance(t, st, "db")
	c.Core.ClearActions()

	assert.NilError(t, store.SetClaim(inst, "reconcile@node1/7", time.Minute, clk.now()))
	inst.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationProvision, InstanceID: inst.Spec.ExternalID, StartedAt: metav1.NewTime(clk.now())}
	stored, err := st.Instances().Update(ctx, inst)
	assert.NilError(t, err)
	assert.Equal(t, countActions(c, "update", "configmaps"), 1)
	lease, ok := store.LeaseOf(stored)
	assert.Check(t, ok && lease.Holder == "reconcile@node1/7")
	assert.Check(t, stored.Status.InFlight != nil)
}

func TestSetClaim_RoundsTheExpiryUpToTheSecond(t *testing.T) {
	inst := instance("db")
	now := time.Date(2026, 12, 2, 14, 0, 0, 400_000_000, time.FixedZone("CET", 3600))
	assert.NilError(t, store.SetClaim(inst, "me", 10*time.Second, now))
	lease, ok := store.LeaseOf(inst)
	assert.Assert(t, ok)
	assert.Equal(t, lease.ExpiresAt, time.Date(2026, 12, 2, 13, 0, 11, 0, time.UTC))
	assert.Assert(t, is.Contains(inst.Annotations[store.AnnotationClaim], `{"holder":"me","expiresAt":"2026-12-02T13:00:11Z","process":{"host":`))
}

func TestSetClaim_UnreadableClaimCanBeTakenOver(t *testing.T) {
	inst := instance("db")
	inst.Annotations = map[string]string{store.AnnotationClaim: "alice"}
	_, ok := store.LeaseOf(inst)
	assert.Check(t, !ok)
	assert.NilError(t, store.SetClaim(inst, "bob", time.Minute, time.Now()))
}

func TestRelease(t *testing.T) {
	tests := []struct {
		name       string
		claimant   string
		releaser   string
		stale      bool
		wantHolder string // left on the record
		wantWrites int
	}{
		{name: "the holder releases its claim", claimant: "alice", releaser: "alice", wantWrites: 1},
		{name: "another holder's claim is left alone", claimant: "alice", releaser: "bob", wantHolder: "alice"},
		{name: "an unclaimed record is not written", releaser: "bob"},
		{name: "a stale copy is read again and released", claimant: "alice", releaser: "alice", stale: true, wantWrites: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, st, _ := newCluster(t)
			inst := mustCreateInstance(t, st, "db")
			var err error
			if tc.claimant != "" {
				inst, err = st.Instances().Claim(ctx, inst, tc.claimant, time.Minute)
				assert.NilError(t, err)
			}
			if tc.stale { // someone changes the record meanwhile
				other := inst.DeepCopy()
				other.Status.Phase = v1alpha1.PhaseProvisioning
				_, err := st.Instances().Update(ctx, other)
				assert.NilError(t, err)
			}
			c.Core.ClearActions()

			_, err = st.Instances().Release(ctx, inst, tc.releaser)
			assert.NilError(t, err)
			assert.Equal(t, countActions(c, "update", "configmaps"), tc.wantWrites)
			stored, err := st.Instances().Get(ctx, "dev", "db")
			assert.NilError(t, err)
			lease, ok := store.LeaseOf(stored)
			assert.Equal(t, ok, tc.wantHolder != "")
			assert.Equal(t, lease.Holder, tc.wantHolder)
			if tc.stale {
				assert.Equal(t, stored.Status.Phase, v1alpha1.PhaseProvisioning, "the other change is kept")
			}
		})
	}
}

func TestClaim_AnExpiryFurtherThanAnyDriverClaimsIsNotShown_AndHoldsNothing(t *testing.T) {
	ctx := context.Background()
	_, st, clk := newCluster(t)
	inst := mustCreateInstance(t, st, "db")
	const displaySlack = 5 * time.Minute
	for _, tc := range []struct {
		expires time.Time
		shown   bool
	}{
		{time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), false},
		{clk.now().Add(store.MaxClaimTTL + displaySlack + time.Second), false},
		{clk.now().Add(store.MaxClaimTTL + displaySlack), true},
		{clk.now().Add(time.Minute), true},
	} {
		l := store.Lease{Holder: "mallory", ExpiresAt: tc.expires}
		assert.Equal(t, l.Shown(clk.now()), tc.shown, "claim until %s", tc.expires)
	}

	// The record's author writes the annotation: a claim "until 9999", or "for a year",
	// is further ahead than any holder writes a stamp (its duration and the tolerated
	// skew): it holds nothing, and is taken over at once.
	for _, forged := range []string{
		`{"holder":"mallory","expiresAt":"9999-12-31T00:00:00Z"}`,
		`{"holder":"mallory","expiresAt":"9999-12-31T00:00:00Z","seconds":31536000}`,
	} {
		inst.Annotations = map[string]string{store.AnnotationClaim: forged}
		var err error
		inst, err = st.Instances().Update(ctx, inst)
		assert.NilError(t, err)
		got, err := st.Instances().Claim(ctx, inst, "reconcile", 30*time.Second)
		assert.NilError(t, err)
		lease, ok := store.LeaseOf(got)
		assert.Assert(t, ok)
		assert.Equal(t, lease.Holder, "reconcile")
		inst = got
	}
}
