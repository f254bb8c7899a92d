package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

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
