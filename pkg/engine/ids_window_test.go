package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// unclaimedProvisioned is a record of namespace/name whose spec names id, bound to
// nothing, and whose status says it is provisioned, without an id claim: a record of
// an earlier release, or one whose status a tenant wrote.
func (f *fixture) unclaimedProvisioned(namespace, name, id string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	ctx := context.Background()
	inst, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance(name, namespace, id, nil))
	assert.NilError(f.t, err)
	inst.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
	inst.Status.ExternalID, inst.Status.Phase, inst.Status.ObservedGeneration = id, v1alpha1.PhaseReady, inst.Generation
	inst, err = f.st.Instances().Update(ctx, inst)
	assert.NilError(f.t, err)
	return inst
}

func (f *fixture) hasIDClaim(inst *v1alpha1.ServiceInstance, id string) bool {
	_, err := f.cluster.Core.CoreV1().ConfigMaps(inst.Namespace).Get(context.Background(), store.IDClaimName(v1alpha1.KindServiceInstance, inst.UID, id), metav1.GetOptions{})
	return err == nil
}

// An older record that uses an id bound to nothing without a claim keeps it: the first
// call of a younger record naming it claims the older record's first, and is refused.
func TestIDsWindow_AYoungerRecordsFirstCallClaimsTheOlderRecordFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	db := f.unclaimedProvisioned(ns, "db", svcatID)
	f.advance(time.Minute)
	hers := f.unclaimedProvisioned("team-b", "hers", svcatID)
	assert.NilError(t, f.st.Instances().Delete(ctx, "team-b", "hers"))

	res := f.stepRecord(hers)

	assertRefused(t, f, res, "team-b", "hers", ReasonRefusedIDInUse)
	assert.Assert(t, f.hasIDClaim(db, svcatID), "the older record got its claim first")
	// The older record goes on: its deletion deprovisions the id.
	assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
	assert.Equal(t, f.step("db").State, StateDeleted)
	assert.Equal(t, len(f.broker.Calls()), 1)
	assert.Equal(t, callInstanceID(f.broker.Calls()[0]), svcatID)
}

// A status saying an instance is provisioned, on a record without its own id claim for
// the id bound to nothing its spec names, makes nothing bindable: the binding's check
// makes no claim for the instance, and refuses.
func TestIDsWindow_AForgedProvisionedStatusWithoutAClaimIsNotBindable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner bool // another record (older, without a claim) names the id too
	}{
		{"the id of an instance that is no record", false},
		{"the id of an older record without a claim", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if tc.owner {
				f.unclaimedProvisioned(ns, "db", svcatID)
				f.advance(time.Minute)
			}
			hers := f.unclaimedProvisioned("team-b", "hers", svcatID)

			_, _ = f.engine.Bind(ctx, BindRequest{Namespace: "team-b", Instance: "hers", Name: "steal"})

			assert.Equal(t, len(f.broker.Calls()), 0, "nothing is bound: %+v", f.broker.Calls())
			b, err := f.bindingIn("team-b", "steal")
			assert.NilError(t, err)
			c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
			assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "%+v", b.Status.Conditions)
			assert.Equal(t, c.Reason, ReasonRefusedIDNotOwned, c.Message)
			assert.Assert(t, !f.hasIDClaim(hers, svcatID), "the binding made no claim for the instance")
		})
	}
}

// Reconcile's first pass claims every spec id bound to nothing that has no claim yet,
// oldest record first, before any record is stepped, and marks the cluster done: a
// record whose spec is rewritten to name the id after it is younger at its claim.
func TestIDsWindow_ReconcilesFirstPassClaimsEveryUnclaimedSpecIDOldestFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	hers, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("hers", "team-b", "hers-own-id", nil))
	assert.NilError(t, err)
	f.advance(time.Hour)
	db := f.unclaimedProvisioned(ns, "db", svcatID)
	f.advance(time.Minute)
	other := f.unclaimedProvisioned("team-b", "other", "svcat-other")

	_, idx, err := f.st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	assert.NilError(t, f.engine.SettleIDClaims(ctx, "", idx))
	assert.Assert(t, f.hasIDClaim(db, svcatID))
	assert.Assert(t, f.hasIDClaim(other, "svcat-other"))
	swept, err := f.st.IDClaimsSwept(ctx, f.engine.cfg.CatalogNamespace)
	assert.NilError(t, err)
	assert.Assert(t, swept, "the cluster is marked done")

	// She rewrites her older record to name the id, and deletes it: refused.
	f.advance(time.Minute)
	f.rewriteToID("team-b", "hers", svcatID)
	hers, err = f.st.Instances().Get(ctx, "team-b", "hers")
	assert.NilError(t, err)
	hers.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
	hers.Status.Phase = v1alpha1.PhaseReady
	_, err = f.st.Instances().Update(ctx, hers)
	assert.NilError(t, err)
	assert.NilError(t, f.st.Instances().Delete(ctx, "team-b", "hers"))
	res := f.stepRecord(hers)
	assertRefused(t, f, res, "team-b", "hers", ReasonRefusedIDInUse)
}

// A first pass over one namespace claims, for an id its records use, the older records
// of other namespaces that use it without a claim first: a tenant's younger record with
// a forged status gets a claim younger than theirs, and binds nothing.
func TestIDsWindow_ANamespacesFirstPassClaimsOlderRecordsElsewhereFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	db := f.unclaimedProvisioned(ns, "db", svcatID)
	f.advance(time.Minute)
	mine := f.unclaimedProvisioned("team-b", "mine", svcatID)

	_, idx, err := f.st.ListPendingWithIDs(ctx, "team-b")
	assert.NilError(t, err)
	assert.NilError(t, f.engine.SettleIDClaims(ctx, "team-b", idx))
	assert.Assert(t, f.hasIDClaim(db, svcatID), "the older record of another namespace got its claim")
	assert.Assert(t, f.hasIDClaim(mine, svcatID))
	swept, err := f.st.IDClaimsSwept(ctx, f.engine.cfg.CatalogNamespace)
	assert.NilError(t, err)
	assert.Assert(t, !swept, "a pass over one namespace does not mark the cluster")

	_, _ = f.engine.Bind(ctx, BindRequest{Namespace: "team-b", Instance: "mine", Name: "steal"})
	assert.Equal(t, len(f.broker.Calls()), 0, "nothing is bound: %+v", f.broker.Calls())
	b, err := f.bindingIn("team-b", "steal")
	assert.NilError(t, err)
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Reason == ReasonRefusedIDInUse, "%+v", b.Status.Conditions)
}
