package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// interruptWrites makes every write of verb on resource whose object's name starts with
// prefix fail while *on, as if the process was killed just before it.
func (f *fixture) interruptWrites(verb, resource, prefix string, on *bool) {
	f.cluster.Core.PrependReactor(verb, resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !*on {
			return false, nil, nil
		}
		var name string
		switch x := a.(type) {
		case clienttesting.CreateAction:
			if o, ok := x.GetObject().(interface{ GetName() string }); ok {
				name = o.GetName()
			}
		case clienttesting.UpdateAction:
			if o, ok := x.GetObject().(interface{ GetName() string }); ok {
				name = o.GetName()
			}
		}
		if strings.HasPrefix(name, prefix) {
			return true, nil, errors.New("killed")
		}
		return false, nil, nil
	})
}

func moveInBindingRequest() MoveInBindingRequest {
	return MoveInBindingRequest{Namespace: ns, Name: "app", Instance: "db", ExternalID: "moved-binding", From: "old-cluster"}
}

// noChangeAtTheBroker asserts that nothing but GETs reached the broker.
func (f *fixture) noChangeAtTheBroker() {
	f.t.Helper()
	for _, m := range []string{fake.MethodProvision, fake.MethodUpdate, fake.MethodDeprovision, fake.MethodBind, fake.MethodUnbind} {
		assert.Assert(f.t, is.Len(f.broker.CallsTo(m), 0), m)
	}
}

// An apply of a move killed after AdoptBinding wrote the binding's record, or after its
// claim, leaves a record that applying again finishes: the id claimed, the Secret handed
// from the instance's record to the binding's, with what the broker holds; the broker
// sees no change. Killed after the Secret and before the record, applying again adopts
// the Secret written.
func TestMoveInBinding_InterruptedApply_AppliedAgain_IsFinished(t *testing.T) {
	for _, tc := range []struct {
		name, verb, resource, prefix string
		recorded                     bool
	}{
		{name: "killed after the record", verb: "create", resource: "configmaps", prefix: "catalog-idclaim-", recorded: true},
		{name: "killed after the claim", verb: "update", resource: "secrets", prefix: "app", recorded: true},
		{name: "killed after the Secret", verb: "create", resource: "configmaps", prefix: "catalog-binding."},
	} {
		for _, retrievable := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: ", retrievable", false: ", credentials in the manifest"}[retrievable], func(t *testing.T) {
				f := movedIn(t, retrievable)
				f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": "held"}}, nil)
				req := moveInBindingRequest()
				if !retrievable {
					req.Credentials = map[string][]byte{"password": []byte("held")}
				}
				killed := true
				f.interruptWrites(tc.verb, tc.resource, tc.prefix, &killed)
				_, err := f.engine.MoveInBinding(context.Background(), req)
				assert.ErrorContains(t, err, "killed")
				killed = false
				_, gerr := f.st.Bindings().Get(context.Background(), ns, "app")
				assert.Equal(t, gerr == nil, tc.recorded, "%v", gerr)

				res, err := f.engine.MoveInBinding(context.Background(), req)
				assert.NilError(t, err, "applied again")
				b := f.getBinding("app")
				assert.Equal(t, b.Status.Bound.BindingID, "moved-binding")
				assert.Assert(t, f.hasBindingIDClaim(b, "moved-binding"), "the id is claimed")
				s, err := f.st.GetSecret(context.Background(), ns, "app")
				assert.NilError(t, err)
				assert.Assert(t, store.OwnedBy(s, b), "the binding owns its Secret")
				assert.Equal(t, len(s.OwnerReferences), 1, "the instance no longer owns it")
				assert.Equal(t, string(s.Data["password"]), "held")
				if tc.recorded {
					assert.Assert(t, res.Finished, "the result says the move in was finished")
				}
				missing, err := f.engine.UnfinishedMoveIn(context.Background(), v1alpha1.KindServiceBinding, ns, "app")
				assert.NilError(t, err)
				assert.Assert(t, is.Len(missing, 0))
				assert.Equal(t, f.stepBinding("app").State, StateSettled)
				f.noChangeAtTheBroker()
				f.assertNoSecretInRecords()
			})
		}
	}
}

