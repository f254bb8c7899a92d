package shard

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func keys(n int) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{fmt.Sprintf("team-%d", i%37), fmt.Sprintf("db-%d", i)}
	}
	return out
}

func owners(a Assignment, ks [][2]string) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = a.Owner(k[0], k[1])
	}
	return out
}

func TestAssignment_AJoinerTakesAboutItsShareFromEachAndNothingElseMoves(t *testing.T) {
	ks := keys(10000)
	before := owners(NewAssignment("a", []string{"a", "b", "c"}), ks)
	share := map[string]int{}
	for _, o := range before {
		share[o]++
	}
	for _, m := range []string{"a", "b", "c"} {
		assert.Assert(t, math.Abs(float64(share[m])-10000.0/3) < 10000.0/3*0.1, "share of %s: %d", m, share[m])
	}
	after := owners(NewAssignment("a", []string{"a", "b", "c", "d"}), ks)
	moved := 0
	for i := range ks {
		if before[i] != after[i] {
			moved++
			assert.Equal(t, after[i], "d", "key %v moved from %s to %s, not to the joiner", ks[i], before[i], after[i])
		}
	}
	// About 1/4 of the keys move, all to the joiner.
	assert.Assert(t, math.Abs(float64(moved)-2500) < 250, "moved %d of 10000", moved)
}

func TestAssignment_ALeaversShareAloneMoves(t *testing.T) {
	ks := keys(10000)
	before := owners(NewAssignment("a", []string{"a", "b", "c", "d"}), ks)
	after := owners(NewAssignment("a", []string{"a", "c", "d"}), ks)
	moved, hadB := 0, 0
	for i := range ks {
		if before[i] == "b" {
			hadB++
			assert.Assert(t, after[i] != "b")
			continue
		}
		if before[i] != after[i] {
			moved++
		}
	}
	assert.Equal(t, moved, 0, "keys of members that stayed moved")
	assert.Assert(t, math.Abs(float64(hadB)-2500) < 250, "b had %d of 10000", hadB)
}

func TestAssignment_SelfIsAlwaysAMemberAndAloneOwnsAll(t *testing.T) {
	a := NewAssignment("me", nil)
	assert.DeepEqual(t, a.Members, []string{"me"})
	assert.Assert(t, a.Owns("x", "y"))
	a = NewAssignment("me", []string{"b", "me", "b"})
	assert.DeepEqual(t, a.Members, []string{"b", "me"})
}

func lease(group, name, holder string, renew time.Time, secs int32) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: storetest.CatalogNamespace, Labels: map[string]string{LabelShardGroup: group}}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	if !renew.IsZero() {
		l.Spec.RenewTime = &metav1.MicroTime{Time: renew}
	}
	if secs != 0 {
		l.Spec.LeaseDurationSeconds = ptr.To(secs)
	}
	return l
}

func TestMembersOf(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	leases := []coordinationv1.Lease{
		lease("g", "g-live", "live", now.Add(-5*time.Second), 15),
		lease("g", "g-expired", "expired", now.Add(-16*time.Second), 15),
		lease("g", "g-x", "", now, 15),
		lease("g", "g-wrong", "someone", now, 15),
		lease("g", "g-norenew", "norenew", time.Time{}, 15),
		lease("g", "g-zero", "zero", now, 0),
		lease("g", "g-long", "long", now, 7200),
		lease("g", "g-future", "future", now.Add(time.Hour), 15),
		lease("other", "other-live", "live", now, 15),
	}
	got := map[string]Member{}
	for _, m := range MembersOf("g", leases, now) {
		got[m.Lease] = m
	}
	assert.Equal(t, len(got), 8, "the other group's Lease is not a member")
	assert.Assert(t, got["g-live"].Live && got["g-live"].Malformed == "")
	assert.Assert(t, !got["g-expired"].Live && got["g-expired"].Malformed == "")
	for name, want := range map[string]string{
		"g-x": "no holderIdentity", "g-wrong": `its name is not "g-someone"`, "g-norenew": "no renewTime",
		"g-zero": "leaseDurationSeconds", "g-long": "leaseDurationSeconds", "g-future": "in the future",
	} {
		assert.Assert(t, !got[name].Live, name)
		assert.Assert(t, is.Contains(got[name].Malformed, want), name)
	}
}

func newGroup(core *fake.Clientset, name, id string, clock func() time.Time) *Group {
	return &Group{Name: name, ID: id, LeaseDuration: 15 * time.Second, Now: clock,
		Leases: core.CoordinationV1().Leases(storetest.CatalogNamespace)}
}

