package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// countUpdates counts the ConfigMap updates of f's cluster from now on.
func countUpdates(f *fixture) *atomic.Int64 {
	var n atomic.Int64
	f.cluster.Core.PrependReactor("update", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		n.Add(1)
		return false, nil, nil
	})
	return &n
}

// pollAnswer is one answer of the broker to a poll.
type pollAnswer struct {
	state      osb.LastOperationState
	desc       string
	retryAfter time.Duration
	err        error
}

func (a pollAnswer) response() (*osb.LastOperationResponse, error) {
	if a.err != nil {
		return nil, a.err
	}
	return &osb.LastOperationResponse{State: a.state, Description: a.desc, RetryAfter: a.retryAfter}, nil
}

// A poll whose answer changes nothing the next step or a reader needs at once (the
// broker says "in progress" again, with or without a new description) writes nothing:
// what it learnt goes with the record's next write. The claim taken for the first poll
// is written once (and renewed as it runs low), and the last poll's outcome once. A
// poll the broker paces (Retry-After), a failed poll, and a new description long after
// the record was last written are written; the same description again is not, however
// long after. Each step starts from the copy the last one returned, as reconcile
// and a --wait drive do; each record kind, and every answer kind.
func TestPoll_InProgressAnswersWriteNothingUntilTheOutcome(t *testing.T) {
	inProgress := pollAnswer{state: osb.StateInProgress, desc: "working"}
	succeeded := pollAnswer{state: osb.StateSucceeded, desc: "done"}
	cases := []struct {
		name    string
		answers []pollAnswer
		// gap is the time between two polls.
		gap         time.Duration
		wantUpdates int
	}{
		{"same description", []pollAnswer{inProgress, inProgress, inProgress, succeeded}, time.Second, 1},
		{"a new description each time", []pollAnswer{{state: osb.StateInProgress, desc: "10%"}, {state: osb.StateInProgress, desc: "50%"},
			{state: osb.StateInProgress, desc: "90%"}, succeeded}, time.Second, 1},
		{"paced by Retry-After", []pollAnswer{{state: osb.StateInProgress, retryAfter: 2 * time.Second}, {state: osb.StateInProgress, retryAfter: 2 * time.Second}, succeeded}, 2 * time.Second, 3},
		{"a failed poll", []pollAnswer{{err: errors.New("connection reset")}, inProgress, succeeded}, time.Second, 2},
		// The first answer's description is new (the acceptance stored none): written.
		{"the same description, polls far apart", []pollAnswer{inProgress, inProgress, succeeded}, quietPollWriteAfter + time.Second, 2},
		{"a new description each time, polls far apart", []pollAnswer{{state: osb.StateInProgress, desc: "10%"}, {state: osb.StateInProgress, desc: "50%"},
			succeeded}, quietPollWriteAfter + time.Second, 3},
		// The first description, then the claim (2 minutes), renewed before a poll
		// once less than half of it is left (at 75 s and 150 s): the renewal carries
		// what the quiet polls learnt. Then the outcome.
		{"the same description for minutes", []pollAnswer{inProgress, inProgress, inProgress, inProgress, inProgress, inProgress, succeeded}, 25 * time.Second, 4},
	}
	for _, kind := range []string{v1alpha1.KindServiceInstance, v1alpha1.KindServiceBinding} {
		for _, c := range cases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				var f *fixture
				if kind == v1alpha1.KindServiceBinding {
					f, _ = bindingFixture(t, nil)
				} else {
					f = newFixture(t)
				}
				i := 0
				answer := func() (*osb.LastOperationResponse, error) {
					a := c.answers[min(i, len(c.answers)-1)]
					i++
					return a.response()
				}
				f.broker.OnLastOperation(func(context.Context, *osb.LastOperationRequest) (*osb.LastOperationResponse, error) { return answer() })
				f.broker.OnBindingLastOperation(func(context.Context, *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
					return answer()
				})
				ctx := context.Background()
				var step func() Result
				if kind == v1alpha1.KindServiceBinding {
					f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "op-b"}, nil)
					f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": secretValue}}, nil)
					f.createBinding("app", nil)
					cur := f.getBinding("app")
					step = func() Result {
						res, err := f.engine.StepBinding(ctx, cur)
						assert.NilError(t, err)
						if res.Binding != nil {
							cur = res.Binding
						}
						return res
					}
				} else {
					provisionReturns(f, 202, nil)
					f.create("db", planSmall, "")
					cur := f.get("db")
					step = func() Result {
						res, err := f.engine.StepInstance(ctx, cur)
						assert.NilError(t, err)
						if res.Instance != nil {
							cur = res.Instance
						}
						return res
					}
				}
				res := step() // the request, accepted: the record holds the claim
				assert.Equal(t, res.State, StateWaiting, res.Message)
				updates := countUpdates(f)
				for range c.answers {
					f.advance(max(res.RequeueAfter, c.gap))
					res = step()
				}
				assert.Equal(t, res.State, StateSettled, res.Message)
				assert.Equal(t, i, len(c.answers), "polls")
				assert.Equal(t, int(updates.Load()), c.wantUpdates, "record writes for %d polls", len(c.answers))
				// What the record holds: settled, claim released.
				var stored v1alpha1.Record = f.get("db")
				if kind == v1alpha1.KindServiceBinding {
					stored = f.getBinding("app")
				}
				_, claimed := store.LeaseOf(stored)
				assert.Assert(t, !claimed, "the settled record keeps a claim")
			})
		}
	}
}
