package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// restart is a new process of the engine over the same cluster and broker: nothing it
// learnt (the swept cluster, ids found its records') is kept.
func (f *fixture) restart() {
	old := f.engine.cfg
	f.engine = New(Config{
		Trust: old.Trust, Authorizer: old.Authorizer,
		Store: f.st, Brokers: fake.Brokers{Client: f.broker},
		Platform:         StaticPlatform{Cluster: "cluster-1", User: testUser},
		CatalogNamespace: storetest.CatalogNamespace, Holder: "test-2",
		Now:    func() time.Time { return f.now },
		Jitter: func() float64 { return 0.5 },
	})
}

// failMarkerReads makes every read of the swept cluster's marker (store.IDClaimsMarker)
// fail, as an API server that is briefly unavailable does, while *on.
func (f *fixture) failMarkerReads(on *bool) {
	f.cluster.Core.PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if *on && a.(clienttesting.GetAction).GetName() == store.IDClaimsMarker {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is unavailable"))
		}
		return false, nil, nil
	})
}

// A process that cannot read the marker of the swept cluster (a fault) does not take
// the cluster for one never swept: that would give the first claim of an id bound to
// nothing to the older of the records without one (the rule for records of earlier
// releases), and a tenant who rewrote an older record of hers to name a migrated
// record's id, whose claim failed, would take the id, in reconcile's first pass or in
// her record's own deprovision (its check before the call). The pass and the check wait for
// the next run instead; the migrated record's step then claims the id.
func TestIDClaimSwept_AMarkerThatCannotBeRead_GivesNoOlderRecordTheFirstClaim(t *testing.T) {
	for _, tc := range []struct {
		name string
		// pass: reconcile's first pass of the new process, else her record's step.
		pass bool
	}{
		{"reconcile's first pass", true},
		{"her record's deprovision", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			// An administrator's migration, verified under the trust policy.
			f.trustMigrations(true)
			f.st = writerStore(f, "admin", "tok")
			hers := f.unclaimedProvisioned("team-b", "hers", "hers-own-id")
			f.advance(time.Hour)
			f.sweepIDClaims()
			f.advance(time.Minute)
			migrated := f.migratedUnclaimed(ns, "old", svcatID)
			f.advance(time.Minute)
			f.rewriteToID("team-b", "hers", svcatID)
			fail := true
			f.failMarkerReads(&fail)
			f.restart()

			if tc.pass {
				_, idx, err := f.st.ListPendingWithIDs(ctx, "")
				assert.NilError(t, err)
				err = f.engine.SettleIDClaims(ctx, "", idx)
				assert.ErrorContains(t, err, "etcd is unavailable")
			} else {
				// Her deprovision: its check before the call would make her claim.
				assert.NilError(t, f.st.Instances().Delete(ctx, "team-b", "hers"))
				res, err := f.engine.StepInstance(ctx, f.getIn("team-b", "hers"))
				assert.NilError(t, err)
				assert.Assert(t, is.Contains(res.Message, "etcd is unavailable"), "%+v", res)
			}
			assert.Assert(t, !f.hasIDClaim(hers, svcatID), "her older, rewritten record got no claim")
			assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())

			fail = false
			f.restart()
			_, err := f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "old", UpdateRequest: UpdateRequest{Plan: "large"}})
			assert.NilError(t, err)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodUpdate)), 1, "%+v", f.get("old").Status.Conditions)
			assert.Assert(t, f.hasIDClaim(migrated, svcatID))
			assert.Assert(t, !f.hasIDClaim(hers, svcatID))
		})
	}
}

