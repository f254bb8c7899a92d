package engine

import (
	"context"
	"net/http"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// movingFixture is a fixture whose class serves GET instance and GET binding
// (retrievable) and allows context updates as asked.
func movingFixture(t *testing.T, retrievable, contextUpdates bool) *fixture {
	t.Helper()
	f := newFixture(t)
	_, err := f.st.Classes().UpdateWithRetry(context.Background(), f.classNamespace(), v1alpha1.ClassRecordName(brokerName, classID),
		func(c *v1alpha1.ServiceClass) error {
			c.Spec.InstancesRetrievable, c.Spec.BindingsRetrievable, c.Spec.AllowContextUpdates = retrievable, retrievable, contextUpdates
			return nil
		})
	assert.NilError(t, err)
	return f
}

func moveInRequest() MoveInInstanceRequest {
	return MoveInInstanceRequest{
		Namespace: ns, Name: "db", Class: "db", Plan: "small", ExternalID: "moved-id",
		Parameters: ParametersInput{Object: []byte(`{"size":3}`)}, From: "old-cluster",
	}
}

func TestMoveInInstance_NoProvision_OneContextUpdateWhereAllowed(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		retrievable, contextUpdates bool
		gets, updates               int
	}{
		{name: "retrievable, context updates", retrievable: true, contextUpdates: true, gets: 1, updates: 1},
		{name: "retrievable, no context updates", retrievable: true, gets: 1},
		{name: "not retrievable, context updates", contextUpdates: true, updates: 1},
		{name: "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := movingFixture(t, tc.retrievable, tc.contextUpdates)
			f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
			res, err := f.engine.MoveInInstance(context.Background(), moveInRequest())
			assert.NilError(t, err)
			assert.Equal(t, res.Checked, tc.retrievable)
			assert.Equal(t, res.ContextUpdate, tc.contextUpdates)
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 0))
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodGetInstance), tc.gets))
			updates := f.broker.CallsTo(fake.MethodUpdate)
			assert.Assert(t, is.Len(updates, tc.updates))
			if tc.updates == 1 {
				u := updates[0].Request.(osb.UpdateRequest)
				assert.Equal(t, u.InstanceID, "moved-id")
				assert.Equal(t, u.PlanID, "", "the plan is not changed")
				assert.Assert(t, u.Parameters == nil, "no parameter is sent")
				assert.Equal(t, u.Context.ClusterID, "cluster-1")
				assert.Equal(t, u.Context.Namespace, ns)
			}
			inst := f.get("db")
			assert.Equal(t, inst.Annotations[AnnotationMovedFrom], "old-cluster")
			assert.Equal(t, inst.Spec.ExternalID, "moved-id")
			assert.Assert(t, !inst.Status.Provisioned.ContextOutdated)
			assert.Assert(t, !inst.HasPendingWork())
			// Settled: the next step calls nothing.
			f.broker.ResetCalls()
			assert.Equal(t, f.step("db").State, StateSettled)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
		})
	}
}

func TestMoveInInstance_ContextUpdateInterrupted_ReconcileSendsIt(t *testing.T) {
	f := movingFixture(t, false, true)
	f.broker.UpdateReturns(nil, fake.HTTPError(http.MethodPatch, http.StatusServiceUnavailable, "", ""))
	req := moveInRequest()
	_, err := f.engine.MoveInInstance(context.Background(), req)
	assert.NilError(t, err)
	inst := f.get("db")
	assert.Assert(t, inst.Status.Provisioned.ContextOutdated)
	assert.Assert(t, inst.HasPendingWork(), "reconcile finds it")
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 200}, nil)
	f.broker.ResetCalls()
	assert.Equal(t, f.driveInstance("db").State, StateSettled)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUpdate), 1))
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 0))
	assert.Assert(t, !f.get("db").Status.Provisioned.ContextOutdated)
}

func TestMoveInInstance_Refusals_WriteNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture, req *MoveInInstanceRequest)
		want  string
	}{
		{name: "the broker does not hold the id", want: "holds no instance with id moved-id",
			setup: func(f *fixture, _ *MoveInInstanceRequest) {
				f.broker.GetInstanceReturns(nil, fake.HTTPError(http.MethodGet, http.StatusNotFound, "", ""))
			}},
		{name: "the broker holds it on another plan", want: `on plan "large"`,
			setup: func(f *fixture, _ *MoveInInstanceRequest) {
				f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planLarge}, nil)
			}},
		{name: "no id", want: "needs its OSB id",
			setup: func(_ *fixture, req *MoveInInstanceRequest) { req.ExternalID = "" }},
		{name: "an id in use here", want: "already used by",
			setup: func(f *fixture, req *MoveInInstanceRequest) {
				f.provisioned("other", planSmall, "")
				req.ExternalID = f.get("other").Spec.ExternalID
			}},
		{name: "an id generated for a namespace of the old cluster", want: "generated by kubectl catalog",
			setup: func(_ *fixture, req *MoveInInstanceRequest) {
				req.ExternalID = v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, ns, v1alpha1.NamespaceKey{ClusterID: "old-cluster", UID: "old-uid"})
			}},
		{name: "a name in use here", want: "already exists",
			setup: func(f *fixture, _ *MoveInInstanceRequest) { f.provisioned("db", planSmall, "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := movingFixture(t, true, true)
			req := moveInRequest()
			tc.setup(f, &req)
			f.broker.ResetCalls()
			before := f.snapshot()
			_, err := f.engine.MoveInInstance(context.Background(), req)
			assert.ErrorContains(t, err, tc.want)
			assert.DeepEqual(t, f.snapshot(), before)
			for _, m := range []string{fake.MethodProvision, fake.MethodUpdate, fake.MethodBind, fake.MethodDeprovision} {
				assert.Assert(t, is.Len(f.broker.CallsTo(m), 0), m)
			}
		})
	}
}

