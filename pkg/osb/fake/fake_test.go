package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

func TestFake_RecordsEveryCallInOrderWithRequestCopies(t *testing.T) {
	f := fake.New()
	ctx := t.Context()
	params := json.RawMessage(`{"size":1}`)
	req := &osb.ProvisionRequest{InstanceID: "i", ServiceID: "s", PlanID: "p", Parameters: params,
		Context: &osb.KubernetesContext{Platform: "kubernetes", InstanceAnnotations: map[string]string{"a": "b"}}}

	_, _ = f.GetCatalog(ctx, nil)
	_, _ = f.Provision(ctx, req)
	_, _ = f.LastOperation(ctx, &osb.LastOperationRequest{InstanceID: "i", OperationKey: "op"})
	_, _ = f.Update(ctx, &osb.UpdateRequest{InstanceID: "i", PreviousValues: &osb.PreviousValues{PlanID: "old"}})
	_, _ = f.GetInstance(ctx, &osb.GetInstanceRequest{InstanceID: "i"})
	_, _ = f.Bind(ctx, &osb.BindRequest{InstanceID: "i", BindingID: "b"})
	_, _ = f.BindingLastOperation(ctx, &osb.BindingLastOperationRequest{InstanceID: "i", BindingID: "b"})
	_, _ = f.GetBinding(ctx, &osb.GetBindingRequest{InstanceID: "i", BindingID: "b"})
	_, _ = f.Unbind(ctx, &osb.UnbindRequest{InstanceID: "i", BindingID: "b"})
	_, _ = f.Deprovision(ctx, &osb.DeprovisionRequest{InstanceID: "i"})

	// Mutating the caller's request afterwards must not change the record.
	params[2] = 'X'
	req.Context.InstanceAnnotations["a"] = "changed"
	req.PlanID = "changed"

	assert.DeepEqual(t, f.MethodNames(), []string{
		fake.MethodGetCatalog, fake.MethodProvision, fake.MethodLastOperation, fake.MethodUpdate, fake.MethodGetInstance,
		fake.MethodBind, fake.MethodBindingLastOperation, fake.MethodGetBinding, fake.MethodUnbind, fake.MethodDeprovision,
	})
	got := f.CallsTo(fake.MethodProvision)[0].Request.(osb.ProvisionRequest)
	assert.Equal(t, got.PlanID, "p")
	assert.Equal(t, string(got.Parameters), `{"size":1}`)
	assert.Equal(t, got.Context.InstanceAnnotations["a"], "b")
	assert.Equal(t, f.Calls()[0].Request.(osb.CatalogRequest), osb.CatalogRequest{})

	f.ResetCalls()
	assert.Equal(t, len(f.Calls()), 0)
}

func TestFake_UnscriptedCallsAnswerLikeAHealthySyncBroker(t *testing.T) {
	f := fake.New()
	ctx := t.Context()

	p, err := f.Provision(ctx, &osb.ProvisionRequest{})
	assert.NilError(t, err)
	assert.Equal(t, p.StatusCode, http.StatusCreated)
	b, err := f.Bind(ctx, &osb.BindRequest{})
	assert.NilError(t, err)
	assert.Equal(t, b.StatusCode, http.StatusCreated)
	lo, err := f.LastOperation(ctx, &osb.LastOperationRequest{})
	assert.NilError(t, err)
	assert.Equal(t, lo.State, osb.StateSucceeded)
	_, err = f.GetBinding(ctx, &osb.GetBindingRequest{})
	assert.Assert(t, osb.IsNotFoundError(err))
	c, err := f.GetCatalog(ctx, nil)
	assert.NilError(t, err)
	assert.Equal(t, len(c.Services), 0)
}

func TestFake_StrictFailsUnscriptedCalls(t *testing.T) {
	f := fake.New()
	f.Strict()
	_, err := f.Unbind(t.Context(), &osb.UnbindRequest{})
	assert.ErrorContains(t, err, "no reaction scripted for Unbind")
	_, err = f.BindingLastOperation(t.Context(), &osb.BindingLastOperationRequest{OperationKey: "x"})
	assert.ErrorContains(t, err, "no reaction scripted for BindingLastOperation")
}

