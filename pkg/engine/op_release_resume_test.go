package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A release interrupted once its marks are written and before its records are deleted
// (the process killed, the delete refused) leaves settled records marked released:
// reconcile must find them among the pending records and drop them, as "release" says
// it does.
func TestReleaseMoved_InterruptedAfterTheMark_RecordsArePendingForReconcile(t *testing.T) {
	f := releaseFixture(t)
	ctx := context.Background()
	// The write-ahead of ReleaseMoved, and then nothing: its deletes never came.
	b, err := f.st.Bindings().Get(ctx, ns, "app")
	assert.NilError(t, err)
	assert.NilError(t, markReleased(f.engine, ctx, f.st.Bindings(), b, "new"))
	inst, err := f.st.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	assert.NilError(t, markReleased(f.engine, ctx, f.st.Instances(), inst, "new"))

	items, err := f.st.ListPending(ctx, ns)
	assert.NilError(t, err)
	var pending []string
	for _, it := range items {
		pending = append(pending, it.Kind+" "+it.Name)
	}
	assert.DeepEqual(t, pending, []string{v1alpha1.KindServiceBinding + " app", v1alpha1.KindServiceInstance + " db"})

	assert.Equal(t, f.stepBinding("app").State, StateDeleted)
	assert.Equal(t, f.step("db").State, StateDeleted)
	_, err = f.st.Instances().Get(ctx, ns, "db")
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}
