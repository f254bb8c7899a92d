package sim

import (
	"context"
	"flag"
	"maps"
	"slices"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// File projections (-sim.files): the users' binds of brokered instances (dev's own, and
// team-b's of what dev shares) also project the binding's Secret as files into the
// workloads of their namespace (Deployment web, StatefulSet api, both, or none). Workloads
// are objects of the simulated API server, as with -sim.upshare (workloads_test.go).
//
// Checked after every step: every projection a workload holds is of a binding record of
// its own namespace (being deleted, perhaps), of that binding's own Secret, and one the
// binding's spec names or its status lists as projected or projecting: a workload never
// gets files nobody asked for, nor another binding's or namespace's Secret. At
// quiescence: a workload holds a projection only of a binding that is there, not being
// deleted, whose spec names it; and a binding settled as ready holds in its workloads
// exactly the projections its status.projected lists.

var fileProjections = flag.Bool("sim.files", false, "let the users' binds also project the binding's Secret as files into workloads")

// fileProjections are the projections of a bind of -sim.files (nil without it).
func (w *world) fileProjections() []v1alpha1.WorkloadProjection {
	if !*fileProjections {
		return nil
	}
	return [][]v1alpha1.WorkloadProjection{
		nil,
		{{Kind: "Deployment", Name: "web"}},
		{{Kind: "StatefulSet", Name: "api"}},
		{{Kind: "Deployment", Name: "web"}, {Kind: "StatefulSet", Name: "api"}},
	}[w.rng.IntN(4)]
}

func isFiles(p v1alpha1.WorkloadProjection) bool { return !p.Env && p.EnvPrefix == "" }

// checkFiles is checked after every step, and at quiescence (quiet).
func (w *world) checkFiles(quiet bool) {
	if !*fileProjections {
		return
	}
	ctx := context.Background()
	held := map[string][]v1alpha1.WorkloadProjection{}
	held0 := w.heldWorkloads() // workloads_test.go
	for _, k := range slices.Sorted(maps.Keys(held0)) {
		h := held0[k]
		if h.namespace == "t" || !isFiles(h.w) {
			continue
		}
		held[h.namespace+"/"+h.binding] = append(held[h.namespace+"/"+h.binding], h.w)
		b, err := w.checker.Bindings().Get(ctx, h.namespace, h.binding)
		if err != nil {
			w.fail("%s %s of namespace %s holds files of Secret %s of binding %s, which is gone (%v)", h.w.Kind, h.w.Name, h.namespace, h.secret, h.binding, err)
			continue
		}
		if h.secret != b.Spec.SecretName {
			w.fail("%s %s of namespace %s holds files of Secret %s for binding %s, whose Secret is %s", h.w.Kind, h.w.Name, h.namespace, h.secret, h.binding, b.Spec.SecretName)
		}
		asked := slices.Contains(b.Spec.Projections, h.w)
		if !asked && !quiet && (slices.Contains(b.Status.Projected, h.w) || slices.Contains(b.Status.Projecting, h.w)) {
			asked = true // on its way out, as the status says
		}
		if !asked || quiet && b.DeletionTimestamp != nil {
			w.fail("%s %s of namespace %s holds files of binding %s, which does not ask for them (spec %v, projected %v, deleting %t)",
				h.w.Kind, h.w.Name, h.namespace, h.binding, b.Spec.Projections, b.Status.Projected, b.DeletionTimestamp != nil)
		}
	}
	if !quiet {
		return
	}
	_, binds := w.records()
	for _, b := range binds {
		if b.Namespace == "t" || w.edited[b.Namespace+"/"+b.Name] || !terminal(b, &b.Status.OperationStatus) {
			continue
		}
		if _, ready := readyMessage(&b.Status.OperationStatus); !ready {
			continue
		}
		var want []v1alpha1.WorkloadProjection
		for _, p := range b.Status.Projected {
			if isFiles(p) {
				want = append(want, p)
			}
		}
		got := held[b.Namespace+"/"+b.Name]
		for _, p := range want {
			if !slices.Contains(got, p) {
				w.fail("binding %s/%s is ready with %s %s projected (status.projected), and the workload holds no files of it", b.Namespace, b.Name, p.Kind, p.Name)
			}
		}
	}
}
