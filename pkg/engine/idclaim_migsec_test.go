package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// svcatReaders may read the Service Catalog's objects in the namespaces of these tests:
// who may run "migrate svcat" there.
var svcatReaders = []string{"admin"}

// trustMigrations puts a trust policy in force with token "tok": this release's, which
// admits the migrated-from annotation only from the record's author or a Service Catalog
// reader (covers), or an earlier release's. svcatReaders may read the Service Catalog's
// objects in ns and team-b; the runner is alice, who may not.
func (f *fixture) trustMigrations(covers bool) {
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok", MigratedFrom: covers}}
	allow := map[string][]authorizationv1.ResourceAttributes{}
	for _, user := range svcatReaders {
		for _, n := range []string{ns, "team-b"} {
			for _, res := range []string{"serviceinstances", "servicebindings"} {
				allow[user] = append(allow[user], authorizationv1.ResourceAttributes{Namespace: n, Verb: "get", Group: "servicecatalog.k8s.io", Resource: res})
			}
		}
	}
	f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{allow: allow}, user: testUser.Username}
}

// annotatedUnclaimed is a settled instance that st wrote (as its user, stamped with its
// token), whose spec names id bound to nothing without an id claim, annotated as one
// "migrate svcat" wrote when migrated.
func (f *fixture) annotatedUnclaimed(st *store.Store, namespace, name, id string, migrated bool) *v1alpha1.ServiceInstance {
	f.t.Helper()
	ctx := context.Background()
	inst, err := st.Instances().Create(store.WithIntent(ctx), forgedInstance(name, namespace, id, func(x *v1alpha1.ServiceInstance) {
		if migrated {
			x.Annotations = map[string]string{store.AnnotationMigratedFrom: "ServiceInstance/" + namespace + "/" + name + "/svcat-uid"}
		}
	}))
	assert.NilError(f.t, err)
	inst.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
	inst.Status.ExternalID, inst.Status.Phase, inst.Status.ObservedGeneration = id, v1alpha1.PhaseReady, inst.Generation
	inst, err = st.Instances().Update(ctx, inst)
	assert.NilError(f.t, err)
	return inst
}

// lateClaims runs reconcile's pass over the claims of every namespace.
func (f *fixture) lateClaims() {
	f.t.Helper()
	ctx := context.Background()
	_, idx, err := f.st.ListPendingWithIDs(ctx, "")
	assert.NilError(f.t, err)
	assert.NilError(f.t, f.engine.SettleIDClaims(ctx, "", idx))
}