func TestFake_StaticAndFunctionReactions(t *testing.T) {
	f := fake.New()
	f.ProvisionReturns(&osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil)
	f.DeprovisionReturns(nil, fake.Gone())
	f.BindReturns(nil, fake.HTTPError(http.MethodPut, 422, osb.ErrorCodeRequiresApp, ""))
	f.UpdateReturns(nil, fake.Timeout())
	f.UnbindReturns(nil, fake.Malformed(202))
	f.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: "p"}, nil)
	f.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"a": "b"}}, nil)
	calls := 0
	f.OnGetCatalog(func(_ context.Context, r *osb.CatalogRequest) (*osb.CatalogResponse, error) {
		calls++
		return &osb.CatalogResponse{Services: []osb.Service{{ID: r.RequestIdentity}}}, nil
	})
	ctx := t.Context()

	p, err := f.Provision(ctx, &osb.ProvisionRequest{})
	assert.NilError(t, err)
	assert.Equal(t, p.Operation, "op-1")
	p.Operation = "mutated"
	p, _ = f.Provision(ctx, &osb.ProvisionRequest{})
	assert.Equal(t, p.Operation, "op-1", "each call gets its own copy")

	_, err = f.Deprovision(ctx, &osb.DeprovisionRequest{})
	assert.Assert(t, osb.IsGoneError(err))
	assert.Equal(t, osb.Decide(osb.OpDeprovision, osb.OutcomeOf(0, err)).Forget, true)
	_, err = f.Bind(ctx, &osb.BindRequest{})
	assert.Assert(t, osb.IsRequiresAppError(err))
	_, err = f.Update(ctx, &osb.UpdateRequest{})
	assert.Assert(t, osb.IsTimeout(err))
	_, err = f.Unbind(ctx, &osb.UnbindRequest{})
	assert.Assert(t, osb.IsMalformedResponseError(err))
	i, err := f.GetInstance(ctx, &osb.GetInstanceRequest{})
	assert.NilError(t, err)
	assert.Equal(t, i.PlanID, "p")
	g, err := f.GetBinding(ctx, &osb.GetBindingRequest{})
	assert.NilError(t, err)
	assert.Equal(t, g.Credentials["a"], "b")
	c, err := f.GetCatalog(ctx, &osb.CatalogRequest{RequestOptions: osb.RequestOptions{RequestIdentity: "rid"}})
	assert.NilError(t, err)
	assert.Equal(t, c.Services[0].ID, "rid")
	assert.Equal(t, calls, 1)
}

func TestFake_PollSequencesAreConsumedInOrderAndTheLastRepeats(t *testing.T) {
	f := fake.New()
	f.SetPollSequence("op-1", fake.InProgress("creating"), fake.PollError(fake.Timeout()), fake.Succeeded())
	f.SetPollSequence("op-2", fake.Failed("disk full"))
	f.SetBindingPollSequence("op-1", fake.InProgress(""), fake.PollError(fake.Gone()))
	f.OnLastOperation(func(context.Context, *osb.LastOperationRequest) (*osb.LastOperationResponse, error) {
		return &osb.LastOperationResponse{State: osb.StateInProgress, Description: "from reaction"}, nil
	})
	ctx := t.Context()
	poll := func(key string) (osb.LastOperationState, error) {
		lo, err := f.LastOperation(ctx, &osb.LastOperationRequest{InstanceID: "i", OperationKey: key})
		if err != nil {
			return "", err
		}
		return lo.State, nil
	}

	s, err := poll("op-1")
	assert.NilError(t, err)
	assert.Equal(t, s, osb.StateInProgress)
	_, err = poll("op-1")
	assert.Assert(t, osb.IsTimeout(err))
	for range 3 {
		s, err = poll("op-1")
		assert.NilError(t, err)
		assert.Equal(t, s, osb.StateSucceeded)
	}
	s, _ = poll("op-2")
	assert.Equal(t, s, osb.StateFailed)
	lo, err := f.LastOperation(ctx, &osb.LastOperationRequest{OperationKey: "unknown"})
	assert.NilError(t, err)
	assert.Equal(t, lo.Description, "from reaction")

	blo, err := f.BindingLastOperation(ctx, &osb.BindingLastOperationRequest{OperationKey: "op-1"})
	assert.NilError(t, err)
	assert.Equal(t, blo.State, osb.StateInProgress)
	for range 2 {
		_, err = f.BindingLastOperation(ctx, &osb.BindingLastOperationRequest{OperationKey: "op-1"})
		assert.Assert(t, osb.IsGoneError(err))
	}
	assert.Equal(t, len(f.CallsTo(fake.MethodLastOperation)), 7)
}

func TestFake_DoneContextIsReportedAsNoAnswer(t *testing.T) {
	f := fake.New()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	_, err := f.Provision(ctx, &osb.ProvisionRequest{})

	assert.Assert(t, osb.IsTimeout(err))
	assert.Assert(t, errors.Is(err, context.Canceled))
	assert.Equal(t, len(f.Calls()), 1, "the attempt is still recorded")
}

func TestFake_IsSafeForConcurrentUse(t *testing.T) {
	f := fake.New()
	f.SetPollSequence("op", fake.InProgress(""), fake.Succeeded())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, _ = f.LastOperation(t.Context(), &osb.LastOperationRequest{OperationKey: "op"})
				_, _ = f.Provision(t.Context(), &osb.ProvisionRequest{})
				f.ProvisionReturns(&osb.ProvisionResponse{StatusCode: 200}, nil)
				_ = f.Calls()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, len(f.Calls()), 8*50*2)
}

func TestFake_SetCatalogIsReturnedByDefault(t *testing.T) {
	f := fake.New()
	f.SetCatalog(&osb.CatalogResponse{Services: []osb.Service{{ID: "svc"}}})
	c, err := f.GetCatalog(t.Context(), nil)
	assert.NilError(t, err)
	assert.Equal(t, c.Services[0].ID, "svc")
}
