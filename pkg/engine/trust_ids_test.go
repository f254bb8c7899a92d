package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestTrust_AnOSBIDAnOlderRecordUses_IsNeverSent(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	f.advance(time.Minute)
	// A copy of db's id, in another namespace, by someone who read it in describe.
	_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy", "team-b", instanceOSB, nil))
	assert.NilError(t, err)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDInUse)

	// Deleting the copy must not deprovision db's instance either: it never sent anything,
	// so it goes without a broker call...
	assert.NilError(t, f.st.Instances().Delete(context.Background(), "team-b", "copy"))
	res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Equal(t, len(f.broker.Calls()), 0)
	// ...and a copy whose status claims the broker holds it is refused the DELETE.
	_, err = f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy2", "team-b", instanceOSB, func(i *v1alpha1.ServiceInstance) {
		i.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
	}))
	assert.NilError(t, err)
	assert.NilError(t, f.st.Instances().Delete(context.Background(), "team-b", "copy2"))
	res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy2"}})
	assertRefused(t, f, res, "team-b", "copy2", ReasonRefusedIDInUse)

	// The older record, the id's owner, is not held back.
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	res = f.step("db")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
}

func TestTrust_AnIDAnOlderRecordMayHoldAtTheBroker_IsNeverSent(t *testing.T) {
	f := newFixture(t)
	// An older record whose earlier attempt (an id the engine generated for it, in its
	// status only) the broker may still hold.
	old, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("old", ns, "id-now", nil))
	assert.NilError(t, err)
	f.engine.ClaimSpecIDs(context.Background(), old)
	then := v1alpha1.NewRecordBoundID(old.UID)
	old.Status.ExternalID = v1alpha1.NewRecordBoundID(old.UID)
	old.Status.ExternalIDs = []string{then, old.Status.ExternalID}
	_, err = f.st.Instances().Update(context.Background(), old)
	assert.NilError(t, err)
	f.advance(time.Minute)
	_, err = f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy", "team-b", then, nil))
	assert.NilError(t, err)
	_, err = f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy-2", "team-b", "id-now", nil))
	assert.NilError(t, err)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})

	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDNotOwned)
	res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy-2"}})
	assertRefused(t, f, res, "team-b", "copy-2", ReasonRefusedIDInUse)
}

// Reconcile's own list of every record answers the id check for each record it listed,
// the newest too: a copy of its id made after the list, even in the same second, is
// newer. The original goes ahead without a list of its own; the copy, which the list did
// not hold, is checked with one, finds the original and is refused.
func TestTrust_TheRunsListAnswersForTheOriginal_ALaterCopyIsRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	orig, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("orig", ns, "id-shared", nil))
	assert.NilError(t, err)
	f.engine.ClaimSpecIDs(ctx, orig)
	_, idx, err := f.st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	// Same clock, same second.
	_, err = f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("copy", "team-b", "id-shared", nil))
	assert.NilError(t, err)
	f.engine.UseIDIndex(idx)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDInUse)

	lists := f.cluster.MetadataLists()
	res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orig"}})
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Equal(t, f.cluster.MetadataLists()-lists, 0, "answered from the run's list")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1, "the original's only")
}
