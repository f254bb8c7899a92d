package sim

import "github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"

// noteUnmigratedUnderDelete remembers the svcat bindings, not migrated, that the broker
// holds when a DELETE of their instance reaches it, whatever the broker answers (a rogue
// answer that carries the deletion out returns before the check of held bindings): the
// broker keeps them under the deleted instance (unmigratedUnderDelete).
func (w *world) noteUnmigratedUnderDelete(l *fake.Ledger, instanceID string) {
	for _, h := range l.BindingsOf(instanceID) {
		w.unmigratedUnderDelete(h.ID)
	}
}
