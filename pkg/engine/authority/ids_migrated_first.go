package authority

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
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
//
// rec's annotation counts as migrationOf says: a migration the trust policy verifies
// goes first over every such record; one nothing verifies (no policy, or an earlier
// release's) only over those of its own namespace (it takes no id from another
// namespace's record: unverifiedTake); an annotation the policy does not verify (a
// forged one) gives nothing.
func (auth *Authority) migratedFirst(ctx context.Context, kind string, rec IDOwner, self store.IDUser) (func(store.IDUser) bool, error) {
	none := func(store.IDUser) bool { return false }
	r, ok := rec.(v1alpha1.Record)
	if !ok || !self.Adopted.IsZero() || rec.GetAnnotations()[store.AnnotationMigratedFrom] == "" {
		return none, nil
	}
	swept, err := auth.claimsSwept(ctx)
	if err != nil || !swept {
		return none, err
	}
	m, err := auth.migrationOf(ctx, kind, r)
	if err != nil || m == notMigrated {
		return none, err
	}
	return func(u store.IDUser) bool {
		return u.Adopted.IsZero() && !u.Migrated && (m == migratedVerified || u.Namespace == rec.GetNamespace())
	}, nil
}
