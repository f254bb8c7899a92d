package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Once reconcile's first pass has claimed every record of the cluster (the marker
// store.IDClaimsMarker), a record without a claim is one whose writer could not make it
// (a migration interrupted between the record and its claim), or one whose spec was
// rewritten since to name the id: its creationTimestamp says nothing about when it
// took the id, and it gets no claim before the record whose step claims first. A tenant
// who rewrites an older record of hers to name a migrated id whose claim is late keeps
// nothing: the migrated record's own step claims it, and her record is refused.
func TestIDClaimLate_AnOlderRewrittenRecordWithoutAClaim_DoesNotTakeALateClaimedID(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hersBeforeSweep: her record exists when the first pass runs (it gets the
		// claim of the id it named then).
		hersBeforeSweep bool
		// deleted: the migrated record's step is its deprovision, else a touch.
		deleted bool
	}{
		{"her record older than the first pass, the migrated record deprovisioned", true, true},
		{"her record older than the first pass, the migrated record updated", true, false},
		{"her record younger than the first pass, the migrated record deprovisioned", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if !tc.hersBeforeSweep {
				f.sweepIDClaims()
				f.advance(time.Minute)
			}
			hers, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("hers", "team-b", "hers-own-id", nil))
			assert.NilError(t, err)
			f.advance(time.Hour)
			if tc.hersBeforeSweep {
				f.sweepIDClaims()
				f.advance(time.Minute)
			}
			// The migration wrote its record and was interrupted before the claim.
			db := f.unclaimedProvisioned(ns, "db", svcatID)
			assert.Assert(t, !f.hasIDClaim(db, svcatID))
			f.advance(time.Minute)
			f.rewriteToID("team-b", "hers", svcatID)

			var res Result
			if tc.deleted {
				assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
				res = f.step("db")
				assert.Equal(t, res.State, StateDeleted, "%+v", res)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
			} else {
				_, err := f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Plan: "large"}})
				assert.NilError(t, err)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodUpdate)), 1, "%+v", f.get("db").Status.Conditions)
				assert.Assert(t, f.hasIDClaim(db, svcatID))
			}
			for _, c := range f.broker.Calls() {
				assert.Equal(t, callInstanceID(c), svcatID)
			}
			assert.Assert(t, !f.hasIDClaim(hers, svcatID), "her record got no claim before the migrated one's")

			f.broker.ResetCalls()
			res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "hers"}})
			if tc.deleted {
				return // released at the broker and by every record: bound to nothing again
			}
			assertRefused(t, f, res, "team-b", "hers", ReasonRefusedIDInUse)
			assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())
		})
	}
}

// sweepIDClaims runs reconcile's first pass over every namespace, which marks the
// cluster done.
func (f *fixture) sweepIDClaims() {
	f.t.Helper()
	ctx := context.Background()
	_, idx, err := f.st.ListPendingWithIDs(ctx, "")
	assert.NilError(f.t, err)
	assert.NilError(f.t, f.engine.SettleIDClaims(ctx, "", idx))
	swept, err := f.st.IDClaimsSwept(ctx, f.engine.cfg.CatalogNamespace)
	assert.NilError(f.t, err)
	assert.Assert(f.t, swept)
}

// dropIDClaim deletes the id claim of instance name of namespace ns for id, as a
// migration interrupted between its record and its claim leaves it.
func (f *fixture) dropIDClaim(name, id string) {
	f.t.Helper()
	ctx := context.Background()
	inst := f.get(name)
	cms := f.cluster.Core.CoreV1().ConfigMaps(ns)
	claim, err := cms.Get(ctx, store.IDClaimName(v1alpha1.KindServiceInstance, inst.UID, id), metav1.GetOptions{})
	assert.NilError(f.t, err)
	claim.Finalizers = nil
	_, err = cms.Update(ctx, claim, metav1.UpdateOptions{})
	assert.NilError(f.t, err)
	assert.NilError(f.t, cms.Delete(ctx, claim.Name, metav1.DeleteOptions{}))
	assert.Assert(f.t, !f.hasIDClaim(inst, id))
}

// An instance without its id claim for the id bound to nothing its spec names, being
// deleted under a binding, makes its claim while it waits for the binding: the
// binding's unbind, which sends the instance's id only once the instance has its claim
// (CheckTargetID), goes on, and so does the deprovision after it. Without it neither
// ever would, and the first other record to claim the id would take it.
func TestIDClaimLate_AnInstanceWaitingForItsBindings_MakesItsClaim(t *testing.T) {
	for _, swept := range []bool{false, true} {
		t.Run(map[bool]string{false: "before the first pass", true: "after the first pass"}[swept], func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.adoptedInstance("db")
			f.createBinding("app", nil)
			assert.Equal(t, f.driveBinding("app").State, StateSettled)
			if swept {
				f.sweepIDClaims()
			}
			f.dropIDClaim("db", svcatID)
			f.broker.ResetCalls()

			assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
			res := f.step("db")
			assert.Equal(t, res.State, StateWaiting, "%+v", res)
			assert.Assert(t, f.hasIDClaim(f.get("db"), svcatID), "the instance made its claim while waiting")
			assert.Equal(t, f.driveBinding("app").State, StateDeleted, "%+v", f.broker.Calls())
			assert.Equal(t, f.step("db").State, StateDeleted)
			calls := f.broker.Calls()
			assert.Equal(t, len(calls), 2, "%+v", calls)
			assert.Equal(t, calls[0].Method, fake.MethodUnbind)
			assert.Equal(t, calls[1].Method, fake.MethodDeprovision)
			for _, c := range calls {
				assert.Equal(t, callInstanceID(c), svcatID)
			}
		})
	}
}

