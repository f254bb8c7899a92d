package sim

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Bindings that follow an update (-sim.rebind): dev's users run
// "update --rebind" (with a plan change, new parameters, or nothing else), set
// spec.rebindOnUpdate to Never, Always or PlanChange (with provision or update, with or
// without a plan change), while the others bind, unbind and rotate, the processes are
// killed and interrupted and the API server and broker fail as in every seed; the
// instances' limits change too (as with -sim.limits). Reconcile finishes every rebind.
//
// Checked as each unbind reaches the broker: an id a binding retires (a rotation's old
// id) is unbound only once the binding is bound under its successor and the binding's
// Secret holds the credentials the broker handed for it. After every step, for each
// instance record written: a rebind the spec asks for is there only when the spec says
// so (Always; PlanChange with an update that changes the plan; never for Never), and
// every update sent under Always (or PlanChange changing the plan) has one; its lists
// of bindings done only grow, and name each binding once; a binding recorded as rotated
// is bound under a new id whose bind reached the broker after the update the rebind
// follows settled, holds that id's credentials in its Secret, and its old id is gone
// at the broker; one recorded as failed is still bound under its old id, which the
// broker holds, and its Secret holds the old credentials; a rebind that ends (but one
// dropped with its refused update) leaves no binding it could rotate that was bound
// when it was asked for and is neither rotated nor recorded as failed or gone, and says
// how it went in the BindingsRebound condition. At quiescence: no rebind is left.
// (Orphans at the broker, the limits during a rotation, and the credentials of every
// binding are the checks of every seed.)

var rebindWorld = flag.Bool("sim.rebind", false, "let dev's users run update --rebind and set spec.rebindOnUpdate (Never, Always, PlanChange) while bindings are made, rotated and unbound")

// withRebind reports whether seed rebinds after updates: one seed in eight, and every
// seed with -sim.rebind (and TestSim_RebindWorld's seeds).
func withRebind(seed uint64) bool {
	r := rand.New(rand.NewPCG(seed^0xc0ac29b7c97c50dd, seed))
	return r.IntN(8) == 0 || *rebindWorld
}

// rebindState is what the rebind world follows: the rebinds seen, by instance uid, the
// step each binding id's first bind reached the broker, and the steps the instances
// settled each generation at.
type rebindState struct {
	on      bool
	tracks  map[string]*rebindTrack
	boundAt map[string]int
	// settledAt is the first step each instance ("uid/generation") was seen settled.
	settledAt map[string]int
	// sent are the request ids of the updates seen written ahead.
	sent map[string]bool
	// seq orders the binds and settlements seen (the steps of quiescence share one
	// number).
	seq int
	// rebinds, rotated and failed count the rebinds seen and the rotations they
	// recorded, to show that a run of seeds exercised them.
	rebinds, rotated, failed int
}

// rebindTrack is one rebind of an instance, as its records showed it.
type rebindTrack struct {
	requestedAt metav1.Time
	// bound are the instance's bindings ("namespace/name") bound when the rebind was
	// first seen, with their ids.
	bound map[string]string
	last  v1alpha1.RebindStatus
}

func newRebindState(seed uint64) rebindState {
	return rebindState{on: withRebind(seed), tracks: map[string]*rebindTrack{}, boundAt: map[string]int{}, settledAt: map[string]int{}, sent: map[string]bool{}}
}

