package sim

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// stalledUnverifiedMigration reports a record "migrate svcat" wrote (its migrated-from
// annotation) that waits, refused, because nothing verifies its migration (no trust
// policy in the world) and a record of the tenant's namespace uses its id without a
// claim (she rewrote it to name the id while the migration's claim failed): an
// unverified migration takes no id from another namespace's record, and the
// migration's hold-back keeps hers from claiming it, so neither is sent until one stops
// naming the id or an administrator installs the policy, under which the migration
// counts (docs/security.md, "OSB id ownership"). It waits for a person; nothing is sent
// under the id meanwhile, which the other invariants check.
func (w *world) stalledUnverifiedMigration(x metav1.Object, msg string) bool {
	if *trustPolicy || x.GetAnnotations()[store.AnnotationMigratedFrom] == "" ||
		!strings.Contains(msg, "nothing verifies that") || !strings.Contains(msg, `in namespace "t" uses the id without an id claim`) {
		return false
	}
	const lead = "refused to send OSB id "
	i := strings.Index(msg, lead)
	if i < 0 {
		return false
	}
	id, _, _ := strings.Cut(msg[i+len(lead):], " ")
	insts, err := w.checker.Instances().List(context.Background(), "t", store.Filter{})
	if err != nil {
		return false
	}
	for _, in := range insts {
		if in.Spec.ExternalID == id || in.Status.ExternalID == id {
			return true
		}
	}
	return false
}

// stalledMigrationIn reports an instance of namespace ns that stalledUnverifiedMigration
// holds: it waits for a person, and the namespace's deletion with it.
func (w *world) stalledMigrationIn(ns string) bool {
	insts, err := w.checker.Instances().List(context.Background(), ns, store.Filter{})
	if err != nil {
		return false
	}
	for _, in := range insts {
		if msg, _ := readyMessage(&in.Status.OperationStatus); w.stalledUnverifiedMigration(in, msg) {
			return true
		}
	}
	return false
}
