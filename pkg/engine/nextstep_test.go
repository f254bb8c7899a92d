package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestNextStep_SaysWhatStepInstanceWouldDoAndWhen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(f *fixture, i *v1alpha1.ServiceInstance)
		action string
		in     time.Duration // due after; 0: now
		claim  bool
		user   bool
	}{
		{name: "new record", edit: func(*fixture, *v1alpha1.ServiceInstance) {}, action: NextProvision},
		{name: "provision retry scheduled", action: NextProvision, in: time.Minute, edit: func(f *fixture, i *v1alpha1.ServiceInstance) {
			i.Status.Retry = &v1alpha1.RetryState{Attempts: 2, Reason: ReasonProvisionCallFailed, NextRetryAt: mtime(f.now.Add(time.Minute))}
		}},
		{name: "a deletion is not held back by a provision's retry", action: NextRemoveFinalizer, edit: func(f *fixture, i *v1alpha1.ServiceInstance) {
			i.Status.Retry = &v1alpha1.RetryState{Attempts: 2, Reason: ReasonProvisionCallFailed, NextRetryAt: mtime(f.now.Add(time.Minute))}
			i.DeletionTimestamp = mtime(f.now)
		}},
		{name: "async poll not due", action: NextPoll, in: 10 * time.Second, edit: func(f *fixture, i *v1alpha1.ServiceInstance) {
			i.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationProvision, Async: true, NextPollAt: mtime(f.now.Add(10 * time.Second))}
		}},
		{name: "interrupted call", action: NextResend, edit: func(f *fixture, i *v1alpha1.ServiceInstance) {
			i.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationProvision}
		}},
		{name: "claimed by someone else", action: NextPoll, in: time.Minute, claim: true, edit: func(f *fixture, i *v1alpha1.ServiceInstance) {
			assert.NilError(t, store.SetClaim(i, "alice", time.Minute, f.now))
		}},
		{name: "terminal failure", action: NextNothing, user: true, edit: func(f *fixture, i *v1alpha1.ServiceInstance) {
			setCondition(i, v1alpha1.ConditionFailed, metav1.ConditionTrue, ReasonProvisionRejected, "no", f.now)
		}},
		{name: "provisioned", action: NextUpdateOrSettle, edit: func(f *fixture, i *v1alpha1.ServiceInstance) {
			i.Status.Provisioned = &v1alpha1.ProvisionedState{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			inst := f.create("db", planSmall, "")
			tc.edit(f, inst)
			n := f.engine.NextStep(inst)
			assert.Equal(t, n.Action, tc.action)
			assert.Equal(t, n.NeedsUser, tc.user)
			assert.Equal(t, n.ClaimedBy != "", tc.claim)
			if tc.in == 0 {
				assert.Assert(t, n.At.IsZero(), n.At)
			} else {
				assert.Equal(t, n.At.Sub(f.now), tc.in)
			}
			assert.Equal(t, n.Due(f.now), !tc.user && tc.in == 0)
			if n.Due(f.now) && !tc.user {
				return
			}
			// Not due: StepInstance does not call the broker either.
			_, err := f.engine.StepInstance(context.Background(), inst)
			assert.NilError(t, err)
			assert.Equal(t, len(f.broker.Calls()), 0)
		})
	}
}
