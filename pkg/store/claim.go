package store

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Lease is a claim on a record: while it is live, only Holder talks to the broker about
// the record. It is stored as JSON in the AnnotationClaim annotation.
type Lease struct {
	// Holder names who drives the record, e.g. "reconcile@host/1234".
	Holder string `json:"holder"`
	// ExpiresAt is when the claim lapses and may be taken over.
	ExpiresAt time.Time `json:"expiresAt"`
	// Process is the process that wrote the claim; absent from claims of older
	// releases.
	Process *Process `json:"process,omitempty"`
	// Seconds is how long the claim holds without renewal, as its writer set it: others
	// time it on their own clocks from when they first saw this writing of it (Claims).
	// Absent from claims of older releases, which then hold MaxClaimTTL.
	Seconds int64 `json:"seconds,omitempty"`
}

// Duration is how long the claim holds without renewal: Seconds, at most MaxClaimTTL
// (a claim annotation is the record's author's to write, and a claim "for ever" would
// stop everyone's work on the record), MaxClaimTTL when the claim does not say.
func (l Lease) Duration() time.Duration {
	if l.Seconds <= 0 {
		return MaxClaimTTL
	}
	return min(time.Duration(l.Seconds)*time.Second, MaxClaimTTL)
}

// MaxClaimTTL is the longest a claim may last without renewal: no driver claims a record
// for longer (the engine's ClaimTTL is at most this).
const MaxClaimTTL = 10 * time.Minute

// displaySlack is how far the wall clock of a reader of a claim may be from its
// writer's for Shown to show a claim that runs until ExpiresAt.
const displaySlack = 5 * time.Minute

// Shown reports whether the claim's expiry stamp, read with the wall clock now, still
// lies ahead (and not further than a claim runs): for showing the claim to people
// (describe). It decides nothing: drivers judge claims with Claims, by what they saw,
// since the writer's clock and the reader's may be minutes apart.
func (l Lease) Shown(now time.Time) bool {
	return now.Before(l.ExpiresAt) && !l.ExpiresAt.After(now.Add(l.Duration()+displaySlack))
}

// Live is Shown: a judgement by the wall clock, for claims read where no Claims of a
// store is at hand (tests, and claims shown to people).
func (l Lease) Live(now time.Time) bool { return l.Shown(now) }

// LeaseOf returns the claim on obj. An unreadable claim annotation counts as no claim, so
// it can be taken over.
func LeaseOf(obj metav1.Object) (Lease, bool) {
	v, ok := obj.GetAnnotations()[AnnotationClaim]
	if !ok {
		return Lease{}, false
	}
	var l Lease
	if err := json.Unmarshal([]byte(v), &l); err != nil || l.Holder == "" {
		return Lease{}, false
	}
	return l, true
}

// SetClaim claims obj in memory for holder until now+ttl (rounded up to the second), to
// be written together with other changes in one Update, as the engine does before a
// broker call; the claim names this process (Lease.Process). It fails with a Claimed
// error, changing nothing, if another holder's claim is live. Claiming again as the same
// holder renews the claim.
//
// SetClaim judges another holder's claim by the wall clock now (Lease.Live); drivers use
// Claims.Set, which judges it by what their process saw.
func SetClaim(obj metav1.Object, holder string, ttl time.Duration, now time.Time) error {
	return setClaim(obj, holder, ttl, now, self(), func(l Lease) bool { return l.Live(now) })
}

// setClaim is SetClaim, the claim naming process me, another holder's claim judged by
// live.
func setClaim(obj metav1.Object, holder string, ttl time.Duration, now time.Time, me *Process, live func(Lease) bool) error {
	if l, ok := LeaseOf(obj); ok && l.Holder != holder && live(l) {
		return &Error{Reason: ReasonClaimed, Op: "claim", Kind: kindOf(obj), Namespace: obj.GetNamespace(),
			Name: obj.GetName(), Holder: l.Holder, Expires: l.ExpiresAt}
	}
	expires := now.Add(ttl)
	if expires.Nanosecond() != 0 {
		expires = expires.Truncate(time.Second).Add(time.Second)
	}
	seconds := int64((ttl + time.Second - 1) / time.Second)
	v, err := json.Marshal(Lease{Holder: holder, ExpiresAt: expires.UTC(), Process: me, Seconds: max(seconds, 1)})
	if err != nil {
		return err
	}
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationClaim] = string(v)
	obj.SetAnnotations(annotations)
	return nil
}

// ClearClaim removes holder's claim from obj in memory. It reports whether there was one;
// another holder's claim is left alone.
func ClearClaim(obj metav1.Object, holder string) bool {
	l, ok := LeaseOf(obj)
	if _, present := obj.GetAnnotations()[AnnotationClaim]; !present || (ok && l.Holder != holder) {
		return false
	}
	annotations := maps.Clone(obj.GetAnnotations())
	delete(annotations, AnnotationClaim)
	obj.SetAnnotations(annotations)
	return true
}

func kindOf(obj metav1.Object) string {
	if o, ok := obj.(runtime.Object); ok {
		return o.GetObjectKind().GroupVersionKind().Kind
	}
	return ""
}

// Claim claims the record obj for holder for ttl, in one write guarded by obj's
// resourceVersion. A live claim by another holder, or any change to the record since obj
// was read, means someone else is driving it: Claim then fails with a Claimed error
// (IsClaimed) and the caller must re-read, not call the broker. An expired claim is taken
// over. It returns the record as stored.
func (r Records[T]) Claim(ctx context.Context, obj T, holder string, ttl time.Duration) (T, error) {
	var zero T
	obj = obj.DeepCopyObject().(T)
	if err := r.s.claims.Set(obj, holder, ttl, r.s.now()); err != nil {
		return zero, err
	}
	claimed, err := r.Update(ctx, obj)
	if IsConflict(err) {
		return zero, &Error{Reason: ReasonClaimed, Op: "claim", Kind: r.k.name, Namespace: obj.GetNamespace(),
			Name: obj.GetName(), Err: errors.Unwrap(err)}
	}
	return claimed, err
}

// Release removes holder's claim from the record obj names. If the record changed since
// obj was read it is read again (releasing one's own claim is safe on any version). A
// claim by someone else is left alone. It returns the record as stored.
func (r Records[T]) Release(ctx context.Context, obj T, holder string) (T, error) {
	released := obj.DeepCopyObject().(T)
	if !ClearClaim(released, holder) {
		return obj, nil
	}
	stored, err := r.Update(ctx, released)
	if !IsConflict(err) {
		return stored, err
	}
	return r.updateWithRetry(ctx, obj.GetNamespace(), obj.GetName(), obj.GetUID(), func(cur T) error {
		ClearClaim(cur, holder)
		return nil
	})
}
