package sim

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Relations that cross namespaces (-sim.crossns): the tenant also writes records in
// her own namespace that name other namespaces' instances (a binding of dev's instance,
// never shared with her, with junk in its status.retired and the catalog's finalizer),
// and team-b's user, who binds to what dev shares with him, edits his bindings' status
// after an unshare (junk or other namespaces' ids in status.retired). Checked besides:
// after every step, no deletion of an instance waits on a binding of a namespace the
// instance never granted; at quiescence, no binding of a namespace the instance no
// longer grants is still bound at the broker.

var crossNamespace = flag.Bool("sim.crossns", false, "let the tenant write records naming other namespaces' instances, and team-b's user edit his bindings' status after an unshare")

// grants are the namespaces each instance (by uid) has ever been shared with, as its
// records written so far said.
func (w *world) noteGrants(insts []*v1alpha1.ServiceInstance) {
	for _, x := range insts {
		g := w.grants[x.UID]
		if g == nil {
			g = map[string]bool{}
			w.grants[x.UID] = g
		}
		for _, ns := range x.Spec.SharedWith {
			g[ns] = true
		}
	}
}

// pin is the tenant writing, in her own namespace, a binding of an instance of dev
// (guessing its name), with junk in status.retired and the catalog's finalizer.
func (p *proc) pin(ctx context.Context) error {
	w := p.w
	inst := instanceNames[w.rng.IntN(len(instanceNames))]
	name := fmt.Sprintf("pin-%d", w.rng.IntN(2))
	b := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name, Finalizers: []string{store.Finalizer}},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: inst, InstanceNamespace: "dev", SecretName: name},
	}
	b.Status.Retired = []string{"not-mine"}
	p.record = p.ns + "/" + name
	w.logf("%-14s pins dev/%s with binding %s", p.name, inst, name)
	if cur, err := p.st.Bindings().Get(ctx, p.ns, name); err == nil {
		cur = cur.DeepCopy()
		cur.Spec.InstanceName, cur.Spec.InstanceNamespace = inst, "dev"
		cur.Status.Retired = append(cur.Status.Retired, "not-mine")
		_, err := p.st.Bindings().Update(ctx, cur)
		return err
	}
	_, err := p.st.Bindings().Create(ctx, b)
	return err
}

// editRetired is team-b's user editing the status of one of his bindings of dev's
// instances: junk, or an id of another namespace, in status.retired.
func (p *proc) editRetired(ctx context.Context) error {
	w := p.w
	binds, err := p.st.Bindings().List(ctx, p.ns, store.Filter{})
	if err != nil || len(binds) == 0 {
		return err
	}
	x := binds[w.rng.IntN(len(binds))].DeepCopy()
	id := fmt.Sprintf("junk-%d", w.rng.IntN(100))
	if _, _, bindings := w.foreignIDs(p.ns); len(bindings) > 0 && w.rng.IntN(2) == 0 {
		id = bindings[w.rng.IntN(len(bindings))]
	}
	x.Status.Retired = append(x.Status.Retired, id)
	p.record = x.Namespace + "/" + x.Name
	w.edited[p.record] = true
	w.forgedInto(x, id)
	w.logf("%-14s edits the status of binding %s: retired %s", p.name, x.Name, id)
	_, err = p.st.Bindings().Update(ctx, x)
	return err
}

var waitedFor = regexp.MustCompile(`waiting for its bindings \(([^)]*)\)`)

// checkWaits is checked after every step, for the instances written in it: a deletion
// waits only on bindings of its own namespace or of one it granted.
func (w *world) checkWaits(insts []*v1alpha1.ServiceInstance) {
	if !*crossNamespace {
		return
	}
	for _, x := range insts {
		if x.Namespace == "t" || x.DeletionTimestamp == nil {
			continue
		}
		c := meta.FindStatusCondition(x.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != engine.ReasonDeprovisionBlockedByExistingBindings {
			continue
		}
		m := waitedFor.FindStringSubmatch(c.Message)
		if m == nil {
			continue
		}
		for _, b := range strings.Split(m[1], ", ") {
			ns, _, ok := strings.Cut(b, "/")
			if ok && !w.grants[x.UID][ns] {
				w.fail("the deletion of instance %s/%s waits on binding %s, of a namespace the instance never granted: %s", x.Namespace, x.Name, b, c.Message)
			}
		}
	}
}

// checkRevoked is checked at quiescence: no binding of a namespace an instance no
// longer grants (the tenant's excepted) is bound at the broker.
func (w *world) checkRevoked(insts []*v1alpha1.ServiceInstance) {
	if !*crossNamespace {
		return
	}
	byID := map[string]*v1alpha1.ServiceInstance{}
	for _, x := range insts {
		if x.Namespace != "t" {
			byID[x.CurrentExternalID()] = x
		}
	}
	for _, h := range w.ledger.Bindings() {
		x := byID[h.InstanceID]
		if x == nil || h.Namespace == x.Namespace || h.Namespace == "t" || w.book.lied(h.ID) || slices.Contains(x.Spec.SharedWith, h.Namespace) {
			continue
		}
		w.fail("binding %s of namespace %s is still bound at the broker to instance %s/%s, which no longer grants that namespace (answers: %s)",
			h.ID, h.Namespace, x.Namespace, x.Name, w.answersFor(h.ID))
	}
}

// selfInflicted reports a record its own user forged (team-b's user editing his
// binding's status): it may stay unsettled, as the tenant's may; what it does to other
// namespaces is checked all the same.
func (w *world) selfInflicted(x metav1.Object) bool {
	return w.edited[x.GetNamespace()+"/"+x.GetName()]
}

// crossGrants are the grants of the world (by instance uid).
type crossGrants map[types.UID]map[string]bool
