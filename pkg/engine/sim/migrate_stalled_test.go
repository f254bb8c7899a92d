package sim

import "github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"

// stalledMigratedInstance reports a migrated instance that stalledUnverifiedMigration
// (migrate_unverified_test.go) holds: without a trust policy its claim and the tenant's
// record's are both refused, so its deprovision (or anything else under its id) waits
// for a person, and the migrate world's check of what svcat's object became leaves it
// out, as the check of settled records does.
func (w *world) stalledMigratedInstance(x *v1alpha1.ServiceInstance) bool {
	msg, _ := readyMessage(&x.Status.OperationStatus)
	return w.stalledUnverifiedMigration(x, msg)
}
