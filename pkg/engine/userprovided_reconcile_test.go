package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// forbidSecretReads makes every read of Secret name forbidden while *on, as for a
// reconcile whose ServiceAccount may not read Secrets in the namespace, and counts the
// reads tried.
func (f *fixture) forbidSecretReads(name string) (on *atomic.Bool, reads *atomic.Int32) {
	on, reads = &atomic.Bool{}, &atomic.Int32{}
	f.cluster.Core.PrependReactor("get", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		g, ok := a.(clienttesting.GetAction)
		if !ok || g.GetName() != name || !on.Load() {
			return false, nil, nil
		}
		reads.Add(1)
		return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "secrets"}, name, errors.New("RBAC"))
	})
	return on, reads
}

// Reconcile itself may not read a user-provided instance's credentials: nobody else takes
// the work up, so it is retried with backoff like any other refusal (not every poll
// interval), and the message says who may copy the credentials and what to run.
func TestUserProvided_ReconcileMayNotReadTheCredentials_BacksOffNamingWhoMayCopyThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup leaves the record to step under reconcile, after the Secret reads are
		// forbidden; step steps it once.
		setup func(f *fixture, forbid *atomic.Bool)
		step  func(ctx context.Context, f *fixture) (Result, error)
		get   func(f *fixture) opRecord
	}{
		{
			name: "first check of a new instance",
			setup: func(f *fixture, forbid *atomic.Bool) {
				forbid.Store(true)
				res := f.userProvided(map[string]string{"password": upsPassword})
				assert.Equal(t, res.State, StateWaiting, res.Message)
			},
			step: func(ctx context.Context, f *fixture) (Result, error) { return f.engine.StepInstance(ctx, f.get("db")) },
			get:  func(f *fixture) opRecord { return f.get("db") },
		},
		{
			name: "new credentials to copy to the bindings",
			setup: func(f *fixture, forbid *atomic.Bool) {
				res := f.userProvided(map[string]string{"password": upsPassword})
				assert.Equal(t, res.State, StateSettled, res.Message)
				forbid.Store(true)
				f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.UserProvided.Revision++ })
			},
			step: func(ctx context.Context, f *fixture) (Result, error) { return f.engine.StepInstance(ctx, f.get("db")) },
			get:  func(f *fixture) opRecord { return f.get("db") },
		},
		{
			name: "a binding's first copy",
			setup: func(f *fixture, forbid *atomic.Bool) {
				res := f.userProvided(map[string]string{"password": upsPassword})
				assert.Equal(t, res.State, StateSettled, res.Message)
				forbid.Store(true)
				f.createBinding("app", nil)
			},
			step: func(ctx context.Context, f *fixture) (Result, error) {
				return f.engine.StepBinding(ctx, f.getBinding("app"))
			},
			get: func(f *fixture) opRecord { return f.getBinding("app") },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			assert.NilError(t, f.engine.AbandonInstance(context.Background(), f.get("db")))
			forbid, reads := f.forbidSecretReads(CredentialsSecretName("db"))
			tc.setup(f, forbid)
			reads.Store(0)
			ctx := AsReconcile(context.Background())

			// Half an hour of reconcile taking the record up whenever it says it is due.
			var steps int
			var last Result
			for end := f.now.Add(30 * time.Minute); f.now.Before(end); steps++ {
				res, err := tc.step(ctx, f)
				assert.NilError(t, err)
				last = res
				f.advance(max(res.RequeueAfter, time.Second))
			}

			assert.Assert(t, reads.Load() <= 12, "reconcile tried to read the credentials %d times in 30 minutes (%d steps): it must back off", reads.Load(), steps)
			rec := tc.get(f)
			assert.Assert(t, !WaitingForReconcile(rec), "reconcile does not hand the work to itself")
			st := rec.OpStatus()
			assert.Assert(t, st.Retry != nil, "a retry with backoff is scheduled")
			msg := st.Retry.LastError
			assert.Assert(t, is.Contains(msg, "reconcile itself may not read"), msg)
			assert.Assert(t, is.Contains(msg, `"kubectl catalog reconcile install"`), msg)
			assert.Assert(t, is.Contains(msg, `"kubectl catalog touch instance db -n `+ns+`"`), msg)
			assert.Assert(t, !is.Contains(msg, "so reconcile copies them")().Success(), msg)
			assert.Assert(t, last.State != StateSettled)
			f.assertNoValueInRecords(upsPassword)
		})
	}
}

// A user who may not read the credentials leaves the work to reconcile, which may: no
// backoff holds reconcile back.
func TestUserProvided_AUserWhoMayNotReadTheCredentials_LeavesThemToReconcile(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	assert.NilError(t, f.engine.AbandonInstance(context.Background(), f.get("db")))
	forbid, _ := f.forbidSecretReads(CredentialsSecretName("db"))
	forbid.Store(true)

	res := f.userProvided(map[string]string{"password": upsPassword})

	assert.Equal(t, res.State, StateWaiting, res.Message)
	inst := f.get("db")
	assert.Assert(t, WaitingForReconcile(inst))
	assert.Assert(t, inst.Status.Retry == nil)
	assert.Assert(t, is.Contains(res.Message, "reconcile copies them"))
}