// An apply of a move killed after AdoptInstance wrote the record leaves an instance
// without its id claim; applying again claims it and sends the context update once.
func TestMoveInInstance_InterruptedApply_AppliedAgain_IsFinished(t *testing.T) {
	for _, contextUpdates := range []bool{true, false} {
		t.Run(map[bool]string{true: "context updates", false: "no context updates"}[contextUpdates], func(t *testing.T) {
			f := movingFixture(t, true, contextUpdates)
			f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
			killed := true
			f.interruptWrites("create", "configmaps", "catalog-idclaim-", &killed)
			_, err := f.engine.MoveInInstance(context.Background(), moveInRequest())
			assert.ErrorContains(t, err, "killed")
			killed = false
			missing, err := f.engine.UnfinishedMoveIn(context.Background(), v1alpha1.KindServiceInstance, ns, "db")
			assert.NilError(t, err)
			assert.DeepEqual(t, missing, []string{"the id claim"})

			dry := moveInRequest()
			dry.DryRun = DryRunClient
			f.broker.ResetCalls()
			before := f.snapshot()
			res, err := f.engine.MoveInInstance(context.Background(), dry)
			assert.NilError(t, err)
			assert.Assert(t, res.Finished)
			f.assertUnchanged(before)

			res, err = f.engine.MoveInInstance(context.Background(), moveInRequest())
			assert.NilError(t, err, "applied again")
			assert.Assert(t, res.Finished)
			inst := f.get("db")
			assert.Assert(t, f.hasIDClaim(inst, "moved-id"))
			f.driveInstance("db")
			updates := 0
			if contextUpdates {
				updates = 1
			}
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUpdate), updates), "the context update at most once")
			for _, m := range []string{fake.MethodProvision, fake.MethodDeprovision} {
				assert.Assert(t, is.Len(f.broker.CallsTo(m), 0), m)
			}
			missing, err = f.engine.UnfinishedMoveIn(context.Background(), v1alpha1.KindServiceInstance, ns, "db")
			assert.NilError(t, err)
			assert.Assert(t, is.Len(missing, 0))
		})
	}
}

// A record of that name that is not this move's (another id, another cluster, or no
// move at all) is refused as before, and nothing is written.
func TestMoveIn_ExistingRecordOfAnotherMove_Refused(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  func(*MoveInInstanceRequest)
	}{
		{name: "another id", req: func(r *MoveInInstanceRequest) { r.ExternalID = "other-id" }},
		{name: "another cluster", req: func(r *MoveInInstanceRequest) { r.From = "third-cluster" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := movingFixture(t, true, false)
			f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
			killed := true
			f.interruptWrites("create", "configmaps", "catalog-idclaim-", &killed)
			_, err := f.engine.MoveInInstance(context.Background(), moveInRequest())
			assert.ErrorContains(t, err, "killed")
			killed = false
			f.broker.ResetCalls()
			before := f.snapshot()
			req := moveInRequest()
			tc.req(&req)
			_, err = f.engine.MoveInInstance(context.Background(), req)
			assert.ErrorContains(t, err, "already exists")
			f.assertUnchanged(before)
		})
	}
	t.Run("binding with another id", func(t *testing.T) {
		f := movedIn(t, true)
		f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": "held"}}, nil)
		killed := true
		f.interruptWrites("create", "configmaps", "catalog-idclaim-", &killed)
		_, err := f.engine.MoveInBinding(context.Background(), moveInBindingRequest())
		assert.ErrorContains(t, err, "killed")
		killed = false
		f.broker.ResetCalls()
		before := f.snapshot()
		req := moveInBindingRequest()
		req.ExternalID = "other-binding"
		_, err = f.engine.MoveInBinding(context.Background(), req)
		assert.ErrorContains(t, err, "already exists")
		f.assertUnchanged(before)
	})
}

func (f *fixture) hasBindingIDClaim(b *v1alpha1.ServiceBinding, id string) bool {
	users, err := f.st.WithExternalID(context.Background(), v1alpha1.KindServiceBinding, b.Namespace, id)
	assert.NilError(f.t, err)
	for _, u := range users {
		if u.UID == b.UID {
			return !u.Adopted.IsZero()
		}
	}
	return false
}
