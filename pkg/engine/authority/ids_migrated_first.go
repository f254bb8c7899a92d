package authority

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// migratedFirst is, for the check of rec (self: its use of the id), the records without
// an id claim that give way to rec although older: once the cluster is swept, when rec
// is a record "migrate svcat" wrote that has no claim either (its claim failed, or
// cannot be made: its namespace is being deleted), every record that is not a migrated
// one and has no claim. Such a record makes no claim while rec has none
// (lateMigratedUser): were rec refused in turn, nobody would ever send the id, and an
// instance's deprovision would be refused for ever. Its creationTimestamp says nothing
// once the cluster is swept (claimsSwept): its spec may have been rewritten to name the
// id since. A record with a claim keeps the id as always.
func (auth *Authority) migratedFirst(ctx context.Context, rec IDOwner, self store.IDUser) (func(store.IDUser) bool, error) {
	none := func(store.IDUser) bool { return false }
	if !self.Adopted.IsZero() || rec.GetAnnotations()[store.AnnotationMigratedFrom] == "" {
		return none, nil
	}
	swept, err := auth.claimsSwept(ctx)
	if err != nil || !swept {
		return none, err
	}
	return func(u store.IDUser) bool { return u.Adopted.IsZero() && !u.Migrated }, nil
}
