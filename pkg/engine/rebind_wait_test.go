package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// A rebind waiting for a binding's own rotation to end waits as long as that binding
// waits (its retry's backoff), not a poll interval: a run by hand (reconcile with a
// retry horizon) otherwise steps the instance every poll interval for as long as the
// binding's retry is put off, and never ends. Found by the simulation (default world,
// seed 80, with reconcile stepping due polls on its list's copies: a binding whose
// broker was being deregistered retried every ten minutes while its instance's rebind
// looked at it every two seconds).
func TestRebind_WaitingForABindingsOwnRotation_WaitsAsLongAsItsRetry(t *testing.T) {
	f, _ := rebindFixture(t)
	ctx := context.Background()
	// a's rotation started before the update; its bind fails, and is retried later and
	// later.
	f.broker.OnBind(func(_ context.Context, req *osb.BindRequest) (*osb.BindResponse, error) {
		if req.BindingID == f.getBinding("a").CurrentExternalID() {
			return nil, fake.HTTPError("PUT", 500, "", "boom")
		}
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": "pw-" + req.BindingID}}, nil
	})
	_, err := f.engine.startRotation(ctx, ns, "a")
	assert.NilError(t, err)
	for range 40 {
		f.stepBinding("a")
		r := f.getBinding("a").Status.Retry
		assert.Assert(t, r != nil && r.NextRetryAt != nil)
		if r.NextRetryAt.Time.Sub(f.now) > time.Minute {
			break
		}
		f.now = r.NextRetryAt.Time
	}
	retry := f.getBinding("a").Status.Retry
	assert.Assert(t, retry.NextRetryAt.Time.Sub(f.now) > time.Minute, "%+v", retry)

	_, err = f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true})
	assert.NilError(t, err)
	var r Result
	for range 20 {
		r = f.step("db")
		if strings.Contains(r.Message, "is being rotated") {
			break
		}
	}
	assert.Assert(t, strings.Contains(r.Message, "is being rotated"), "%+v", r)
	want := f.getBinding("a").Status.Retry.NextRetryAt.Time.Sub(f.now)
	assert.Assert(t, r.RequeueAfter >= want-time.Second, "the rebind looks again after %s; binding a's retry is due in %s", r.RequeueAfter, want)
}
