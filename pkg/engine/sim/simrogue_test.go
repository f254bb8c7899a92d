package sim

import (
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// liedGone reports an id the broker said it held nothing under while it held it (a
// delete's 200 or 410, or a 4xx to every create of the id, while it had made it), with
// no create of the id since: the engine takes such an answer as the spec says and drops
// the id, and cannot know the broker keeps it (-sim.rogue -sim.asyncbind -sim.brokers
// seeds 1309 and 1824: a record deleted after the lie, its broker deregistered).
func (w *world) liedGone(id string) bool {
	t := w.book.ids[id]
	return t != nil && t.lied && t.gone
}

// otherProvision is the broker's 409 to a provision of an instance it holds under
// another plan: the OSB spec answers 200 only to an identical request, and 409 to one
// whose attributes differ. Answering 200 there, the model's broker kept the plan it held
// while the engine recorded the one it asked for, so the instance's later updates, which
// name no plan, were judged against the held plan's maintenance version and refused
// (422 MaintenanceInfoConflict) for ever (-sim.rogue -sim.asyncbind -sim.limits seed
// 1434: a provision re-sent with the plan an update wrote while it was pending).
func otherProvision(h fake.Held, r *osb.ProvisionRequest) (outcome, bool) {
	if r.PlanID == "" || r.PlanID == h.PlanID {
		return outcome{}, false
	}
	return outcome{what: fmt.Sprintf("409 (held with plan %s, %s asked)", h.PlanID, r.PlanID),
		err: httpErr(409, "", "the instance exists with other attributes")}, true
}
