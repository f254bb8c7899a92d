package sim

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// An instance's limits (-sim.limits): dev's users provision instances with
// --max-bindings 1 or 2 and --allowed-namespaces (dev, team-b, both or neither), change
// both with update (--max-bindings 0, 1 or 2), and bind four bindings to one instance,
// while team-b's user binds to what is shared with him.
//
// Checked besides, as each bind of a new OSB id reaches the broker, against the versions
// of the instance's spec in force at some time since the binding's record was written
// (the engine checks the limits after that): the binding's namespace is one of them
// allowed (every namespace, while allowedNamespaces was empty), and the broker holds (or
// is creating) fewer other bindings of the instance (but those it lied about or an
// --abandon left there) than the largest of their maxBindings (none while one had no
// limit); the ids of one binding record (a rotation's new id and the one it replaces)
// are one binding, and a binding of another namespace the instance no longer lets bind
// (being revoked) is none. A limit lowered while binds race may leave more bindings than the new limit
// (they stay; no new one is made), never more than a limit in force since.

var limitsWorld = flag.Bool("sim.limits", false, "let dev's users change their instances' maxBindings and allowedNamespaces while bindings are made")

// withLimits reports whether seed changes instances' limits: one seed in eight, and
// every seed with -sim.limits.
func withLimits(seed uint64) bool {
	r := rand.New(rand.NewPCG(seed^0x3c6ef372fe94f82b, seed))
	return r.IntN(8) == 0 || *limitsWorld
}

// limitVersion is what one version of an instance record's spec allowed, seen at step.
type limitVersion struct {
	step         int
	anyNamespace bool
	namespaces   []string
	// most is maxBindings; 0: no limit.
	most int32
}

// limitHistory are the versions of an instance record's limits, in the order seen.
type limitHistory struct {
	versions []limitVersion
}

// noteLimits records the limits of the instances' specs as they are now, and the
// step each binding record was first seen at (with -sim.limits, and with -sim.upcreds,
// whose users change the limits too).
func (w *world) noteLimits(insts []*v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding) {
	if !w.limitsOn && !*upCreds {
		return
	}
	for _, x := range insts {
		key := x.Namespace + "/" + x.Name + "/" + string(x.UID)
		h := w.limits[key]
		if h == nil {
			h = &limitHistory{}
			w.limits[key] = h
		}
		v := limitVersion{step: w.steps, anyNamespace: len(x.Spec.AllowedNamespaces) == 0, namespaces: slices.Clone(x.Spec.AllowedNamespaces)}
		if x.Spec.MaxBindings != nil {
			v.most = *x.Spec.MaxBindings
		}
		if n := len(h.versions); n > 0 {
			last := h.versions[n-1]
			if last.anyNamespace == v.anyNamespace && slices.Equal(last.namespaces, v.namespaces) && last.most == v.most {
				continue
			}
		}
		h.versions = append(h.versions, v)
	}
	for _, b := range binds {
		if _, ok := w.bindingSeen[string(b.UID)]; !ok {
			w.bindingSeen[string(b.UID)] = w.steps
		}
	}
}

