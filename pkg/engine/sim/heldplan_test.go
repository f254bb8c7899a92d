package sim

import (
	"encoding/json"
	"flag"
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// The plan and parameters the broker holds: with -sim.heldplan, once the faults stopped
// and reconcile ran until nothing was pending, every instance settled as ready (outside
// the tenant's namespace, its ids answered on the spec) has at the broker the plan its
// status.provisioned and its spec name, and the parameters its spec names. An update
// whose outcome the engine could not know (a 500 or a timeout to a PATCH it carried out
// or not) must stay uncertain until the broker says which plan it holds.

var heldPlan = flag.Bool("sim.heldplan", false, "check at quiescence that each settled instance's plan and parameters at the broker equal status.provisioned and the spec")

// heldParams are the parameters the broker holds for each instance id, as its
// provisions and updates left them (an update's parameters are merged in).
func (w *world) provisionedParams(id string, params json.RawMessage) {
	m := map[string]any{}
	if len(params) > 0 {
		_ = json.Unmarshal(params, &m)
	}
	w.params[id] = m
}

func (w *world) updatedParams(id string, params json.RawMessage) {
	if len(params) == 0 {
		return
	}
	m := map[string]any{}
	if json.Unmarshal(params, &m) != nil {
		return
	}
	cur := maps.Clone(w.params[id])
	if cur == nil {
		cur = map[string]any{}
	}
	maps.Copy(cur, m)
	w.params[id] = cur
}

// checkHeldPlans is the check of -sim.heldplan for the instances of insts.
func (w *world) checkHeldPlans(insts []*v1alpha1.ServiceInstance) {
	if !*heldPlan {
		return
	}
	for _, x := range insts {
		if x.Namespace == "t" || x.Spec.UserProvided != nil || !terminal(x, &x.Status.OperationStatus) || x.Status.Provisioned == nil {
			continue
		}
		if _, ready := readyMessage(&x.Status.OperationStatus); !ready {
			continue
		}
		id := x.CurrentExternalID()
		if t := w.book.ids[id]; t == nil || t.rogue || t.lied {
			continue
		}
		h, ok := w.ledger.Instance(id)
		if !ok {
			continue // invariant 7 speaks of an instance the broker does not hold
		}
		// A refused update (UpdateFailed) leaves the instance as status.provisioned
		// says, not as the spec does.
		refused := meta.IsStatusConditionTrue(x.Status.Conditions, v1alpha1.ConditionUpdateFailed)
		if h.PlanID != x.Status.Provisioned.PlanID || !refused && h.PlanID != x.Spec.PlanID {
			w.fail("instance %s/%s is settled as ready with plan %s (status.provisioned %s) but the broker holds it with plan %s (answers: %s)",
				x.Namespace, x.Name, x.Spec.PlanID, x.Status.Provisioned.PlanID, h.PlanID, w.answersFor(id))
		}
		want := map[string]any{}
		if x.Spec.Parameters != nil && len(x.Spec.Parameters.Raw) > 0 {
			_ = json.Unmarshal(x.Spec.Parameters.Raw, &want)
		}
		got := w.withoutSecretParams(w.params[id])
		if got == nil {
			got = map[string]any{}
		}
		if !refused && !reflect.DeepEqual(want, got) {
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			w.fail("instance %s/%s is settled as ready with parameters %s but the broker holds %s (answers: %s)",
				x.Namespace, x.Name, wj, gj, w.answersFor(id))
		}
	}
}
