package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// migratedUnclaimed is a settled instance "migrate svcat" wrote for id whose id claim
// is not made yet (the claim under way, or failed).
func (f *fixture) migratedUnclaimed(namespace, name, id string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	ctx := context.Background()
	inst, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance(name, namespace, id, func(x *v1alpha1.ServiceInstance) {
		x.Annotations = map[string]string{store.AnnotationMigratedFrom: "ServiceInstance/" + namespace + "/" + name + "/svcat-uid"}
	}))
	assert.NilError(f.t, err)
	inst.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
	inst.Status.ExternalID, inst.Status.Phase, inst.Status.ObservedGeneration = id, v1alpha1.PhaseReady, inst.Generation
	inst, err = f.st.Instances().Update(ctx, inst)
	assert.NilError(f.t, err)
	return inst
}

// Once the cluster is swept, a record without an id claim whose spec names an id bound
// to nothing that a record "migrate svcat" wrote uses, also without a claim yet (its
// claim under way or failed), makes no claim of its own: it is refused and sends
// nothing, and reconcile's next run makes the migrated record's claim, contested by
// records that are not migrated ones only. A tenant who rewrites a record of hers (of
// any age) to name the id between the migrated record and its claim keeps nothing. The
// migration is an administrator's, under a trust policy that verifies it (without one,
// see TestIDClaimMigrated_OnlyAVerifiedMigrationTakesAnotherNamespacesID).
func TestIDClaimMigrated_ARewrittenRecordDoesNotClaimFirstAMigratedRecordsID(t *testing.T) {
	for _, tc := range []struct {
		name string
		// migrated: the other record without a claim is one "migrate svcat" wrote.
		migrated bool
		// deleting: the migrated record is being deleted (its own step makes its claim).
		deleting bool
	}{
		{"a migrated record", true, false},
		{"a migrated record being deleted", true, true},
		{"a record that is not a migrated one: the first claim made keeps the id", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.trustMigrations(true)
			f.st = writerStore(f, "admin", "tok")
			f.sweepIDClaims()
			f.advance(time.Minute)
			var db *v1alpha1.ServiceInstance
			if tc.migrated {
				db = f.migratedUnclaimed(ns, "db", svcatID)
			} else {
				db = f.unclaimedProvisioned(ns, "db", svcatID)
			}
			if tc.deleting {
				assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
			}
			// Her record, rewritten to name the id (spec and status), before db's claim.
			hers := f.unclaimedProvisioned("team-b", "hers", svcatID)
			f.broker.ResetCalls()

			assert.NilError(t, f.st.Instances().Delete(ctx, "team-b", "hers"))
			res := f.stepRecord(hers)
			if !tc.migrated {
				// Unchanged: whoever claims first keeps an id no migrated record uses.
				assert.Equal(t, res.State, StateDeleted, "%+v", res)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1, "%+v", f.broker.Calls())
				return
			}
			assertRefused(t, f, res, "team-b", "hers", ReasonRefusedIDInUse)
			assert.Assert(t, !f.hasIDClaim(hers, svcatID), "her record made no claim")
			assert.Assert(t, strings.Contains(condition(f.getIn("team-b", "hers"), v1alpha1.ConditionRefused).Message, `"migrate svcat" wrote`))

			if tc.deleting {
				// Its own step makes its claim, and deprovisions it.
				assert.Equal(t, f.step("db").State, StateDeleted)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1, "%+v", f.broker.Calls())
				assert.Assert(t, !f.hasIDClaim(hers, svcatID), "her record made no claim")
				return
			}
			// Reconcile's next run makes the migrated record's claim.
			_, idx, err := f.st.ListPendingWithIDs(ctx, "")
			assert.NilError(t, err)
			assert.NilError(t, f.engine.SettleIDClaims(ctx, "", idx))
			assert.Assert(t, f.hasIDClaim(db, svcatID), "reconcile made the migrated record's claim")
			assert.Assert(t, !f.hasIDClaim(hers, svcatID))
			f.advance(time.Hour)
			res = f.stepRecord(hers)
			assertRefused(t, f, res, "team-b", "hers", ReasonRefusedIDInUse)
			assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())
		})
	}
}

func (f *fixture) getIn(namespace, name string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	inst, err := f.st.Instances().Get(context.Background(), namespace, name)
	assert.NilError(f.t, err)
	return inst
}
