package authority

import (
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// lateMigratedUser finds, once the cluster is swept, a record other than rec that
// "migrate svcat" wrote (store.IDUser.Migrated; being deleted too: its own step then
// makes its claim), using OSB id bound to nothing without
// an id claim yet, when rec is not such a record itself: the migration writes its
// record, then the record's claim, and a record rewritten to name the id between the
// two (or after a claim that failed) would otherwise claim it first and take the id
// from the namespace that held it in Service Catalog. rec then makes no claim and is
// refused until the migrated record has its claim (made by the migration, its own
// step, or reconcile's next run: claimLoneMigrated, which records without a claim that
// are not migrated ones do not hold back). A record whose migrated annotation is
// forged by its namespace's writer gets nothing from it but the rule of the first
// claim made, as any record without a claim once the cluster is swept.
func lateMigratedUser(rec IDOwner, users []store.IDUser) (store.IDUser, bool) {
	if rec.GetAnnotations()[store.AnnotationMigratedFrom] != "" {
		return store.IDUser{}, false
	}
	for _, u := range users {
		if u.UID != rec.GetUID() && u.Migrated && u.Adopted.IsZero() {
			return u, true
		}
	}
	return store.IDUser{}, false
}

func lateMigratedRefusal(kind string, rec IDOwner, id string, u store.IDUser) error {
	what := kindWord(kind)
	return Refused(ReasonRefusedIDInUse, "refused to send OSB id %s for %s %q in namespace %q: %s %q in namespace %q, which \"migrate svcat\" wrote, uses it and its id claim is not made yet; it is made by reconcile's next run, and the id is that record's. "+
		"If this record's spec was changed to name it, change spec.externalID back, or drop this record without calling the broker (%s)",
		id, what, rec.GetName(), rec.GetNamespace(), what, u.Name, u.Namespace, hint.Quoted(rec.GetNamespace(), map[string]string{"instance": "deprovision", "binding": "unbind"}[what], "--abandon", rec.GetName()))
}
