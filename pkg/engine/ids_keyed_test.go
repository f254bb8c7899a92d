package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A new record's id is bound to its namespace's key: after the namespace is deleted
// and created again under its name (another uid), a record there that names the id in
// its status sends nothing under it: its deletion forgets the id. A record of an earlier release keeps its id bound
// to the namespace's name.
func TestKeyedIDs_ANamespaceCreatedAgainCannotUseTheIDsOfTheOldOne(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.engine.Provision(ctx, ProvisionRequest{Namespace: ns, Name: "db", Class: "db", Plan: "small"})
	assert.NilError(t, err)
	db := f.get("db")
	id := db.Spec.ExternalID
	key := v1alpha1.NamespaceKey{ClusterID: "cluster-1", UID: "uid-" + ns}
	assert.Assert(t, v1alpha1.IDBoundToNamespace(id, key), "bound to the namespace's key")
	assert.Assert(t, !v1alpha1.IDBoundTo(id, ns, ""), "not to its name")

	// The namespace goes (the record with it, the instance left at the broker) and is
	// created again under the same name.
	f.engine.cfg.Platform = StaticPlatform{Cluster: "cluster-1", User: testUser, NamespaceUIDs: map[string]string{ns: "uid-again"}}
	f.broker.ResetCalls()
	for _, tc := range []struct {
		name string
		kind string
	}{{"an instance", v1alpha1.KindServiceInstance}} {
		t.Run(tc.name, func(t *testing.T) {
			copyRec, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("copy", ns, "", nil))
			assert.NilError(t, err)
			copyRec.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
			copyRec.Status.ExternalID, copyRec.Status.ExternalIDs, copyRec.Status.Phase = id, []string{id}, v1alpha1.PhaseReady
			copyRec, err = f.st.Instances().Update(ctx, copyRec)
			assert.NilError(t, err)
			assert.NilError(t, f.st.Instances().Delete(ctx, ns, "copy"))
			// The id is not the copy's: its deletion forgets it (with a visible reason)
			// and finishes, and nothing is sent under it.
			res := f.stepRecord(copyRec)
			assert.Equal(t, res.State, StateDeleted, "%+v", res)
			assert.Equal(t, len(f.broker.Calls()), 0, "nothing is sent under the old namespace's id: %+v", f.broker.Calls())
		})
	}
}

// An id bound to the namespace's name (a record of an earlier release) stays the
// record's: its deletion deprovisions it.
func TestKeyedIDs_ARecordOfAnEarlierReleaseKeepsItsID(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	old := v1alpha1.NewNamespaceBoundID(ns)
	inst := f.unclaimedProvisioned(ns, "db", old)
	assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
	assert.Equal(t, f.step(inst.Name).State, StateDeleted)
	calls := f.broker.Calls()
	assert.Equal(t, len(calls), 1)
	assert.Equal(t, callInstanceID(calls[0]), old)
}
