// Package shard is the membership of a shard group of "reconcile --serve" replicas:
// each member's coordination.k8s.io Lease, the live members read from them, and the
// assignment of records to members by rendezvous hashing. It knows nothing of runs.
package shard

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"
)

// Shard groups
//
// Replicas of "reconcile --serve --shard-group NAME" split the records among the live
// members of the group. Each member keeps one coordination.k8s.io/v1 Lease in the
// catalog namespace, named "<group>-<member id>" and labelled LabelShardGroup=<group>,
// whose holderIdentity is the member id; it renews it every LeaseDuration/3. A member
// is live while its Lease's renewTime + leaseDurationSeconds is in the future. A
// record (namespace/name) belongs to the live member with the highest rendezvous
// hash of member id and key: a member joining takes about 1/N of the records from the
// others, a member leaving hands only its own records to the others.
//
// Ownership only decides who takes a record up: the record's claim remains what keeps
// two processes from calling a broker about one record at once. A record whose owner
// does not take it up (a Lease written by someone who runs no reconcile) is taken by
// any member once it has been pending, without a live claim and unchanged, for
// StarvationBound past its due time.

// LabelShardGroup labels the Leases of a shard group with the group's name.
const LabelShardGroup = "catalog.kubectl-catalog.io/shard-group"

// DefaultLeaseDuration is --lease-duration's default.
const DefaultLeaseDuration = 15 * time.Second

// MaxGroupName bounds a group's name: it is a label value and the prefix of its
// members' Lease names.
const MaxGroupName = 40

// maxLeaseDuration: a Lease that claims to last longer is malformed.
const maxLeaseDuration = time.Hour

// ValidateGroupName checks a --shard-group name.
func ValidateGroupName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 || len(name) > MaxGroupName {
		return fmt.Errorf("--shard-group %q: use lowercase letters, digits and '-', starting and ending with a letter or digit, at most %d characters, e.g. catalog-reconcile", name, MaxGroupName)
	}
	return nil
}

// NewMemberID returns a member id for this process: the host name (a pod's name in
// a pod) and a random suffix, so that processes on one host are distinct members.
func NewMemberID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, host)
	host = strings.Trim(host, "-")
	if len(host) > 180 {
		host = strings.Trim(host[:180], "-")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	if host == "" {
		return "member-" + hex.EncodeToString(b[:])
	}
	return host + "-" + hex.EncodeToString(b[:])
}

// LeaseName is the name of member id's Lease in group.
func LeaseName(group, id string) string { return group + "-" + id }

// Member is one Lease of a group as read from the API server.
type Member struct {
	// Lease is the Lease's name.
	Lease string `json:"lease"`
	// ID is its holderIdentity.
	ID        string        `json:"id"`
	RenewTime time.Time     `json:"renewTime,omitzero"`
	Duration  time.Duration `json:"duration,omitempty"`
	// Live: renewTime + leaseDurationSeconds is in the future.
	Live bool `json:"live"`
	// Malformed says why the Lease is ignored ("" when it is not).
	Malformed string `json:"malformed,omitempty"`
	// ResourceVersion is the Lease's.
	ResourceVersion string `json:"-"`
}

// StaleLeaseAfter is how long after it expired a member's Lease is deleted by the live
// members: the Lease of a member that died (a pod's replacement is a new member).
func StaleLeaseAfter(d time.Duration) time.Duration { return max(4*d, time.Minute) }

// Expires is when the member stops being live unless it renews.
func (m Member) Expires() time.Time { return m.RenewTime.Add(m.Duration) }

// MembersOf reads the Leases of group at now: one Member per Lease, sorted by
// Lease name. A Lease without a holder, a renew time or a positive duration (at most
// an hour), one renewed further in the future than its duration, one whose name is
// not "<group>-<holder>", or a second Lease of the same holder, is malformed: never
// live.
func MembersOf(group string, leases []coordinationv1.Lease, now time.Time) []Member {
	out := make([]Member, 0, len(leases))
	seen := map[string]bool{}
	sorted := slices.Clone(leases)
	slices.SortFunc(sorted, func(a, b coordinationv1.Lease) int { return cmp.Compare(a.Name, b.Name) })
	for _, l := range sorted {
		if l.Labels[LabelShardGroup] != group {
			continue
		}
		m := Member{Lease: l.Name, ResourceVersion: l.ResourceVersion}
		s := l.Spec
		if s.HolderIdentity != nil {
			m.ID = *s.HolderIdentity
		}
		if s.RenewTime != nil {
			m.RenewTime = s.RenewTime.Time
		}
		if s.LeaseDurationSeconds != nil {
			m.Duration = time.Duration(*s.LeaseDurationSeconds) * time.Second
		}
		switch {
		case m.ID == "":
			m.Malformed = "no holderIdentity"
		case l.Name != LeaseName(group, m.ID):
			m.Malformed = fmt.Sprintf("its name is not %q", LeaseName(group, m.ID))
		case s.RenewTime == nil:
			m.Malformed = "no renewTime"
		case m.Duration <= 0 || m.Duration > maxLeaseDuration:
			m.Malformed = "leaseDurationSeconds not between 1 and 3600"
		case m.RenewTime.After(now.Add(m.Duration)):
			m.Malformed = "renewTime further in the future than its duration"
		case seen[m.ID]:
			m.Malformed = "a second Lease of the same holder"
		}
		if m.Malformed == "" {
			seen[m.ID] = true
			m.Live = now.Before(m.Expires())
		}
		out = append(out, m)
	}
	return out
}