// A record annotated as migrated from the Service Catalog ("migrated") and a record of
// another namespace ("other", not annotated) use one OSB id bound to nothing, neither
// with its id claim, once the cluster is swept. What the annotation counts for depends
// on who wrote it and on the trust policy:
//   - this release's policy, the migrated record's verified author a Service Catalog
//     reader (an administrator's "migrate svcat" whose claim failed): it keeps its
//     precedence: the other record makes no claim, reconcile makes the migrated one's,
//     and the other is refused after;
//   - this release's policy, the annotation forged by a tenant on a record of her own
//     (she may not read the Service Catalog's objects): it counts for nothing: reconcile
//     makes no claim for it, the other record's step makes its claim and calls, and hers
//     is refused naming the other as the id's;
//   - an earlier release's policy, or none: nothing verifies the annotation, so it takes
//     no id from another namespace's record: reconcile makes no claim for it, its own
//     step makes none (refused, naming the other record and the fix), and it still holds
//     the other's claim back (the migration's claim under way); in one namespace,
//     reconcile makes the migrated record's claim as before.
func TestIDClaimMigrated_OnlyAVerifiedMigrationTakesAnotherNamespacesID(t *testing.T) {
	for _, tc := range []struct {
		name string
		// policy: a trust policy is in force; covers: it is this release's.
		policy, covers bool
		// author writes the migrated record.
		author string
		// sameNamespace: the other record is of the migrated one's namespace.
		sameNamespace bool
		// verified: the annotation counts in full.
		verified bool
	}{
		{name: "this release's policy, a migration by a Service Catalog reader", policy: true, covers: true, author: "admin", verified: true},
		{name: "this release's policy, a migration by a Service Catalog reader, one namespace", policy: true, covers: true, author: "admin", sameNamespace: true, verified: true},
		{name: "this release's policy, an annotation forged by a tenant", policy: true, covers: true, author: "mallory"},
		{name: "this release's policy, an annotation forged by a tenant, one namespace", policy: true, covers: true, author: "mallory", sameNamespace: true},
		{name: "an earlier release's policy", policy: true, author: "admin"},
		{name: "an earlier release's policy, one namespace", policy: true, author: "admin", sameNamespace: true},
		{name: "no policy", author: "admin"},
		{name: "no policy, one namespace", author: "admin", sameNamespace: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			migratedSt, otherSt := f.st, f.st
			if tc.policy {
				f.trustMigrations(tc.covers)
				migratedSt, otherSt = writerStore(f, tc.author, "tok"), writerStore(f, "bob", "tok")
			}
			f.sweepIDClaims()
			f.advance(time.Minute)
			migratedNS, otherNS := "team-b", ns
			if tc.sameNamespace {
				migratedNS = ns
			}
			migrated := f.annotatedUnclaimed(migratedSt, migratedNS, "migrated", svcatID, true)
			other := f.annotatedUnclaimed(otherSt, otherNS, "other", svcatID, false)
			f.broker.ResetCalls()

			f.lateClaims()
			unverified := !tc.covers && !tc.sameNamespace
			forged := tc.covers && !tc.verified
			assert.Equal(t, f.hasIDClaim(migrated, svcatID), !unverified && !forged, "reconcile's late claim of the migrated record")
			assert.Assert(t, !f.hasIDClaim(other, svcatID))

			// The other record's own step (a touch: an update under the id).
			touch := func(inst *v1alpha1.ServiceInstance) Result {
				t.Helper()
				_, err := f.st.Instances().UpdateWithRetry(ctx, inst.Namespace, inst.Name, func(x *v1alpha1.ServiceInstance) error {
					return instanceVerbs{f.engine}.touch(x)
				})
				assert.NilError(t, err)
				return f.stepRecord(inst)
			}
			res := touch(other)
			if forged {
				assert.Assert(t, !res.Refused, "%+v", res)
				assert.Assert(t, f.hasIDClaim(other, svcatID), "the other record made its claim")
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodUpdate)), 1, "%+v", f.broker.Calls())
				// Hers is refused, naming the other record, and sends nothing.
				f.broker.ResetCalls()
				res = touch(migrated)
				assertRefused(t, f, res, migrated.Namespace, migrated.Name, ReasonRefusedIDInUse)
				msg := condition(f.getIn(migrated.Namespace, migrated.Name), v1alpha1.ConditionRefused).Message
				assert.Assert(t, strings.Contains(msg, `"other" in namespace "`+otherNS+`" adopted it first`), msg)
				assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())
				return
			}
			// The migrated record's claim, made or not, holds the other record's back.
			assertRefused(t, f, res, other.Namespace, other.Name, ReasonRefusedIDInUse)
			if unverified {
				assert.Assert(t, !f.hasIDClaim(other, svcatID), "the other record made no claim")
			}
			assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())
			res = touch(migrated)
			if unverified {
				// Its own step takes nothing from the other namespace's record either.
				assertRefused(t, f, res, migrated.Namespace, migrated.Name, ReasonRefusedIDInUse)
				msg := condition(f.getIn(migrated.Namespace, migrated.Name), v1alpha1.ConditionRefused).Message
				assert.Assert(t, strings.Contains(msg, "nothing verifies"), msg)
				assert.Assert(t, strings.Contains(msg, `"other" in namespace "`+otherNS+`"`), msg)
				assert.Assert(t, strings.Contains(msg, "kubectl catalog init"), msg)
				assert.Assert(t, !f.hasIDClaim(migrated, svcatID))
				assert.Equal(t, len(f.broker.Calls()), 0, "%+v", f.broker.Calls())
				return
			}
			assert.Assert(t, !res.Refused, "%+v", res)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodUpdate)), 1, "%+v", f.broker.Calls())
		})
	}
}