// Once the cluster is swept, a migrated record whose claim cannot be made (its namespace
// being deleted refuses new ConfigMaps, a quota) keeps its id against a record that is
// not a migrated one and has no claim either, however old: such a record makes no claim
// while the migrated one has none (lateMigratedUser), and a migrated record refused in
// turn would leave the id to nobody, the instance's deprovision refused for ever. A
// record with a claim still keeps the id.
func TestIDClaimSwept_AMigratedRecordWithoutAClaim_KeepsItsIDAgainstAnUnclaimedRewrittenRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		// deleted: the migrated record's step is its deprovision, else an update.
		deleted bool
		// claimed: her record has a claim (made before the migration): it keeps the id.
		claimed bool
		// unverified: no trust policy verifies the migration (else an administrator's,
		// under this release's policy): it takes no id from another namespace's record,
		// and neither record makes a claim until one of them stops naming the id.
		unverified bool
		// forged: under this release's policy, the annotation is a tenant's who may not
		// read the Service Catalog's objects: it gives no precedence, and the older record
		// keeps the id.
		forged bool
	}{
		{name: "deprovision", deleted: true},
		{name: "update"},
		{name: "deprovision, her record claimed the id first", deleted: true, claimed: true},
		{name: "deprovision, no trust policy", deleted: true, unverified: true},
		{name: "deprovision, the annotation forged by a tenant", deleted: true, forged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if !tc.unverified {
				// The administrator who migrated the record (or the tenant who forged its
				// annotation) runs the verbs too.
				user := "admin"
				if tc.forged {
					user = "mallory"
				}
				f.trustMigrations(true)
				f.st = writerStore(f, user, "tok")
				f.restart()
				sa := f.engine.cfg.Authorizer.(selfRBAC)
				sa.user = user
				f.engine.cfg.Authorizer = sa
				f.engine.cfg.Platform = StaticPlatform{Cluster: "cluster-1", User: &osb.OriginatingIdentity{Username: user, UID: "u-" + user}}
			}
			hers := f.unclaimedProvisioned("team-b", "hers", "hers-own-id")
			f.advance(time.Hour)
			f.sweepIDClaims()
			f.advance(time.Minute)
			if tc.claimed {
				f.rewriteToID("team-b", "hers", svcatID)
				f.engine.auth.ClaimOwnID(ctx, v1alpha1.KindServiceInstance, f.getIn("team-b", "hers"), svcatID)
				assert.Assert(t, f.hasIDClaim(hers, svcatID))
				f.advance(time.Minute)
			}
			migrated := f.migratedUnclaimed(ns, "old", svcatID)
			f.advance(time.Minute)
			if !tc.claimed {
				f.rewriteToID("team-b", "hers", svcatID)
			}
			// The migrated record's namespace refuses its claim.
			f.cluster.Core.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() == ns && strings.HasPrefix(a.(clienttesting.CreateAction).GetObject().(metav1.Object).GetName(), "catalog-idclaim-") {
					return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "configmaps"}, "", errors.New("namespace dev is being terminated"))
				}
				return false, nil, nil
			})

			var res Result
			if tc.deleted {
				assert.NilError(t, f.st.Instances().Delete(ctx, ns, "old"))
				res = f.step("old")
			} else {
				r, err := f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "old", UpdateRequest: UpdateRequest{Plan: "large"}})
				assert.NilError(t, err)
				res = r.Result
			}
			assert.Assert(t, !f.hasIDClaim(migrated, svcatID))
			if tc.unverified {
				assertRefused(t, f, res, ns, "old", ReasonRefusedIDInUse)
				msg := condition(f.getIn(ns, "old"), v1alpha1.ConditionRefused).Message
				assert.Assert(t, strings.Contains(msg, "nothing verifies"), msg)
				assert.Assert(t, strings.Contains(msg, "kubectl catalog init"), msg)
				assert.Assert(t, !f.hasIDClaim(hers, svcatID))
				assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())
				return
			}
			if tc.claimed || tc.forged {
				assertRefused(t, f, res, ns, "old", ReasonRefusedIDInUse)
				assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())
				return
			}
			method := fake.MethodUpdate
			if tc.deleted {
				method = fake.MethodDeprovision
				assert.Equal(t, res.State, StateDeleted, "%+v", res)
			}
			assert.Equal(t, len(f.broker.CallsTo(method)), 1, "%+v %+v", res, f.broker.Calls())
			for _, c := range f.broker.Calls() {
				assert.Equal(t, callInstanceID(c), svcatID)
			}
			assert.Assert(t, !f.hasIDClaim(hers, svcatID))
		})
	}
}