// Assignment is who owns which record: the live members of a group, by rendezvous
// hashing of member id and "namespace/name".
type Assignment struct {
	// Members are the live members' ids, sorted.
	Members []string
	// Self is this process's member id.
	Self string
}

// NewAssignment is the assignment among members (this process included).
func NewAssignment(self string, members []string) Assignment {
	ms := slices.Clone(members)
	if !slices.Contains(ms, self) {
		ms = append(ms, self)
	}
	slices.Sort(ms)
	return Assignment{Members: slices.Compact(ms), Self: self}
}

// Owner is the member that owns namespace/name.
func (a Assignment) Owner(namespace, name string) string {
	key := namespace + "/" + name
	var best string
	var bestScore uint64
	for _, m := range a.Members {
		if s := score(m, key); best == "" || s > bestScore || s == bestScore && m < best {
			best, bestScore = m, s
		}
	}
	return best
}

// Owns reports whether this process owns namespace/name.
func (a Assignment) Owns(namespace, name string) bool {
	return len(a.Members) <= 1 || a.Owner(namespace, name) == a.Self
}

// score is the rendezvous weight of member for key: FNV-1a of both, mixed so that
// keys and members that differ in one byte spread evenly.
func score(member, key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	x := h.Sum64()
	// splitmix64's finalizer
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Group is this process's membership of a shard group: its Lease, and what it knows
// of the others'.
type Group struct {
	// Name is the group's name (--shard-group).
	Name string
	// ID is this member's id: its Lease's holderIdentity.
	ID string
	// LeaseDuration is how long the Lease lasts unrenewed; renewed every third of it.
	LeaseDuration time.Duration
	// Leases are the Leases of the catalog namespace.
	Leases coordclient.LeaseInterface
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logf reports the Lease failing and the members changing.
	Logf func(format string, args ...any)

	mu sync.Mutex
	// live is the last set of live members seen (comma-joined), members what was read.
	live    string
	members []Member
	listed  bool
	// seen tracks the records of other members' shares that have work and no live
	// claim, for the starvation bound.
	seen map[string]seenRecord
}

type seenRecord struct {
	rv    string
	since time.Time
}

func (g *Group) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Group) logf(format string, args ...any) {
	if g.Logf != nil {
		g.Logf(format, args...)
	}
}

// Duration is how long the Lease lasts unrenewed: LeaseDuration, or its default.
func (g *Group) Duration() time.Duration { return cmp.Or(g.LeaseDuration, DefaultLeaseDuration) }

// StarvationBound is how long after its due time a record of another member's share
// that has work, no live claim and no change is taken by this member: three lease
// durations, and never less than two serve intervals (interval), the longest a live
// owner may take to start a run that takes it up.
func (g *Group) StarvationBound(interval time.Duration) time.Duration {
	return max(3*g.Duration(), 2*interval)
}

// Renew creates or renews this member's Lease.
func (g *Group) Renew(ctx context.Context) error {
	name := LeaseName(g.Name, g.ID)
	now := metav1.NewMicroTime(g.now())
	secs := int32(max(g.Duration()/time.Second, 1))
	cur, err := g.Leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = g.Leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				LabelShardGroup:                g.Name,
				"app.kubernetes.io/managed-by": "kubectl-catalog",
				"app.kubernetes.io/component":  "reconcile",
			}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(g.ID), LeaseDurationSeconds: ptr.To(secs), AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cannot create Lease %s of shard group %s: %w", name, g.Name, err)
		}
		cur, err = g.Leases.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("cannot read Lease %s of shard group %s: %w", name, g.Name, err)
	}
	if h := cur.Spec.HolderIdentity; h != nil && *h != g.ID {
		return fmt.Errorf("Lease %s of shard group %s is held by %q, not by this member", name, g.Name, *h)
	}
	cur = cur.DeepCopy()
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[LabelShardGroup] = g.Name
	cur.Spec.HolderIdentity, cur.Spec.LeaseDurationSeconds, cur.Spec.RenewTime = ptr.To(g.ID), ptr.To(secs), &now
	if _, err := g.Leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("cannot renew Lease %s of shard group %s: %w", name, g.Name, err)
	}
	return nil
}

