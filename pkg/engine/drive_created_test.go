package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// A verb hands the engine the record it has just created: no read of it before the
// first step, and the broker is called once.
func TestDriveInstance_Created_IsNotReadAgain(t *testing.T) {
	f := newFixture(t)
	created := f.create("db", planSmall, "")
	f.cluster.Core.ClearActions()

	res, err := f.engine.DriveInstance(context.Background(), ns, "db", DriveOptions{StopWhenWaiting: true, Created: created})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.Calls(), 1))
	for _, a := range f.cluster.Core.Actions() {
		g, ok := a.(clienttesting.GetAction)
		assert.Assert(t, !ok || g.GetName() != "catalog-instance.db", "the record was read again")
	}
}

// Whoever changes the record between its create and the engine's first step wins: the
// write-ahead made from the created record conflicts, nothing is sent, and the record is
// read as it is now (here: claimed by reconcile, which is left to drive it).
func TestDriveInstance_CreatedThenClaimedByAnother_SendsNothing(t *testing.T) {
	f := newFixture(t)
	// The drive waits between reads: a clock that moves.
	f.now = time.Now()
	f.engine.cfg.Now = time.Now
	created := f.create("db", planSmall, "")
	_, err := f.st.Instances().Claim(context.Background(), created, "reconcile@other", time.Minute)
	assert.NilError(t, err)

	res, err := f.engine.DriveInstance(context.Background(), ns, "db", DriveOptions{StopWhenWaiting: true, Created: created})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, is.Contains(res.Message, "reconcile@other is working on it"))
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
	assert.Assert(t, f.get("db").Status.InFlight == nil)
}

// Another driver finishes the record after this drive read it: it removes the finalizer
// and the API server deletes the record. The step's first write then finds nothing: the
// drive reports the record gone, not an error.
func TestDriveInstance_RecordFinishedByAnotherDriverDuringTheStep_IsGoneNotAnError(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	ctx := context.Background()
	assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
	read := f.get("db")
	cms := f.cluster.Core.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, "catalog-instance.db", metav1.GetOptions{})
	assert.NilError(t, err)
	cm.Finalizers = nil
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	assert.NilError(t, err)

	res, err := f.engine.DriveInstance(ctx, ns, "db", DriveOptions{StopWhenWaiting: true, Created: read})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodDeprovision), 0), "nothing is sent for a record that is gone")
}

// A record another driver claims is looked at again as soon as a watch sees it change,
// not after the poll interval or the claim's expiry (the clock here never moves, so
// only the watch can end the wait).
func TestDriveInstance_ClaimedByAnother_WaitsOnAWatchOfTheRecord(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.PollInterval = time.Hour
	inst := f.create("db", planSmall, "")
	claimed, err := f.st.Instances().Claim(context.Background(), inst, "reconcile@other", time.Hour)
	assert.NilError(t, err)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = f.st.Instances().Release(context.Background(), claimed, "reconcile@other")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	res, err := f.engine.DriveInstance(ctx, ns, "db", DriveOptions{Tick: 50 * time.Millisecond})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
}