// rebindTask is, a third of the time, a dev user's task of the rebind world.
func (w *world) rebindTask(e *engine.Engine, ns, inst string, follow engine.Follow) (string, func(context.Context) error, bool) {
	if !w.rebind.on || ns != "dev" {
		return "", nil, false
	}
	// Mostly an instance with bound bindings, as a user rebinds what has some; else a
	// binding to a ready instance, or an instance.
	withBindings, ready := w.instancesWithBindings(ns)
	switch {
	case len(withBindings) > 0 && w.rng.IntN(2) == 0:
		inst = withBindings[w.rng.IntN(len(withBindings))]
	case len(ready) > 0 && w.rng.IntN(2) == 0:
		inst = ready[w.rng.IntN(len(ready))]
		bind := fmt.Sprintf("app-%d", w.rng.IntN(3))
		return "bind " + bind + " to " + inst, func(ctx context.Context) error {
			_, err := e.Bind(ctx, engine.BindRequest{Namespace: ns, Instance: inst, Name: bind, Follow: follow})
			return err
		}, true
	case w.rng.IntN(3) > 0:
		return "", nil, false
	}
	plan := []string{"small", "large"}[w.rng.IntN(2)]
	policies := []v1alpha1.RebindPolicy{v1alpha1.RebindNever, v1alpha1.RebindAlways, v1alpha1.RebindPlanChange}
	policy := policies[w.rng.IntN(len(policies))]
	switch w.rng.IntN(6) {
	case 0:
		return "update " + inst + " to " + plan + " --rebind", func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Plan: plan}, Rebind: true, Follow: follow})
			return err
		}, true
	case 1:
		return "update " + inst + " --rebind", func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, Rebind: true, Follow: follow})
			return err
		}, true
	case 2:
		return "update " + inst + " parameters --rebind", func(ctx context.Context) error {
			params := &engine.ParametersInput{Pairs: []string{fmt.Sprintf("size=%d", w.rng.IntN(3))}}
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Parameters: params}, Rebind: true, Follow: follow})
			return err
		}, true
	case 3:
		return "update " + inst + " --rebind=" + string(policy), func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, RebindOnUpdate: &policy, Follow: follow})
			return err
		}, true
	case 4:
		return "update " + inst + " to " + plan + " --rebind=" + string(policy), func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Plan: plan}, RebindOnUpdate: &policy, Follow: follow})
			return err
		}, true
	}
	return "provision " + inst + " --rebind=" + string(policy), func(ctx context.Context) error {
		_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: ns, Name: inst, Class: "db", Plan: plan, RebindOnUpdate: policy, Follow: follow})
		return err
	}, true
}

// instancesWithBindings are the names of the instances of namespace ns, provisioned and
// not being deleted, that have a binding bound, and of those ready.
func (w *world) instancesWithBindings(ns string) (withBindings, ready []string) {
	insts, binds := w.records()
	for _, x := range insts {
		if x.Namespace != ns || x.DeletionTimestamp != nil || x.Status.Provisioned == nil {
			continue
		}
		if w.move.on && slices.Contains(moveInstances, x.Name) {
			// The move world's instances are old-dev's on the old cluster: nobody else
			// binds to them there, since a binding made after their export would be
			// left behind by the move (move_test.go).
			continue
		}
		if x.Status.Phase == v1alpha1.PhaseReady {
			ready = append(ready, x.Name)
		}
		if slices.ContainsFunc(binds, func(b *v1alpha1.ServiceBinding) bool { return w.rebindable(x, b) }) {
			withBindings = append(withBindings, x.Name)
		}
	}
	return withBindings, ready
}

// rebindAtBind notes when the first bind of a binding id reaches the broker at.
func (w *world) rebindAtBind(r *osb.BindRequest) {
	if _, ok := w.rebind.boundAt[r.BindingID]; !ok {
		w.rebind.seq++
		w.rebind.boundAt[r.BindingID] = w.rebind.seq
	}
}

// rebindAtUnbind checks an unbind of id as it reaches the broker: an id a binding
// retires (the old id of a rotation) goes only once the binding is bound under its
// successor, whose credentials its Secret holds.
func (w *world) rebindAtUnbind(id string) {
	_, binds := w.records()
	for _, b := range binds {
		if b.Namespace == "t" || b.DeletionTimestamp != nil || w.edited[b.Namespace+"/"+b.Name] {
			continue
		}
		retiring := slices.Contains(b.Status.Retired, id)
		if p := b.Status.Predecessor; p != nil && p.ExternalID == id {
			retiring = true
		}
		if !retiring {
			continue
		}
		bound := b.Status.Bound
		if bound == nil || bound.BindingID == id || bound.BindingID == "" {
			w.fail("binding %s/%s: its old id %s is being unbound while no successor is bound (status.bound: %+v)", b.Namespace, b.Name, id, bound)
			continue
		}
		if want, ok := w.handedPassword(bound.BindingID); ok {
			if got := w.secretPassword(b); got != want && !w.secretAbandoned(b) {
				w.fail("binding %s/%s: its old id %s is being unbound while its Secret %q does not hold the credentials of its successor %s", b.Namespace, b.Name, id, b.Spec.SecretName, bound.BindingID)
			}
		}
	}
}

