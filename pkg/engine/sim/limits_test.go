package sim

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// An instance's limits (one seed in eight, every seed with -sim.limits; the choice has a
// random source of its own, so the other seeds keep their traces): dev's users set and
// change the limits of their instances (update --max-bindings 0, 1 or 2, update
// --allowed-namespaces with dev, team-b, both or neither), while they and team-b's user
// bind to them.
//
// Checked besides, as each bind of a new OSB id reaches the broker: the binding's
// namespace is one its instance's spec allowed at some time (every namespace, while
// allowedNamespaces was empty), and the broker holds (or is creating) fewer bindings of
// the instance than the largest maxBindings its spec ever had (none while it had no
// limit). A limit lowered while binds race may leave more bindings than the new limit
// (they stay; no new one is made), never more than any limit the instance had.

var limitsWorld = flag.Bool("sim.limits", false, "let dev's users change their instances' maxBindings and allowedNamespaces while bindings are made")

// withLimits reports whether seed changes instances' limits.
func withLimits(seed uint64) bool {
	r := rand.New(rand.NewPCG(seed^0x082efa98ec4e6c89, seed))
	return r.IntN(8) == 0 || *limitsWorld
}

// limitHistory is what an instance record's specs allowed, every version seen.
type limitHistory struct {
	anyNamespace bool
	namespaces   map[string]bool
	// unlimited: some version had no maxBindings; most, the largest it had.
	unlimited bool
	most      int32
}

// noteLimits records the limits of the instances' specs as they are now.
func (w *world) noteLimits(insts []*v1alpha1.ServiceInstance) {
	if !w.limitsOn {
		return
	}
	for _, x := range insts {
		key := x.Namespace + "/" + x.Name + "/" + string(x.UID)
		h := w.limits[key]
		if h == nil {
			h = &limitHistory{namespaces: map[string]bool{}}
			w.limits[key] = h
		}
		if len(x.Spec.AllowedNamespaces) == 0 {
			h.anyNamespace = true
		}
		for _, ns := range x.Spec.AllowedNamespaces {
			h.namespaces[ns] = true
		}
		if x.Spec.MaxBindings == nil || *x.Spec.MaxBindings == 0 {
			h.unlimited = true
		} else {
			h.most = max(h.most, *x.Spec.MaxBindings)
		}
	}
}

// limitsAtBind checks a bind as it reaches the broker, the first of its OSB id, for a
// binding of namespace ns.
func (w *world) limitsAtBind(ns string, r *osb.BindRequest) {
	if !w.limitsOn {
		return
	}
	if _, seen := w.bindingInstance[r.BindingID]; seen {
		return
	}
	w.bindingInstance[r.BindingID] = r.InstanceID
	w.checkLimits(ns, r.BindingID, r.InstanceID)
}

// counts reports whether binding id held at the broker counts against its instance's
// limit as far as the engine can know: not one the broker lied about, nor one an
// --abandon left there.
func (w *world) counts(id string) bool {
	t := w.book.ids[id]
	return !w.abandoned[id] && (t == nil || !t.rogue && !t.lied)
}

// checkLimits checks the bind of binding id, a new one, of instance id instanceID for a
// binding of namespace ns, as it reaches the broker.
func (w *world) checkLimits(ns, bindingID, instanceID string) {
	insts, _ := w.records()
	var inst *v1alpha1.ServiceInstance
	for _, x := range insts {
		if x.Namespace != "t" && slices.Contains(instanceIDs(x), instanceID) {
			inst = x
		}
	}
	if inst == nil {
		return
	}
	w.noteLimits([]*v1alpha1.ServiceInstance{inst})
	h := w.limits[inst.Namespace+"/"+inst.Name+"/"+string(inst.UID)]
	if !h.anyNamespace && !h.namespaces[ns] {
		w.fail("a bind %s of instance %s/%s for a binding of namespace %s reached the broker, which the instance's allowedNamespaces never listed (%v)",
			bindingID, inst.Namespace, inst.Name, ns, slices.Sorted(func(yield func(string) bool) {
				for n := range h.namespaces {
					if !yield(n) {
						return
					}
				}
			}))
	}
	if h.unlimited {
		return
	}
	making := map[string]bool{}
	for _, b := range w.ledger.Bindings() {
		if b.InstanceID == instanceID && b.ID != bindingID && w.counts(b.ID) {
			making[b.ID] = true
		}
	}
	for _, r := range w.ledger.InFlight() {
		if r.Method == fake.MethodBind && r.ID != bindingID && w.bindingInstance[r.ID] == instanceID && w.counts(r.ID) {
			making[r.ID] = true
		}
	}
	for _, op := range w.ops {
		if !op.over && !op.unbind && op.instance == instanceID && op.id != bindingID && w.counts(op.id) {
			making[op.id] = true
		}
	}
	held := len(making)
	if held >= int(h.most) {
		w.fail("a bind %s of instance %s/%s reached the broker, which holds or is making %d other bindings of it: more than any maxBindings it had (at most %d)",
			bindingID, inst.Namespace, inst.Name, held, h.most)
	}
}

// limitsTask is a dev user's change of an instance's limits, now and then.
func (w *world) limitsTask(e *engine.Engine, ns, inst string, follow engine.Follow) (string, func(context.Context) error, bool) {
	if !w.limitsOn || ns != "dev" || w.rng.IntN(5) > 0 {
		return "", nil, false
	}
	if w.rng.IntN(2) == 0 {
		n := int32(w.rng.IntN(3))
		return fmt.Sprintf("update %s --max-bindings %d", inst, n), func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, Limits: engine.Limits{MaxBindings: &n}, Follow: follow})
			return err
		}, true
	}
	list := [][]string{{}, {"dev"}, {"team-b"}, {"dev", "team-b"}}[w.rng.IntN(4)]
	return fmt.Sprintf("update %s --allowed-namespaces %v", inst, list), func(ctx context.Context) error {
		_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, Limits: engine.Limits{AllowedNamespaces: &list}, Follow: follow})
		return err
	}, true
}
