package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

func TestUpdate_PlanAndLimits_WrittenAndDriven(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	var said notes

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Plan: "large"},
		Limits: Limits{MaxBindings: int32p(2)}, Follow: said.follow(false),
	})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, res.Changes, []string{"plan large", "at most 2 bindings"})
	assert.DeepEqual(t, []string(said), []string{`Updating instance "db" in namespace "dev" (plan large, at most 2 bindings)...`})
	inst := f.get("db")
	assert.Equal(t, inst.Spec.PlanID, planLarge)
	assert.Equal(t, *inst.Spec.MaxBindings, int32(2))
	assert.Equal(t, f.broker.CallsTo(fake.MethodUpdate)[0].Request.(osb.UpdateRequest).PlanID, planLarge)
}

func TestUpdate_LimitsOnly_CallNoBroker(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", Limits: Limits{AllowedNamespaces: &[]string{"team-b", "team-a"}},
	})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, f.get("db").Spec.AllowedNamespaces, []string{"team-a", "team-b"})
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestUpdate_NothingToChange_SaysSoAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planLarge, "")
	before := f.snapshot()
	var said notes

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Plan: "large", Upgrade: true},
		Limits: Limits{MaxBindings: int32p(0)}, Follow: said.follow(false),
	})

	assert.NilError(t, err)
	assert.Assert(t, res.Unchanged)
	assert.DeepEqual(t, []string(said), []string{`Plan "plan-large" has no maintenance version; nothing to upgrade.`, `Nothing to update for instance "db".`})
	f.assertUnchanged(before)
}

func TestUpdate_BadInput_ChangesNothing(t *testing.T) {
	params := &ParametersInput{Pairs: []string{"a=2"}}
	for _, tc := range []struct {
		name         string
		userProvided bool
		req          InstanceUpdateRequest
		want         string
		input        bool
	}{
		{name: "credentials of a brokered instance", req: InstanceUpdateRequest{Credentials: CredentialsInput{SyslogDrainURL: "syslog://x"}},
			want: `instance "db" is not user-provided`, input: true},
		{name: "credentials and a plan", req: InstanceUpdateRequest{UpdateRequest: UpdateRequest{Plan: "large"}, Credentials: CredentialsInput{FromSecret: "s"}},
			want: "give them without --plan", input: true},
		{name: "unknown plan", req: InstanceUpdateRequest{UpdateRequest: UpdateRequest{Plan: "huge"}}, want: `class "db" has no plan "huge"`},
		{name: "negative limit", req: InstanceUpdateRequest{Limits: Limits{MaxBindings: int32p(-1)}}, want: "--max-bindings must be 0", input: true},
		{name: "parameters of a user-provided instance", userProvided: true, req: InstanceUpdateRequest{UpdateRequest: UpdateRequest{Parameters: params}},
			want: `instance "db" is user-provided: it has no plan or parameters`, input: true},
		{name: "credentials Secret missing", userProvided: true, req: InstanceUpdateRequest{Credentials: CredentialsInput{FromSecret: "src"}},
			want: `--credentials-from-secret: Secret "src" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.userProvided {
				f.userProvided(map[string]string{"password": "old"})
			} else {
				f.provisioned("db", planSmall, "")
			}
			f.broker.ResetCalls()
			before := f.snapshot()
			req := tc.req
			req.Namespace, req.Name = ns, "db"

			_, err := f.engine.Update(context.Background(), req)

			f.assertRefused(err, tc.want, tc.input, before)
		})
	}
}

func TestUpdate_Busy_IsRefused(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "up"}, nil)
	f.step("db")
	f.broker.ResetCalls()
	before := f.snapshot()

	_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{Namespace: ns, Name: "db", Limits: Limits{MaxBindings: int32p(1)}})

	assert.ErrorContains(t, err, "still updating")
	f.assertUnchanged(before)
}

func TestUpdate_DryRun_WritesNothingAndCallsNoBroker(t *testing.T) {
	for _, tc := range []struct {
		mode    DryRun
		dryRuns int
	}{{DryRunClient, 0}, {DryRunServer, 1}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, "")
			before := f.snapshot()

			res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
				Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Plan: "large"}, DryRun: tc.mode,
			})

			assert.NilError(t, err)
			assert.Equal(t, res.Summary, `instance "db" in namespace "dev" would be updated (plan large)`)
			assert.Equal(t, res.DryRun.Spec.PlanID, planLarge)
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			f.assertUnchanged(before)
		})
	}
}

func TestUpdate_UserProvided_NewCredentialsAndURLs(t *testing.T) {
	f := newFixture(t)
	f.userProvided(map[string]string{"password": "old", "host": "db.internal"})
	revision := f.get("db").Spec.UserProvided.Revision
	var said notes

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", Follow: said.follow(false),
		Credentials: CredentialsInput{Read: func() (map[string][]byte, error) { return toBytes(map[string]string{"password": upsPassword}), nil }},
	})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, []string(said), []string{`Updating user-provided instance "db" in namespace "dev" (credentials password)...`})
	assert.Equal(t, f.get("db").Spec.UserProvided.Revision, revision+1)
	assert.DeepEqual(t, f.secretData(CredentialsSecretName("db")), toBytes(map[string]string{"password": upsPassword}))

	// A URL alone keeps the other credentials, and replaces a URL they have.
	_, err = f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", Credentials: CredentialsInput{RouteServiceURL: "https://route.example"},
	})
	assert.NilError(t, err)
	_, err = f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", Credentials: CredentialsInput{RouteServiceURL: "https://other.example"},
	})
	assert.NilError(t, err)
	assert.DeepEqual(t, f.secretData(CredentialsSecretName("db")), toBytes(map[string]string{"password": upsPassword, "route_service_url": "https://other.example"}))
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
	f.assertNoValueInRecords(upsPassword)
}

func TestUpdate_UserProvided_DryRun_WritesNoSecret(t *testing.T) {
	f := newFixture(t)
	f.userProvided(map[string]string{"password": "old"})
	before := f.snapshot()

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", DryRun: DryRunServer,
		Credentials: CredentialsInput{Read: func() (map[string][]byte, error) { return toBytes(map[string]string{"password": "new"}), nil }},
	})

	assert.NilError(t, err)
	assert.Equal(t, res.Summary, `user-provided instance "db" in namespace "dev" would be updated (credentials password), its credentials written to Secret "db-credentials"`)
	assert.Equal(t, f.cluster.DryRuns(), 1)
	f.assertUnchanged(before)
}

func TestRevert_AfterARefusedUpdate_SettlesWithoutABrokerCall(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	refuseUpdate(t, f, "400")
	f.broker.ResetCalls()
	var said notes

	res, err := f.engine.Revert(context.Background(), RevertRequest{Namespace: ns, Name: "db", Follow: said.follow(false)})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, res.Changes, []string{"plan small", `parameters {"a":1}`})
	assert.DeepEqual(t, []string(said), []string{`Reverting instance "db" in namespace "dev" to what the broker holds (plan small; parameters {"a":1})...`})
	assert.Equal(t, f.get("db").Spec.PlanID, planSmall)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestRevert_NothingToRevert_SaysSoAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	before := f.snapshot()
	var said notes

	res, err := f.engine.Revert(context.Background(), RevertRequest{Namespace: ns, Name: "db", Follow: said.follow(false)})

	assert.NilError(t, err)
	assert.Assert(t, res.Unchanged)
	assert.DeepEqual(t, []string(said), []string{`Nothing to revert: instance "db" asks for what the broker holds.`})
	f.assertUnchanged(before)
}
