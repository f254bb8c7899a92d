package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Scheduled rotations (reconcile --rotate-due). The broker gives half of the binding ids
// a lifetime (OSB binding metadata): renew_before one to ten minutes after the first
// bind of the id reaches it, expires_at one to five minutes later (some ids only an
// expires_at), the same in every answer for the id (a bind's, an identical request's,
// GET binding's); a rotation's new id gets a lifetime of its own. A broker that answers
// off the spec (-sim.rogue) gives a third of them values that are not timestamps, an
// expires_at before the renew_before, or metadata that does not decode. Half of the
// reconcile replicas' runs are "reconcile --rotate-due", which rotates what the real
// selection finds due. The draws come from a random source of their own, so the world's
// other draws stay as they were.
//
// Checked:
//   - after every step, a binding's stored renewBefore and expiresAt are what the broker
//     gave for the binding id now bound (none where it gave none, or values that do not
//     parse), never another id's;
//   - a binding a --rotate-due run rotated had a stored renewBefore that had passed on
//     the replica's clock when the rotation began;
//   - a binding bound, not being deleted, of the replica's shard, with no operation under
//     way, whose stored renewBefore had passed when a --rotate-due run began, is rotated
//     by that run unless the run reports why not (it failed, was refused, another driver
//     held it, an operation came in flight), or the run was cut short (killed,
//     interrupted, out of time); and one it rotated is, at quiescence, bound under a new
//     id, failed with its reason, or gone.

// rotationState is what the world keeps of binding lifetimes and scheduled rotations.
type rotationState struct {
	rng *rand.Rand
	// life is the metadata the broker gives each binding id (nil: none).
	life map[string]*osb.BindingMetadata
	// started are the rotations seen beginning on each binding (namespace/name).
	started map[string][]rotationStart
	// rotated are the bindings --rotate-due runs rotated, for the check at quiescence.
	rotated []rotatedBinding
	// count is how many bindings --rotate-due runs rotated.
	count int
	// quiescing: the reconcile runs of this round of the quiescence are --rotate-due
	// runs; quiesced: that round was run.
	quiescing, quiesced bool
}

// rotationStart is a rotation seen beginning: by whom, in which of its runs, the stored
// renewBefore of the id it replaces, and the latest the process's clock read during
// that run up to then.
type rotationStart struct {
	p     *proc
	run   int
	from  string
	to    string
	renew *metav1.Time
	clock time.Time
}

type rotatedBinding struct{ key, from string }

func newRotationState(seed uint64) rotationState {
	return rotationState{rng: rand.New(rand.NewPCG(seed^0x452821e638d01377, seed+7)),
		life: map[string]*osb.BindingMetadata{}, started: map[string][]rotationStart{}}
}