func TestMoveInInstance_DryRun_ChecksAndWritesNothing(t *testing.T) {
	f := movingFixture(t, true, true)
	f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
	before := f.snapshot()
	req := moveInRequest()
	req.DryRun = DryRunClient
	res, err := f.engine.MoveInInstance(context.Background(), req)
	assert.NilError(t, err)
	assert.Assert(t, res.Checked && res.ContextUpdate)
	assert.DeepEqual(t, f.snapshot(), before)
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUpdate), 0))
}

// movedIn is a fixture with instance db moved in (its class retrievable as asked).
func movedIn(t *testing.T, retrievable bool) *fixture {
	t.Helper()
	f := movingFixture(t, retrievable, false)
	f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
	_, err := f.engine.MoveInInstance(context.Background(), moveInRequest())
	assert.NilError(t, err)
	f.broker.ResetCalls()
	return f
}

func TestMoveInBinding_CredentialsFromTheBrokerOrTheManifest(t *testing.T) {
	for _, tc := range []struct {
		name        string
		retrievable bool
		manifest    map[string][]byte
		carried     map[string]string
		from        string
		want        string
		gets        int
	}{
		{name: "retrievable: GET binding gives them", retrievable: true, from: "broker", want: "from-broker", gets: 1},
		{name: "not retrievable: the manifest carries them", manifest: map[string][]byte{"password": []byte("from-manifest")}, from: "manifest", want: "from-manifest"},
		{name: "not retrievable: the Secret was carried over", carried: map[string]string{"password": "carried"}, from: "secret", want: "carried"},
		{name: "retrievable, the Secret carried over: kept as it is", retrievable: true, carried: map[string]string{"password": "carried"}, from: "secret", want: "carried", gets: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := movedIn(t, tc.retrievable)
			f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": "from-broker"}}, nil)
			if tc.carried != nil {
				f.putSecret("app", tc.carried)
			}
			res, err := f.engine.MoveInBinding(context.Background(), MoveInBindingRequest{
				Namespace: ns, Name: "app", Instance: "db", ExternalID: "moved-binding", Credentials: tc.manifest, From: "old-cluster",
			})
			assert.NilError(t, err)
			assert.Equal(t, res.CredentialsFrom, tc.from)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodGetBinding), tc.gets))
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 0))
			b := f.getBinding("app")
			assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady)
			assert.Equal(t, b.Status.Bound.BindingID, "moved-binding")
			assert.Equal(t, b.Annotations[AnnotationMovedFrom], "old-cluster")
			s, err := f.st.GetSecret(context.Background(), ns, "app")
			assert.NilError(t, err)
			assert.Equal(t, string(s.Data["password"]), tc.want)
			assert.Assert(t, store.OwnedBy(s, b), "the binding owns its Secret")
			assert.Equal(t, len(s.OwnerReferences), 1, "the instance no longer owns it")
			assert.Equal(t, f.stepBinding("app").State, StateSettled)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 0))
			f.assertNoSecretInRecords()
		})
	}
}

func TestMoveInBinding_Refusals_WriteNothing(t *testing.T) {
	for _, tc := range []struct {
		name        string
		retrievable bool
		req         func(*MoveInBindingRequest)
		want        string
	}{
		{name: "the broker does not hold the id", retrievable: true, want: "holds no binding with id moved-binding"},
		{name: "not retrievable and no credentials", want: "export it again with --show-secrets"},
		{name: "no such instance", retrievable: true, req: func(r *MoveInBindingRequest) { r.Instance = "nope" }, want: `instance "nope" does not exist`},
		{name: "no id", retrievable: true, req: func(r *MoveInBindingRequest) { r.ExternalID = "" }, want: "needs its OSB id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := movedIn(t, tc.retrievable)
			before := f.snapshot()
			req := MoveInBindingRequest{Namespace: ns, Name: "app", Instance: "db", ExternalID: "moved-binding", From: "old-cluster"}
			if tc.req != nil {
				tc.req(&req)
			}
			_, err := f.engine.MoveInBinding(context.Background(), req)
			assert.ErrorContains(t, err, tc.want)
			assert.DeepEqual(t, f.snapshot(), before)
			assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodBind), 0))
		})
	}
}