func TestGroup_RenewListLeave(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	a, b := newGroup(core, "g", "a", clock), newGroup(core, "g", "b", clock)
	other := newGroup(core, "h", "c", clock)
	for _, g := range []*Group{a, b, other} {
		assert.NilError(t, g.Renew(ctx))
	}
	l, err := core.CoordinationV1().Leases(storetest.CatalogNamespace).Get(ctx, "g-a", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, *l.Spec.HolderIdentity, "a")
	assert.Equal(t, *l.Spec.LeaseDurationSeconds, int32(15))
	assert.Equal(t, l.Labels[LabelShardGroup], "g")

	asg, err := a.Assignment(ctx)
	assert.NilError(t, err)
	assert.DeepEqual(t, asg.Members, []string{"a", "b"})

	// b stops renewing: expired 15 s later, while a renews.
	now = now.Add(16 * time.Second)
	assert.NilError(t, a.Renew(ctx))
	members, changed, err := a.List(ctx)
	assert.NilError(t, err)
	assert.Assert(t, changed)
	assert.Equal(t, len(members), 2)
	asg, _ = a.Assignment(ctx)
	assert.DeepEqual(t, asg.Members, []string{"a"})

	// b comes back, then leaves cleanly.
	assert.NilError(t, b.Renew(ctx))
	asg, _ = a.Assignment(ctx)
	assert.DeepEqual(t, asg.Members, []string{"a", "b"})
	assert.NilError(t, b.Leave(ctx))
	assert.NilError(t, b.Leave(ctx), "leaving twice is fine")
	asg, _ = a.Assignment(ctx)
	assert.DeepEqual(t, asg.Members, []string{"a"})
}

func TestGroup_MaintainNoticesAnExpiryAtOnceAndDeletesItsLeaseOnStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	core := fake.NewClientset()
	leases := core.CoordinationV1().Leases(storetest.CatalogNamespace)
	// b renewed just now for one second: it expires long before a's next renewal.
	l := lease("g", "g-b", "b", time.Now(), 1)
	_, err := leases.Create(ctx, &l, metav1.CreateOptions{})
	assert.NilError(t, err)
	a := &Group{Name: "g", ID: "a", LeaseDuration: time.Minute, Leases: leases}
	changed := make(chan time.Time, 10)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		a.Maintain(ctx, func() { changed <- time.Now() })
	}()
	select {
	case at := <-changed:
		assert.Assert(t, at.Sub(start) < 3*time.Second, "noticed after %s", at.Sub(start))
	case <-time.After(10 * time.Second):
		t.Fatal("the expiry of b was not noticed")
	}
	asg, err := a.Assignment(ctx)
	assert.NilError(t, err)
	assert.DeepEqual(t, asg.Members, []string{"a"})
	cancel()
	<-done
	_, err = leases.Get(context.Background(), "g-a", metav1.GetOptions{})
	assert.Assert(t, err != nil, "the Lease of a member that stopped is deleted")
}

func TestValidateGroupName(t *testing.T) {
	assert.NilError(t, ValidateGroupName("catalog-reconcile"))
	for _, bad := range []string{"", "Upper", "a_b", "-a", strings.Repeat("a", MaxGroupName+1)} {
		assert.ErrorContains(t, ValidateGroupName(bad), "--shard-group", bad)
	}
}

func TestNewMemberID_IsDistinctAndAValidLeaseName(t *testing.T) {
	a, b := NewMemberID(), NewMemberID()
	assert.Assert(t, a != b)
	assert.Assert(t, len(LeaseName("g", a)) <= 253)
}

func TestGroup_CollectDeletesOnlyLongExpiredWellFormedLeases(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset()
	leases := core.CoordinationV1().Leases(storetest.CatalogNamespace)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, l := range []coordinationv1.Lease{
		lease("g", "g-dead", "dead", now.Add(-2*time.Minute), 15),
		lease("g", "g-recent", "recent", now.Add(-30*time.Second), 15),
		lease("g", "g-live", "live", now, 15),
		lease("g", "g-bad", "", now.Add(-time.Hour), 15),
	} {
		_, err := leases.Create(ctx, &l, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	a := newGroup(core, "g", "a", func() time.Time { return now })
	members, _, err := a.List(ctx)
	assert.NilError(t, err)
	a.collect(ctx, members)
	list, err := leases.List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	var left []string
	for _, l := range list.Items {
		left = append(left, l.Name)
	}
	assert.DeepEqual(t, left, []string{"g-bad", "g-live", "g-recent"})
}