// Leave deletes this member's Lease, so that the others take its records at once.
func (g *Group) Leave(ctx context.Context) error {
	err := g.Leases.Delete(ctx, LeaseName(g.Name, g.ID), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// List reads the group's Leases and returns its members. It records the live ones,
// and reports whether they changed since the last List.
func (g *Group) List(ctx context.Context) ([]Member, bool, error) {
	list, err := g.Leases.List(ctx, metav1.ListOptions{LabelSelector: LabelShardGroup + "=" + g.Name})
	if err != nil {
		return nil, false, fmt.Errorf("cannot list the Leases of shard group %s: %w", g.Name, err)
	}
	members := MembersOf(g.Name, list.Items, g.now())
	live := strings.Join(NewAssignment(g.ID, liveIDs(members)).Members, ",")
	g.mu.Lock()
	defer g.mu.Unlock()
	changed := g.listed && live != g.live
	g.live, g.members, g.listed = live, members, true
	return members, changed, nil
}

func liveIDs(members []Member) []string {
	var ids []string
	for _, m := range members {
		if m.Live {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// Assignment lists the members and returns the assignment among the live ones (this
// member always among them). When the Leases cannot be listed, the last members seen
// are used, and the error is returned with them.
func (g *Group) Assignment(ctx context.Context) (Assignment, error) {
	members, _, err := g.List(ctx)
	if err != nil {
		g.mu.Lock()
		members = g.members
		g.mu.Unlock()
		// The last members seen are kept, minus those expired since.
		now := g.now()
		members = slices.Clone(members)
		for i := range members {
			members[i].Live = members[i].Malformed == "" && now.Before(members[i].Expires())
		}
	}
	return NewAssignment(g.ID, liveIDs(members)), err
}

// Maintain keeps this member's Lease until ctx is done, then deletes it. It renews
// the Lease every LeaseDuration/3, lists the group as often and when a member's Lease
// is due to expire, and calls changed when the live members change. Errors are
// logged, not returned: the Lease is retried at the next tick.
func (g *Group) Maintain(ctx context.Context, changed func()) {
	every := g.Duration() / 3
	var nextRenew time.Time
	failing := false
	for ctx.Err() == nil {
		now := g.now()
		if !now.Before(nextRenew) {
			rctx, cancel := context.WithTimeout(ctx, every)
			err := g.Renew(rctx)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				if !failing {
					g.logf("shard group %s: %v; retrying every %s", g.Name, err, every)
				}
				failing = true
				nextRenew = now.Add(min(every, time.Second))
			case err == nil:
				if failing {
					g.logf("shard group %s: Lease %s renewed again", g.Name, LeaseName(g.Name, g.ID))
				}
				failing = false
				nextRenew = now.Add(every)
			}
		}
		wake := nextRenew
		lctx, cancel := context.WithTimeout(ctx, every)
		members, moved, err := g.List(lctx)
		cancel()
		if err == nil {
			if moved {
				g.logf("shard group %s: live members now %s", g.Name, strings.Join(NewAssignment(g.ID, liveIDs(members)).Members, ", "))
				changed()
			}
			g.collect(ctx, members)
			// A member whose Lease expires before the next renewal is noticed when it
			// does, not up to a third of a lease duration later.
			for _, m := range members {
				if m.Live && m.ID != g.ID {
					if exp := m.Expires().Add(100 * time.Millisecond); exp.Before(wake) {
						wake = exp
					}
				}
			}
		}
		t := time.NewTimer(max(wake.Sub(g.now()), 50*time.Millisecond))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := g.Leave(dctx); err != nil {
		g.logf("shard group %s: cannot delete Lease %s (the others take its records once it expires): %v", g.Name, LeaseName(g.Name, g.ID), err)
	}
}

// collect deletes the Leases of members that expired more than StaleLeaseAfter ago
// (unless renewed since they were listed). Malformed Leases are left alone: they are
// ignored, and someone may be looking at them.
func (g *Group) collect(ctx context.Context, members []Member) {
	now := g.now()
	for _, m := range members {
		if m.Malformed != "" || m.Live || m.ID == g.ID || now.Sub(m.Expires()) < StaleLeaseAfter(m.Duration) {
			continue
		}
		rv := m.ResourceVersion
		err := g.Leases.Delete(ctx, m.Lease, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err == nil {
			g.logf("shard group %s: deleted Lease %s of member %s, expired %s ago", g.Name, m.Lease, m.ID, now.Sub(m.Expires()).Round(time.Second))
		}
	}
}

// Starved reports whether a record of another member's share, listed with work and
// resourceVersion rv and no live claim, has been so, unchanged, for bound: it is then
// taken up (its due time is checked when it is read). A record seen claimed, or
// changed, starts over.
func (g *Group) Starved(key, rv string, claimed bool, bound time.Duration, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]seenRecord{}
	}
	if claimed {
		delete(g.seen, key)
		return false
	}
	s, ok := g.seen[key]
	if !ok || s.rv != rv {
		g.seen[key] = seenRecord{rv: rv, since: now}
		return false
	}
	return now.Sub(s.since) >= bound
}

// Forget drops the records not seen in the last listing (keys), so that the map does
// not grow with records that are gone or were taken up.
func (g *Group) Forget(keep map[string]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.seen {
		if !keep[k] {
			delete(g.seen, k)
		}
	}
}