// An unbind sends the instance's id without the instance's id claim (one that cannot be
// made: a namespace being deleted refuses every new ConfigMap), unless another record
// adopted the id first: it only takes away the binding, whose own id is checked as
// always. A bind still needs the claim
// (TestIDsWindow_AForgedProvisionedStatusWithoutAClaimIsNotBindable).
func TestIDClaimLate_AnUnbindUnderAnInstanceWithoutAClaim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other bool // a record of team-b claimed the id first
	}{
		{"no other record uses the id", false},
		{"another record claimed the id first", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.adoptedInstance("db")
			f.createBinding("app", nil)
			assert.Equal(t, f.driveBinding("app").State, StateSettled)
			f.sweepIDClaims()
			f.dropIDClaim("db", svcatID)
			if tc.other {
				f.advance(time.Minute)
				hers := f.unclaimedProvisioned("team-b", "hers", svcatID)
				_, _, err := f.st.ClaimExternalID(ctx, v1alpha1.KindServiceInstance, hers, svcatID)
				assert.NilError(t, err)
			}
			f.broker.ResetCalls()

			assert.NilError(t, f.st.Bindings().Delete(ctx, ns, "app"))
			// Reconcile, a process that never saw the instance's id its own.
			rec := f.otherProcess("reconcile", 0)
			res, err := rec.StepBinding(ctx, f.getBinding("app"))
			assert.NilError(t, err)
			if tc.other {
				assert.Assert(t, res.Refused, "%+v", res)
				assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())
				return
			}
			assert.Equal(t, f.driveWith(rec, true, "app").State, StateDeleted, "%+v", res)
			calls := f.broker.CallsTo(fake.MethodUnbind)
			assert.Equal(t, len(calls), 1, "%+v", f.broker.Calls())
			assert.Equal(t, callInstanceID(calls[0]), svcatID)
		})
	}
}

// A record "migrate svcat" wrote whose id claim failed (a fault, the run killed between
// the record and its claim) gets it at reconcile's next run, when no other record uses
// the id but records without a claim that are not migrated ones (whose claims wait for
// it: lateMigratedUser): before a tenant who later names the id can claim it first.
// When another migrated record, or one with a claim, uses it too, the pass leaves it to
// the first of their own steps. Without a trust policy that verifies the migration, a
// record of another namespace that uses the id contests it too
// (TestIDClaimMigrated_OnlyAVerifiedMigrationTakesAnotherNamespacesID).
func TestIDClaimLate_ReconcileClaimsAMigratedRecordsLateClaim(t *testing.T) {
	for _, tc := range []struct {
		name     string
		contest  bool // a tenant's record names the id too, without a claim
		migrated bool // hers carries the migrated annotation too
		want     bool
		// otherNS: hers is of another namespace.
		otherNS bool
	}{
		{"the only record that uses the id", false, false, true, false},
		{"another record, not a migrated one, uses the id too", true, false, true, false},
		{"another record of another namespace, not a migrated one, uses the id too, and nothing verifies the migration", true, false, false, true},
		{"another migrated record uses the id too", true, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.sweepIDClaims()
			f.advance(time.Minute)
			migrated, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("old", ns, svcatID, func(inst *v1alpha1.ServiceInstance) {
				inst.Annotations = map[string]string{store.AnnotationMigratedFrom: "servicecatalog.k8s.io/ServiceInstance/dev/old/uid-1"}
			}))
			assert.NilError(t, err)
			var hers *v1alpha1.ServiceInstance
			hersNS := ns
			if tc.otherNS {
				hersNS = "team-b"
			}
			if tc.contest && tc.migrated {
				hers = f.migratedUnclaimed(hersNS, "hers", svcatID)
			} else if tc.contest {
				hers = f.unclaimedProvisioned(hersNS, "hers", svcatID)
			}

			_, idx, err := f.st.ListPendingWithIDs(ctx, "")
			assert.NilError(t, err)
			assert.NilError(t, f.engine.SettleIDClaims(ctx, "", idx))

			assert.Equal(t, f.hasIDClaim(migrated, svcatID), tc.want)
			if hers != nil {
				assert.Assert(t, !f.hasIDClaim(hers, svcatID))
			}
		})
	}
}

// A first pass that may not make a claim (a namespace being deleted refuses new
// ConfigMaps) does not mark the cluster: a record without a claim there is one of an
// earlier release, which keeps its precedence until its claim is made.
func TestIDClaimLate_AFirstPassWithAClaimRefused_DoesNotMarkTheCluster(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	old := f.unclaimedProvisioned("team-b", "old", svcatID)
	refuse := true
	f.cluster.Core.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if refuse && a.GetNamespace() == "team-b" && strings.HasPrefix(a.(clienttesting.CreateAction).GetObject().(metav1.Object).GetName(), "catalog-idclaim-") {
			return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "configmaps"}, "", errors.New("namespace team-b is being terminated"))
		}
		return false, nil, nil
	})

	_, idx, err := f.st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	assert.NilError(t, f.engine.SettleIDClaims(ctx, "", idx))
	swept, err := f.st.IDClaimsSwept(ctx, f.engine.cfg.CatalogNamespace)
	assert.NilError(t, err)
	assert.Assert(t, !swept, "a claim was refused: the cluster is not marked")

	refuse = false
	_, idx, err = f.st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	assert.NilError(t, f.engine.SettleIDClaims(ctx, "", idx))
	assert.Assert(t, f.hasIDClaim(old, svcatID))
	swept, err = f.st.IDClaimsSwept(ctx, f.engine.cfg.CatalogNamespace)
	assert.NilError(t, err)
	assert.Assert(t, swept)
}