// bindingLifetime is the metadata the broker gives binding id, drawn at the first bind
// of the id.
func (w *world) bindingLifetime(id string) *osb.BindingMetadata {
	if md, ok := w.rot.life[id]; ok {
		return md
	}
	r := w.rot.rng
	var md *osb.BindingMetadata
	if r.IntN(2) == 0 && !w.noLifetime() {
		now := w.t.Truncate(time.Second)
		renew := now.Add(time.Duration(5+r.IntN(116)) * time.Second)
		expires := renew.Add(time.Duration(60+r.IntN(241)) * time.Second)
		md = &osb.BindingMetadata{ExpiresAt: stamp(expires), RenewBefore: stamp(renew)}
		switch {
		case w.rates.rogue > 0 && r.IntN(3) == 0:
			switch r.IntN(4) {
			case 0:
				md.RenewBefore = "soon"
			case 1:
				md.ExpiresAt = "2026-13-45T99:00:00Z"
			case 2:
				md.ExpiresAt = stamp(renew.Add(-time.Hour)) // expires before it is due
			default:
				md.RenewBefore, md.ExpiresAt = fmt.Sprint(renew.Unix()), ""
			}
		case r.IntN(6) == 0:
			md.RenewBefore = "" // an expiry only
		}
	}
	w.rot.life[id] = md
	return md
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// noLifetime: in the move world, dev's bindings get none, so that --rotate-due leaves
// the bindings being moved alone (noRotation, move_test.go).
func (w *world) noLifetime() bool {
	if !w.move.on {
		return false
	}
	p := w.current()
	return p != nil && p.recordNamespace() == "dev"
}

// expected is the time a lifetime's value says, nil for none or one that does not parse.
func expected(v string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if v == "" || err != nil {
		return nil
	}
	return &t
}

// checkLifetime checks, after a step that wrote binding b, that its stored renewBefore
// and expiresAt are what the broker gave for the id bound now (an id with answers off
// the spec, or one the engine never got an answer for, excepted).
func (w *world) checkLifetime(b *v1alpha1.ServiceBinding) {
	bs := b.Status.Bound
	if b.Namespace == "t" || bs == nil {
		return
	}
	t := w.book.ids[bs.BindingID]
	if t == nil || t.rogue || t.unheldSuccess || t.handed == nil {
		return
	}
	md := w.rot.life[bs.BindingID]
	var renew, expires string
	if md != nil {
		renew, expires = md.RenewBefore, md.ExpiresAt
	}
	for _, f := range []struct {
		name string
		got  *metav1.Time
		want *time.Time
	}{{"renewBefore", bs.RenewBefore, expected(renew)}, {"expiresAt", bs.ExpiresAt, expected(expires)}} {
		switch {
		case f.got == nil && f.want == nil:
		case f.got == nil || f.want == nil || !f.got.Time.Equal(*f.want):
			w.fail("binding %s/%s is bound as %s and stores %s %s, while the broker gave %q for that id (renew_before %q, expires_at %q)",
				b.Namespace, b.Name, bs.BindingID, f.name, fmtTime(f.got), map[bool]string{true: renew, false: expires}[f.name == "renewBefore"], renew, expires)
		}
	}
}

func fmtTime(t *metav1.Time) string {
	if t == nil {
		return "nothing"
	}
	return stamp(t.Time)
}

// noteRotationStart notes, after a step of p that wrote binding b, a rotation b began
// in it: a new id in status.externalID, the bound one its predecessor.
func (w *world) noteRotationStart(p *proc, b *v1alpha1.ServiceBinding) {
	bs, pred := b.Status.Bound, b.Status.Predecessor
	if p == nil || p.onNew() || bs == nil || pred == nil || pred.ExternalID != bs.BindingID || b.CurrentExternalID() == bs.BindingID {
		return
	}
	key := b.Namespace + "/" + b.Name
	ss := w.rot.started[key]
	if len(ss) > 0 && ss[len(ss)-1].to == b.CurrentExternalID() {
		return
	}
	w.rot.started[key] = append(ss, rotationStart{p: p, run: p.runs, from: bs.BindingID, to: b.CurrentExternalID(), renew: bs.RenewBefore, clock: p.clockHigh})
}

// rotationMargin is how far a process's clock may go back between two of its steps (a
// new skew): a renew_before that far past on its clock is past on its clock at any
// later step.
func (w *world) rotationMargin() time.Duration {
	most := w.claimTTL / 6
	if *wideSkew {
		most = store.MaxClockSkew / 2
	}
	return 2*most + time.Second
}

// rotationsDue are the bindings a --rotate-due run of p starting now must rotate (or
// say why not): bound, not being deleted, of p's shard, nothing under way, their
// renewBefore past on p's clock by more than its skew can move back.
func (p *proc) rotationsDue() map[string]string {
	w := p.w
	chk := w.checker
	if p.onNew() {
		chk = w.move.checker
	}
	binds, err := chk.Bindings().List(context.Background(), "", store.Filter{})
	if _, unreadable := store.Unreadable(err); err != nil && !unreadable {
		panic(err)
	}
	due := map[string]string{}
	for _, b := range binds {
		bs := b.Status.Bound
		if b.Namespace == "t" || bs == nil || b.DeletionTimestamp != nil || bs.RenewBefore == nil ||
			p.now().Add(-w.rotationMargin()).Before(bs.RenewBefore.Time) ||
			!p.inShard(b.Namespace, b.Name) || w.noRotation(p, b) ||
			engine.CheckBindingChangeable(b) != nil || bs.BindingID != b.CurrentExternalID() {
			continue
		}
		due[b.Namespace+"/"+b.Name] = bs.BindingID
	}
	return due
}

// checkRotateDueRun checks a --rotate-due run of p once it returned: each binding it
// rotated was due when the rotation began, and each binding due when it began was
// rotated or its item says why not.
func (p *proc) checkRotateDueRun(o reconcile.Options, due map[string]string, sum reconcile.Summary, runErr error) {
	w := p.w
	chk := w.checker
	if p.onNew() {
		chk = w.move.checker
	}
	// The rotations begun in the step the run ended in, not checked yet.
	if binds, err := chk.Bindings().List(context.Background(), "", store.Filter{}); err == nil {
		for _, b := range binds {
			w.noteRotationStart(p, b)
		}
	}
	items := map[string]reconcile.Item{}
	for _, it := range sum.Items {
		if it.Kind != v1alpha1.KindServiceBinding {
			continue
		}
		key := it.Namespace + "/" + it.Name
		items[key] = it
		if !it.Rotated {
			continue
		}
		var s rotationStart
		ok := false
		for _, x := range w.rot.started[key] {
			if x.p == p && x.run == p.runs && !ok { // the first: --rotate-due rotates before any other step of the binding
				s, ok = x, true
			}
		}
		if !ok {
			w.fail("%s's --rotate-due run reports binding %s rotated, and the model saw no rotation of it begin in that run", p.name, key)
			continue
		}
		if s.renew == nil || s.clock.Before(s.renew.Time) {
			w.fail("%s's --rotate-due run rotated binding %s (id %s), whose stored renewBefore (%s) had not passed on its clock (%s)",
				p.name, key, s.from, fmtTime(s.renew), stamp(s.clock))
		}
		w.rot.count++
		w.logf("%-14s rotated %s (renewBefore %s)", p.name, key, fmtTime(s.renew))
	}
	cut := runErr != nil || p.dead || p.ctx.Err() != nil || sum.TimeUp || sum.Interrupted || sum.Regrouped
	for key, id := range due {
		ns, name, _ := strings.Cut(key, "/")
		b, err := chk.Bindings().Get(context.Background(), ns, name)
		it, reported := items[key]
		if reported && it.Rotated {
			w.rot.rotated = append(w.rot.rotated, rotatedBinding{key: key, from: id})
			continue
		}
		if err != nil || b.DeletionTimestamp != nil || b.CurrentExternalID() != id || b.Status.Bound == nil || b.Status.Bound.BindingID != id {
			continue // gone, being deleted, or rotated by someone else meanwhile
		}
		if !reported {
			if !cut && o.Group == nil {
				// (A member of a shard group steps its share only, which the model does
				// not foresee.)
				w.fail("%s's --rotate-due run ended without a word on binding %s, whose renewBefore (%s) had passed when it began", p.name, key, fmtTime(b.Status.Bound.RenewBefore))
			}
			continue
		}
		switch it.Outcome {
		case reconcile.Done:
			w.fail("%s's --rotate-due run left binding %s as %q without rotating it, while its renewBefore (%s) had passed when the run began", p.name, key, it.Detail, fmtTime(b.Status.Bound.RenewBefore))
		case reconcile.Waiting:
			if strings.Contains(it.Detail, "rotation due") && !strings.Contains(it.Detail, "an operation was in flight") {
				w.fail("%s's --rotate-due run left binding %s waiting (%s) without rotating it", p.name, key, it.Detail)
			}
		}
	}
}

// rotateAtQuiescence reports, once everything settled after the faults stopped, whether
// one more round of the quiescence is to run reconcile --rotate-due: once, when a
// binding has a renewBefore (past by then: each round is eleven minutes on).
func (w *world) rotateAtQuiescence() bool {
	if w.rot.quiesced {
		return false
	}
	w.rot.quiesced = true
	_, binds := w.records()
	for _, b := range binds {
		if b.Namespace != "t" && b.Status.Bound != nil && b.Status.Bound.RenewBefore != nil && b.DeletionTimestamp == nil {
			w.rot.quiescing = true
			w.logf("quiescence: a round of reconcile --rotate-due")
			return true
		}
	}
	return false
}

// noteQuiescentRotations notes the rotations a step of r began once the faults stopped,
// in a --rotate-due run (the quiescence checks no step otherwise).
func (w *world) noteQuiescentRotations(r *proc) {
	if !r.rotating || !w.wrote || r.onNew() {
		return
	}
	_, binds := w.records()
	for _, b := range binds {
		w.noteRotationStart(r, b)
	}
}

// checkRotatedAtQuiescence checks, once everything is quiet, what every binding stores
// of its lifetime, and each binding a --rotate-due run rotated: bound under another id than the one it replaced, failed with a reason, or
// gone.
func (w *world) checkRotatedAtQuiescence() {
	_, binds := w.records()
	for _, b := range binds {
		w.checkLifetime(b)
	}
	for _, r := range w.rot.rotated {
		ns, name, _ := strings.Cut(r.key, "/")
		b, err := w.checker.Bindings().Get(context.Background(), ns, name)
		if err != nil || b.DeletionTimestamp != nil {
			continue
		}
		if bs := b.Status.Bound; bs != nil && bs.BindingID != r.from {
			continue
		}
		if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
			continue
		}
		w.fail("binding %s was rotated by --rotate-due and is still bound as %s at quiescence, with no failure recorded", r.key, r.from)
	}
}