// since are the versions of h in force at some time from step on.
func (h *limitHistory) since(step int) []limitVersion {
	i := len(h.versions) - 1
	for i > 0 && h.versions[i].step > step {
		i--
	}
	return h.versions[max(i, 0):]
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
// --abandon left there, nor one a newer release made, in a format this release cannot
// read (release_test.go; docs/engine.md, "Known limits").
func (w *world) counts(id string) bool {
	t := w.book.ids[id]
	return !w.abandoned[id] && (t == nil || !t.rogue && !t.lied) && !w.nextReleaseOwns(id)
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
	_, binds := w.records()
	w.noteLimits([]*v1alpha1.ServiceInstance{inst}, binds)
	// The binding's record, and the step it was first seen at: the engine checks the
	// limits after it was written, so one of the versions since bounds the bind.
	// The ids of the binding's own record (the credentials a rotation replaces) hold its
	// place, not others'.
	from, own := w.steps, []string{bindingID}
	rotation := false
	for _, b := range binds {
		if b.Namespace == ns && slices.Contains(bindingIDs(b), bindingID) {
			from, own = w.bindingSeen[string(b.UID)], bindingIDs(b)
			// A rotation's new id takes its predecessor's place: it adds no binding,
			// even to an instance over a limit lowered since (rebind_test.go).
			rotation = b.Status.Bound != nil && b.Status.Bound.BindingID != bindingID && b.RotatedFrom() != nil
		}
	}
	versions := w.limits[inst.Namespace+"/"+inst.Name+"/"+string(inst.UID)].since(from)
	allowed, most, limited := false, int32(0), true
	var lists []string
	for _, v := range versions {
		allowed = allowed || v.anyNamespace || slices.Contains(v.namespaces, ns)
		lists = append(lists, fmt.Sprint(v.namespaces))
		if v.most == 0 {
			limited = false
		}
		most = max(most, v.most)
	}
	// A bound binding of the instance's own namespace stays, and is rotated, when the
	// allowed namespaces leave that namespace out (authority.OwnBindingStays): only new
	// binds of it are refused.
	if !allowed && !(rotation && ns == inst.Namespace) {
		w.fail("a bind %s of instance %s/%s for a binding of namespace %s reached the broker, which none of the instance's allowedNamespaces since the binding was written listed (%s)",
			bindingID, inst.Namespace, inst.Name, ns, strings.Join(lists, ", "))
	}
	if !limited || rotation {
		return
	}
	making := map[string]bool{}
	for _, b := range w.ledger.Bindings() {
		if b.InstanceID == instanceID && !slices.Contains(own, b.ID) && w.counts(b.ID) {
			making[b.ID] = true
		}
	}
	for _, r := range w.ledger.InFlight() {
		if r.Method == fake.MethodBind && !slices.Contains(own, r.ID) && w.bindingInstance[r.ID] == instanceID && w.counts(r.ID) {
			making[r.ID] = true
		}
	}
	for _, op := range w.ops {
		if !op.over && !op.unbind && op.instance == instanceID && !slices.Contains(own, op.id) && w.counts(op.id) {
			making[op.id] = true
		}
	}
	// A binding record holds one place whatever the ids the broker holds or makes of it:
	// a rotation's new id and the one it replaces keep the one place (docs/instances.md).
	// A binding of another namespace the instance no longer lets bind holds no place: it
	// is being revoked, and a namespace affects the instance only through a grant in force
	// (docs/security.md), though the broker holds it until it is unbound.
	places := map[string]bool{}
	for id := range making {
		place := "id " + id
		for _, b := range binds {
			if slices.Contains(bindingIDs(b), id) {
				place = "record " + string(b.UID)
				if b.Namespace != inst.Namespace && !authority.Lets(inst, b.Namespace) {
					place = ""
				}
			}
		}
		if place != "" {
			places[place] = true
		}
	}
	held := len(places)
	if held >= int(most) {
		w.fail("a bind %s of instance %s/%s reached the broker, which holds or is making %d other bindings of it: more than any maxBindings it had since the binding was written (at most %d)",
			bindingID, inst.Namespace, inst.Name, held, most)
	}
}

// limitsTask is, a third of the time, a dev user's task of the limits' world: a
// provision with limits, a change of the limits, or a bind of one of four bindings.
func (w *world) limitsTask(e *engine.Engine, ns, inst string, follow engine.Follow) (string, func(context.Context) error, bool) {
	if !w.limitsOn || ns != "dev" || w.rng.IntN(3) > 0 {
		return "", nil, false
	}
	lists := [][]string{{}, {"dev"}, {"team-b"}, {"dev", "team-b"}}
	switch w.rng.IntN(4) {
	case 0:
		n, list := int32(1+w.rng.IntN(2)), lists[w.rng.IntN(len(lists))]
		return fmt.Sprintf("provision %s --max-bindings %d --allowed-namespaces %v", inst, n, list), func(ctx context.Context) error {
			_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: ns, Name: inst, Class: "db", Plan: "small",
				Limits: engine.Limits{MaxBindings: &n, AllowedNamespaces: &list}, Follow: follow})
			return err
		}, true
	case 1:
		n := int32(w.rng.IntN(3))
		return fmt.Sprintf("update %s --max-bindings %d", inst, n), func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, Limits: engine.Limits{MaxBindings: &n}, Follow: follow})
			return err
		}, true
	case 2:
		list := lists[w.rng.IntN(len(lists))]
		return fmt.Sprintf("update %s --allowed-namespaces %v", inst, list), func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, Limits: engine.Limits{AllowedNamespaces: &list}, Follow: follow})
			return err
		}, true
	}
	bind := fmt.Sprintf("app-%d", w.rng.IntN(4))
	return "bind " + bind + " to " + inst, func(ctx context.Context) error {
		_, err := e.Bind(ctx, engine.BindRequest{Namespace: ns, Instance: inst, Name: bind, Follow: follow})
		return err
	}, true
}

// letSince reports whether one of the versions of inst's spec in force since binding b's
// record was first seen let b's namespace bind (its allowed namespaces were empty or
// named it).
func (w *world) letSince(inst *v1alpha1.ServiceInstance, b *v1alpha1.ServiceBinding) bool {
	h := w.limits[inst.Namespace+"/"+inst.Name+"/"+string(inst.UID)]
	if h == nil {
		return false
	}
	for _, v := range h.since(w.bindingSeen[string(b.UID)]) {
		if v.anyNamespace || slices.Contains(v.namespaces, b.Namespace) {
			return true
		}
	}
	return false
}
