package store

import (
	"encoding/json"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Claims judge claims by what this process saw of them, never by comparing a claim's
// expiry stamp with this host's wall clock (which may be minutes off the writer's): a
// claim of another holder is live until this process has seen it unchanged (same
// holder, same renewal stamp) for the claim's duration on its own monotonic clock, as
// client-go's leader election judges a lease. A process that has just started and never
// saw the claim before waits the full duration from its first sight of it. A claim this
// process wrote is timed from the start of the write that stored it, which is no later
// than anyone else's first sight of it: so this process always counts its own claim as
// running out no later than any other process does, whatever the clocks say.
//
// One bounded exception lets a process that lives shorter than a claim (a run of the
// installed CronJob, a command) take over the claim of a holder that died long ago: a
// claim whose expiry stamp lies more than MaxClockSkew behind this process's wall clock
// has expired too. That is wrong only if this host's clock is more than MaxClockSkew
// (plus the eighth of a claim a holder keeps in hand) ahead of the holder's; any smaller
// difference, either way, changes nothing.
//
// The expiry stamp (Lease.ExpiresAt) stays in the claim for people to read (describe)
// and for releases that judge claims by it.
type Claims struct {
	// clock is this process's monotonic clock: the time elapsed since some start.
	clock func() time.Duration
	// wall is this process's wall clock, for the bounded exception above.
	wall func() time.Time
	// seenEarlier backdates the first sight of a claim whose stamp this process's wall
	// clock has passed (a test knob: a process whose clock is set that far ahead counts
	// such a claim as watched that long already, as a process judging by stamps would;
	// the claims of processes whose clocks are set alike are judged as any other).
	seenEarlier time.Duration
	// processes are what this process knows of processes: the process its claims name,
	// and whether the process of another holder's claim has ended (Abandoned).
	processes ProcessTable

	mu   sync.Mutex
	seen map[ClaimRef]sighting
	// work is the broker's work on requests this process saw, of each kind on each
	// record (WorkLeft).
	work map[workKey]sighting
}

// ClaimRef names the record a claim is on: its ConfigMap's uid, or its namespace and
// name when the uid is not known.
type ClaimRef struct {
	Namespace, Name string
	UID             types.UID
}

// RefOf is the ClaimRef of obj.
func RefOf(obj metav1.Object) ClaimRef {
	if uid := obj.GetUID(); uid != "" {
		return ClaimRef{UID: uid}
	}
	return ClaimRef{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ClaimRef is the ClaimRef of the record of w.
func (w WorkItem) ClaimRef() ClaimRef {
	if w.UID != "" {
		return ClaimRef{UID: w.UID}
	}
	return ClaimRef{Namespace: w.Namespace, Name: w.Name}
}

type sighting struct {
	stamp string
	at    time.Duration
}

// maxSightings bounds the memory: past it, the sights are forgotten, which only makes
// other holders' claims last longer (their time starts again).
const maxSightings = 100000

// MaxClockSkew is how far this host's wall clock may be ahead of a claim's writer's
// before a claim it has not watched for the claim's duration may look expired to it
// (Claims): the only way wall clocks enter the judgement of a claim.
const MaxClockSkew = 15 * time.Minute

// newClaims returns the Claims of a store whose monotonic clock is clock, wall clock
// wall and processes processes.
func newClaims(clock func() time.Duration, wall func() time.Time, seenEarlier time.Duration, processes ProcessTable) *Claims {
	return &Claims{clock: clock, wall: wall, seenEarlier: seenEarlier, processes: processes, seen: map[ClaimRef]sighting{},
		work: map[workKey]sighting{}}
}

// stamp identifies one writing of a claim: a renewal changes it.
func (l Lease) stamp() string {
	b, _ := json.Marshal(l)
	return string(b)
}

// sight returns when this process first saw claim l on ref, recording at as that time
// if it had not seen this writing of the claim before and record is set; false when it
// had not seen it and did not record it.
func (c *Claims) sight(ref ClaimRef, l Lease, at time.Duration, record bool) (time.Duration, bool) {
	stamp := l.stamp()
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.seen[ref]; ok && s.stamp == stamp {
		return s.at, true
	}
	if !record {
		return 0, false
	}
	if len(c.seen) >= maxSightings {
		c.seen = map[ClaimRef]sighting{}
	}
	c.seen[ref] = sighting{stamp: stamp, at: at}
	return at, true
}

// Left is how long claim l on ref, another holder's, stays live for this process: its
// duration less how long this process has seen it unchanged. Zero means it has expired
// and may be taken over. The first call for a writing of the claim starts its time. A
// claim whose stamp ran out more than MaxClockSkew ago by this host's wall clock has
// expired whatever this process saw of it.
func (c *Claims) Left(ref ClaimRef, l Lease) time.Duration {
	now := c.clock()
	first := now
	if c.seenEarlier > 0 && c.wall().After(l.ExpiresAt) {
		first -= c.seenEarlier
	}
	at, _ := c.sight(ref, l, first, true)
	if !l.ExpiresAt.IsZero() && c.wall().After(l.ExpiresAt.Add(MaxClockSkew)) {
		return 0
	}
	// No holder writes a stamp further ahead than its claim's duration: one further
	// ahead than that and MaxClockSkew (a forged "until 9999") holds nothing.
	if !l.ExpiresAt.IsZero() && l.ExpiresAt.After(c.wall().Add(l.Duration()+MaxClockSkew)) {
		return 0
	}
	return max(l.Duration()-(now-at), 0)
}

// Live reports whether claim l on ref, another holder's, is live for this process
// (Left is positive).
func (c *Claims) Live(ref ClaimRef, l Lease) bool { return c.Left(ref, l) > 0 }

// OwnLeft is how long claim l on ref, which this process wrote, has left, timed from the
// start of the write that stored it. A claim this process has no record of writing
// (its memory was bounded) has nothing left: renew it before relying on it.
func (c *Claims) OwnLeft(ref ClaimRef, l Lease) time.Duration {
	at, ok := c.sight(ref, l, 0, false)
	if !ok {
		return 0
	}
	return max(l.Duration()-(c.clock()-at), 0)
}

// wrote records that obj, as stored by a write that started at start (this process's
// monotonic clock), carries its claim: a claim this process had not seen is timed from
// then.
func (c *Claims) wrote(obj metav1.Object, start time.Duration) {
	if l, ok := LeaseOf(obj); ok {
		c.sight(RefOf(obj), l, start, true)
	}
}

// Set claims obj in memory for holder until now+ttl, like SetClaim, but names this
// store's process (WithProcesses) and judges another holder's claim by what this process
// saw of it (Live).
func (c *Claims) Set(obj metav1.Object, holder string, ttl time.Duration, now time.Time) error {
	return setClaim(obj, holder, ttl, now, c.processes.Self, func(l Lease) bool { return c.Live(RefOf(obj), l) })
}

// Abandoned reports whether the claim l's holder is a process of this store's process's
// host that has ended, as this store's process judges it (Process.Gone, by the
// ProcessTable of WithProcesses): nobody renews the claim, though it has not expired yet.
func (c *Claims) Abandoned(l Lease) bool { return l.Process.goneTo(c.processes) }

// Now is this process's monotonic clock reading, for timing claims with Left.
func (c *Claims) Now() time.Duration { return c.clock() }

// WorkLeft is how long the broker may still be working on a request about record ref
// that got no answer, or whose outcome no one stored (its sender may have ended during
// the call): grace less how long this process has seen that work's stamp (what names the
// kind of stamp, one per record: "send", "retry"; stamp identifies its writing; end is
// when the work is over by its writer's wall clock), timed on this process's monotonic
// clock from its first sight, as another holder's claim is (Left). So work first seen
// now has the full grace from now, and no skew of the clocks shortens it. The bounded
// exception of claims holds too: work whose end passed more than MaxClockSkew ago by this
// host's wall clock is over whatever this process saw of it.
func (c *Claims) WorkLeft(ref ClaimRef, what, stamp string, end time.Time, grace time.Duration) time.Duration {
	now := c.clock()
	first := now
	if c.seenEarlier > 0 && c.wall().After(end) {
		first -= c.seenEarlier
	}
	key := workKey{ref: ref, what: what}
	c.mu.Lock()
	s, ok := c.work[key]
	if !ok || s.stamp != stamp {
		if len(c.work) >= maxSightings {
			c.work = map[workKey]sighting{}
		}
		s = sighting{stamp: stamp, at: first}
		c.work[key] = s
	}
	c.mu.Unlock()
	if c.wall().After(end.Add(MaxClockSkew)) {
		return 0
	}
	return max(grace-(now-s.at), 0)
}

// workKey names the broker's work of one kind on one record (WorkLeft).
type workKey struct {
	ref  ClaimRef
	what string
}