// handedPassword is the password the broker last handed out for binding id; false when
// it handed none, or its answers for the id were off the spec.
func (w *world) handedPassword(id string) (string, bool) {
	t := w.book.ids[id]
	if t == nil || t.handed == nil || t.rogue || t.lied || t.unheldSuccess {
		return "", false
	}
	p, ok := t.handed["password"]
	if !ok {
		return "", true
	}
	return fmt.Sprint(p), true
}

// secretPassword is what b's Secret holds under "password" (empty when it is missing).
func (w *world) secretPassword(b *v1alpha1.ServiceBinding) string {
	s, err := w.cluster.Core.CoreV1().Secrets(b.Namespace).Get(context.Background(), b.Spec.SecretName, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return string(s.Data["password"])
}

// checkRebinds checks the rebinds of the instance records written in a step.
func (w *world) checkRebinds(insts []*v1alpha1.ServiceInstance) {
	for _, x := range insts {
		if x.Namespace == "t" {
			continue
		}
		w.noteSettled(x)
		key := string(x.UID)
		tr := w.rebind.tracks[key]
		rb := x.Status.Rebind
		fresh := false
		switch {
		case rb == nil && tr != nil:
			w.rebindEnded(x, tr)
			delete(w.rebind.tracks, key)
		case rb == nil:
		case tr == nil || !tr.requestedAt.Equal(&rb.RequestedAt):
			if tr != nil {
				// A rebind that ended and a new one, between two checks.
				w.rebindEnded(x, tr)
			}
			tr = &rebindTrack{requestedAt: rb.RequestedAt, bound: w.boundBindings(x)}
			w.rebind.tracks[key] = tr
			w.rebind.rebinds++
			fresh = true
		}
		w.checkRebindPolicy(x, fresh)
		if rb != nil {
			w.checkRebindProgress(x, tr, rb)
			tr.last = *rb.DeepCopy()
		}
	}
}

// checkRebindsQuiescing is checkRebinds once the faults stopped, when the steps are not
// checked one by one: after every move, on every instance record.
func (w *world) checkRebindsQuiescing() {
	if !w.rebind.on || !w.wrote {
		return
	}
	insts, _ := w.records()
	w.checkRebinds(insts)
}

// noteSettled notes the first step x was seen settled for its generation.
func (w *world) noteSettled(x *v1alpha1.ServiceInstance) {
	if x.Status.InFlight != nil || x.Status.Retry != nil || x.Status.Phase != v1alpha1.PhaseReady || x.Status.ObservedGeneration != x.Generation {
		return
	}
	k := fmt.Sprintf("%s/%d", x.UID, x.Generation)
	if _, ok := w.rebind.settledAt[k]; !ok {
		w.rebind.seq++
		w.rebind.settledAt[k] = w.rebind.seq
	}
}

// checkRebindPolicy checks, as an update is written ahead (its request id first seen),
// that a rebind the spec asks for is there exactly when the spec says: under Always
// with every update, under PlanChange with every update that changes the plan, never
// otherwise. fresh: x's rebind was first seen in this write.
func (w *world) checkRebindPolicy(x *v1alpha1.ServiceInstance, fresh bool) {
	op, prov := x.Status.InFlight, x.Status.Provisioned
	if op == nil || op.Type != v1alpha1.OperationUpdate || prov == nil || w.rebind.sent[op.RequestID] {
		return
	}
	w.rebind.sent[op.RequestID] = true
	rb, policy, changes := x.Status.Rebind, x.Spec.RebindOnUpdate, op.PlanID != prov.PlanID
	if rb != nil && fresh && strings.HasPrefix(rb.Reason, "spec.rebindOnUpdate") {
		switch {
		case policy != v1alpha1.RebindAlways && policy != v1alpha1.RebindPlanChange:
			w.fail("instance %s/%s: a rebind (%s) follows an update while spec.rebindOnUpdate is %q", x.Namespace, x.Name, rb.Reason, policy)
		case policy == v1alpha1.RebindPlanChange && !changes:
			w.fail("instance %s/%s: a rebind (%s) follows an update that does not change the plan (%s)", x.Namespace, x.Name, rb.Reason, op.PlanID)
		}
	}
	if rb == nil && (policy == v1alpha1.RebindAlways || policy == v1alpha1.RebindPlanChange && changes) {
		w.fail("instance %s/%s: an update is written ahead under spec.rebindOnUpdate %q (plan %s to %s) with no rebind to follow it", x.Namespace, x.Name, policy, prov.PlanID, op.PlanID)
	}
}

// boundBindings are the bindings of x bound now that a rebind of x may rotate, with
// their ids.
func (w *world) boundBindings(x *v1alpha1.ServiceInstance) map[string]string {
	_, binds := w.records()
	out := map[string]string{}
	for _, b := range binds {
		if w.rebindable(x, b) {
			out[b.Namespace+"/"+b.Name] = b.Status.Bound.BindingID
		}
	}
	return out
}

// rebindable reports a binding a rebind of x rotates: bound, not being deleted, of x's
// namespace or one x lets bind.
func (w *world) rebindable(x *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	ns, name := b.InstanceRef()
	return ns == x.Namespace && name == x.Name && b.DeletionTimestamp == nil && b.Status.Bound != nil && b.Status.Bound.BindingID != "" &&
		(b.Namespace == x.Namespace || authority.Lets(x, b.Namespace))
}

// checkRebindProgress checks what a write of x did to its rebind since the last one seen.
func (w *world) checkRebindProgress(x *v1alpha1.ServiceInstance, tr *rebindTrack, rb *v1alpha1.RebindStatus) {
	name := x.Namespace + "/" + x.Name
	if rb.Generation > tr.last.Generation && rb.Current == nil && len(rb.Rotated)+len(rb.Failed)+len(rb.Gone) == 0 {
		// Started over for an update sent while it was under way: every binding is
		// rotated again after that update.
		tr.last.Current, tr.last.Rotated, tr.last.Failed, tr.last.Gone = nil, nil, nil, nil
	}
	seen := map[string]string{}
	for list, keys := range map[string][]string{"rotated": rb.Rotated, "failed": rb.Failed, "gone": rb.Gone} {
		for _, k := range keys {
			if was, ok := seen[k]; ok {
				w.fail("instance %s: its rebind lists binding %s twice (%s and %s)", name, k, was, list)
			}
			seen[k] = list
		}
	}
	for list, pair := range map[string][2][]string{"rotated": {tr.last.Rotated, rb.Rotated}, "failed": {tr.last.Failed, rb.Failed}, "gone": {tr.last.Gone, rb.Gone}} {
		before, now := pair[0], pair[1]
		if len(now) < len(before) || !slices.Equal(now[:len(before)], before) {
			w.fail("instance %s: the %s bindings of its rebind went from %v to %v", name, list, before, now)
			continue
		}
		cur := tr.last.Current
		for _, k := range now[len(before):] {
			if cur == nil || cur.Namespace+"/"+cur.Name != k {
				w.fail("instance %s: its rebind recorded binding %s as %s while it was not the one being rotated (%+v)", name, k, list, cur)
				continue
			}
			w.checkRotationOutcome(x, list, k, cur, rb)
		}
	}
}

// checkRotationOutcome checks the binding a rebind just recorded as rotated or failed.
func (w *world) checkRotationOutcome(x *v1alpha1.ServiceInstance, list, key string, cur *v1alpha1.RebindTarget, rb *v1alpha1.RebindStatus) {
	b, err := w.checker.Bindings().Get(context.Background(), cur.Namespace, cur.Name)
	if err != nil || string(b.UID) != cur.UID {
		if list != "gone" {
			w.fail("instance %s/%s: its rebind recorded binding %s as %s, and it is gone", x.Namespace, x.Name, key, list)
		}
		return
	}
	bound := b.Status.Bound
	_, held := w.ledger.Binding(cur.FromID)
	w.logf("rebind of instance %s/%s: binding %s %s (from id %s)", x.Namespace, x.Name, key, list, cur.FromID)
	switch list {
	case "rotated":
		w.rebind.rotated++
	case "failed":
		w.rebind.failed++
	}
	untrusted := w.book.lied(cur.FromID) || w.abandoned[cur.FromID] || w.edited[key]
	switch list {
	case "rotated":
		if bound == nil || bound.BindingID == cur.FromID {
			w.fail("instance %s/%s: its rebind recorded binding %s as rotated, and it is still bound as %s (status.bound %+v)", x.Namespace, x.Name, key, cur.FromID, bound)
			return
		}
		if held && !untrusted {
			w.fail("instance %s/%s: its rebind recorded binding %s as rotated, and the broker still holds its old id %s", x.Namespace, x.Name, key, cur.FromID)
		}
		if want, ok := w.handedPassword(bound.BindingID); ok && w.secretPassword(b) != want {
			w.fail("instance %s/%s: its rebind recorded binding %s as rotated, and its Secret does not hold the credentials of its new id %s", x.Namespace, x.Name, key, bound.BindingID)
		}
		settled, ok := w.rebind.settledAt[fmt.Sprintf("%s/%d", x.UID, rb.Generation)]
		if at, bound := w.rebind.boundAt[bound.BindingID]; ok && bound && at < settled {
			w.fail("instance %s/%s: its rebind (%s, generation %d) recorded binding %s as rotated under id %s, whose bind reached the broker at %d, before the instance settled that generation (%d, in the order of binds and settlements): its credentials may not follow the update",
				x.Namespace, x.Name, rb.Reason, rb.Generation, key, b.Status.Bound.BindingID, at, settled)
		}
	case "failed":
		if bound == nil || bound.BindingID != cur.FromID {
			w.fail("instance %s/%s: its rebind recorded the rotation of binding %s as failed, and it is not bound under its old id %s any more (status.bound %+v)", x.Namespace, x.Name, key, cur.FromID, bound)
			return
		}
		if !held && !untrusted && !w.neverHeld(cur.FromID) { // simnew_test.go
			w.fail("instance %s/%s: its rebind recorded the rotation of binding %s as failed, and the broker no longer holds its old id %s", x.Namespace, x.Name, key, cur.FromID)
		}
		if want, ok := w.handedPassword(cur.FromID); ok && w.secretPassword(b) != want {
			w.fail("instance %s/%s: its rebind recorded the rotation of binding %s as failed, and its Secret no longer holds the old credentials of %s", x.Namespace, x.Name, key, cur.FromID)
		}
	}
}

// rebindEnded checks a rebind of x that ended: it said how it went, and it left no
// binding it could rotate that was bound when it was asked for and is neither rotated,
// failed nor gone.
func (w *world) rebindEnded(x *v1alpha1.ServiceInstance, tr *rebindTrack) {
	c := meta.FindStatusCondition(x.Status.Conditions, engine.ConditionBindingsRebound)
	if c == nil {
		w.fail("instance %s/%s: its rebind (%s) ended and no BindingsRebound condition says how", x.Namespace, x.Name, tr.last.Reason)
		return
	}
	if c.Reason == engine.ReasonRebindSkipped {
		return
	}
	if x.Status.Rebind != nil {
		// Ended between two checks, and a new one began: what the first did is not known.
		return
	}
	done := append(slices.Clone(tr.last.Failed), tr.last.Gone...)
	settled, known := w.rebind.settledAt[fmt.Sprintf("%s/%d", x.UID, tr.last.Generation)]
	_, binds := w.records()
	for _, b := range binds {
		k := b.Namespace + "/" + b.Name
		if _, was := tr.bound[k]; !was || !w.rebindable(x, b) || slices.Contains(done, k) || w.edited[k] {
			continue
		}
		if b.Annotations[engine.AnnotationReleasedTo] != "" {
			// Released to another cluster (move_test.go) since the rebind was asked for:
			// the new cluster holds its id, and the old one rotates it no more.
			continue
		}
		id := b.Status.Bound.BindingID
		at, ok := w.rebind.boundAt[id]
		if id != tr.bound[k] && (!known || !ok || at > settled) {
			// Bound under a new id since the update the rebind follows settled.
			continue
		}
		w.fail("instance %s/%s: its rebind (%s, generation %d) ended and binding %s, bound when it was asked for, holds id %s bound at %d, before the instance settled that generation (%d, in the order of binds and settlements), and is not recorded as failed or gone (rotated: %v; condition: %s)",
			x.Namespace, x.Name, tr.last.Reason, tr.last.Generation, k, id, at, settled, tr.last.Rotated, c.Message)
	}
}

// rebindPending reports an instance outside the tenant's namespace with a rebind left
// to do: quiescence is not reached while one is.
func rebindPending(insts []*v1alpha1.ServiceInstance) bool {
	for _, x := range insts {
		if x.Namespace != "t" && x.Status.Rebind != nil && x.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// checkRebindsQuiet is the quiescence check of the rebinds: none is left.
func (w *world) checkRebindsQuiet(insts []*v1alpha1.ServiceInstance) {
	for _, x := range insts {
		if x.Namespace != "t" && x.Status.Rebind != nil && !w.rebindFollowsALie(x) && !w.lostByRogue(x) && !w.rebindWaitsOnALie(x) { // listed_test.go, rebind_rogue_test.go
			w.fail("instance %s/%s: its rebind (%s) never ended: current %+v, rotated %v, failed %v", x.Namespace, x.Name, x.Status.Rebind.Reason,
				x.Status.Rebind.Current, x.Status.Rebind.Rotated, x.Status.Rebind.Failed)
		}
	}
}

// rebindFollowsALie reports an instance whose rebind waits for an update that cannot
// settle because the broker lied about the instance (a rogue answer: a provision it
// answered as done without carrying it out, so every update is answered 404): the
// instance fails visibly, its condition naming the broker's answer (checkFinal), and a
// rebind follows only a settled update.
func (w *world) rebindFollowsALie(x *v1alpha1.ServiceInstance) bool {
	if terminal(x, &x.Status.OperationStatus) {
		return false
	}
	msg, _ := readyMessage(&x.Status.OperationStatus)
	rogue := slices.ContainsFunc(instanceIDs(x), func(id string) bool { t := w.book.ids[id]; return t != nil && t.rogue })
	return rogue && strings.Contains(msg, "the broker answered")
}

// TestSim_RebindWorld runs seeds of the rebind world (-sim.rebind), alone and with
// asynchronous binds, on top of the default seeds (one in eight of which is a rebind
// seed; make soak runs many more), and shows that they rotated bindings; a run naming
// seeds or flags leaves it out.
func TestSim_RebindWorld(t *testing.T) {
	if *firstSeed != 0 || *seeds != 0 {
		t.Skip("a run of chosen seeds")
	}
	for _, world := range []struct {
		name  string
		flags []*bool
		count int
	}{
		{"-sim.rebind", []*bool{rebindWorld}, 4},
		{"-sim.rebind -sim.asyncbind", []*bool{rebindWorld, asyncBindAll}, 16},
	} {
		count := world.count
		if testing.Short() {
			count = (count + 2) / 3
		}
		was := make([]bool, len(world.flags))
		for i, f := range world.flags {
			was[i], *f = *f, true
		}
		var rebinds, rotated, failed int
		for seed, w := range runSeeds(1, count) {
			rebinds, rotated, failed = rebinds+w.rebind.rebinds, rotated+w.rebind.rotated, failed+w.rebind.failed
			if len(w.failures) > 0 {
				t.Errorf("%s, seed %d: %s\nreplay: %s\n%s",
					world.name, seed, w.failures[0], replay(world.name, seed), tail(w.trace, 60))
			}
		}
		for i, f := range world.flags {
			*f = was[i]
		}
		t.Logf("%s: %d seeds, %d rebinds, %d bindings rotated, %d rotations failed", world.name, count, rebinds, rotated, failed)
		if rotated == 0 {
			t.Errorf("%s: %d seeds rotated no binding after an update", world.name, count)
		}
	}
}

// rebindBindingNamespace is the namespace of the binding a bind of id is made for, ns
// that of the record the process works on: a rebind drives the bindings of its instance
// from the instance's step (or the verb's drive), so that record is the instance's, and
// the binding may be of another namespace the instance lets bind. The binding is the
// one whose write-ahead names id: one of ns when there is one, else the only other.
func (w *world) rebindBindingNamespace(id, ns string) string {
	if !w.rebind.on {
		return ns
	}
	_, binds := w.records()
	var others []string
	for _, b := range binds {
		if op := b.Status.InFlight; op != nil && op.Type == v1alpha1.OperationBind && op.BindingID == id {
			if b.Namespace == ns {
				return ns
			}
			others = append(others, b.Namespace)
		}
	}
	if len(others) == 1 {
		return others[0]
	}
	return ns
}

// waitsForAPlace reports a binding id the broker may hold whose record waits, its first
// bind (or its rotation's bind) in flight, for a place under its instance's limit (a limit set, or lowered, after
// the bind was written ahead: waitsForAPerson): its credentials reach its Secret once a
// place frees or the owner raises the limit, and deleting the binding unbinds the id.
// Reached most often where rebinds rotate bindings under limits that change.
func (w *world) waitsForAPlace(id string, binds []*v1alpha1.ServiceBinding) bool {
	return slices.ContainsFunc(binds, func(b *v1alpha1.ServiceBinding) bool {
		op := b.Status.InFlight
		if op != nil && op.Type == v1alpha1.OperationBind && op.BindingID == id && (b.Status.Bound == nil || b.Status.Bound.BindingID != id) {
			return w.waitsForAPerson(b)
		}
		return op == nil && b.Status.Bound == nil && slices.Contains(b.Status.ExternalIDs, id) && w.waitsForAPerson(b)
	})
}

// waitsToBind reports a binding whose bind waits to be sent: a first bind or a
// rotation's bind in flight (to be sent again), a rotation's bind not sent yet, or a
// first bind to be sent again with nothing in flight and an id of an earlier attempt
// kept.
func waitsToBind(b *v1alpha1.ServiceBinding) bool {
	if op := b.Status.InFlight; op != nil {
		return op.Type == v1alpha1.OperationBind && (b.Status.Bound == nil || b.Status.Bound.BindingID != op.BindingID)
	}
	if b.Status.OrphanMitigation != nil {
		return false
	}
	if bound := b.Status.Bound; bound != nil {
		return bound.BindingID != b.CurrentExternalID() // a rotation's bind not sent yet
	}
	return len(b.Status.ExternalIDs) > 0
}

// rebindCallRecord is the record ("namespace/name") a bind or unbind of binding id is
// made for, record the one the process works on: a rebind drives its instance's bindings
// from the instance's step, so a call of that step under a binding's id is the binding's
// (whose write-ahead names the id), made for the binding's author.
func (w *world) rebindCallRecord(id, record string) string {
	if !w.rebind.on {
		return record
	}
	_, binds := w.records()
	var found []string
	for _, b := range binds {
		if op := b.Status.InFlight; op != nil && op.BindingID == id && (op.Type == v1alpha1.OperationBind || op.Type == v1alpha1.OperationUnbind) {
			found = append(found, b.Namespace+"/"+b.Name)
		}
	}
	if len(found) != 1 {
		// The process's own record, or none known for sure (another record's status
		// copied the id).
		return record
	}
	return found[0]
}
