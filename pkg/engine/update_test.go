package engine

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// pairSchema is an update schema that asks every update for foo and bar together, as
// the third-party broker does.
const pairSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
"properties":{"foo":{"type":"string"},"bar":{"type":"string"},"baz":{"type":"string"},"size":{"type":"integer","maximum":10}},
"allOf":[{"required":["foo","bar"]}]}`

func TestPlanUpdateBody_ChecksExactlyWhatTheEngineSends(t *testing.T) {
	heldParams := Parameters{All: map[string]json.RawMessage{"foo": json.RawMessage(`"f1"`), "bar": json.RawMessage(`"b1"`), "baz": json.RawMessage(`"z1"`)}}
	held := heldParams.InlineHashes()
	anyOfSchema := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
"anyOf":[{"required":["nope"]},{"allOf":[{"required":["foo","baz"]}]}]}`
	ifSchema := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
"if":{"required":["foo"]},"then":{"dependencies":{"foo":["baz"]}}}`
	for _, tc := range []struct {
		name   string
		schema string
		params string // the spec's inline parameters, as the update writes them
		secret string // a secret-sourced parameter's key, if any
		held   map[string]string
		named  []string
		body   string   // what is sent
		added  []string // sent again because the schema asks for them
		err    string
	}{
		{name: "the unchanged partner of a changed key is sent again", schema: pairSchema,
			params: `{"foo":"f2","bar":"b1","baz":"z1"}`, held: held, named: []string{"foo"},
			body: `{"bar":"b1","foo":"f2"}`, added: []string{"bar"}},
		{name: "a key named with its held value is sent", schema: pairSchema,
			params: `{"foo":"f2","bar":"b1","baz":"z1"}`, held: held, named: []string{"bar", "foo"},
			body: `{"bar":"b1","foo":"f2"}`},
		{name: "a key named is sent with no schema", schema: "",
			params: `{"foo":"f2","bar":"b1","baz":"z1"}`, held: held, named: []string{"baz", "foo"},
			body: `{"baz":"z1","foo":"f2"}`},
		{name: "a new key brings the pair", schema: pairSchema,
			params: `{"foo":"f1","bar":"b1","baz":"z1","size":3}`, held: held, named: []string{"size"},
			body: `{"bar":"b1","foo":"f1","size":3}`, added: []string{"bar", "foo"}},
		{name: "a key the instance lacks is the user's to give", schema: pairSchema,
			params: `{"foo":"f2","baz":"z1"}`, held: held, named: []string{"foo"},
			err: `parameters: missing property 'bar' (the plan's update schema asks for it in the update and the instance has no value to send: give it with -p bar=VALUE)`},
		{name: "a bad value of a key sent again is still refused", schema: pairSchema,
			params: `{"foo":"f2","bar":"b1","size":11}`, held: Parameters{All: map[string]json.RawMessage{"foo": json.RawMessage(`"f1"`), "bar": json.RawMessage(`"b1"`), "size": json.RawMessage(`11`)}}.InlineHashes(),
			named: []string{"foo", "size"}, err: "parameter size: maximum: got 11, want 10"},
		{name: "anyOf: the alternative the held keys satisfy", schema: anyOfSchema,
			params: `{"foo":"f2","bar":"b1","baz":"z1"}`, held: held, named: []string{"foo"},
			body: `{"baz":"z1","foo":"f2"}`, added: []string{"baz"}},
		{name: "then of an if the body satisfies", schema: ifSchema,
			params: `{"foo":"f2","bar":"b1","baz":"z1"}`, held: held, named: []string{"foo"},
			body: `{"baz":"z1","foo":"f2"}`, added: []string{"baz"}},
		{name: "everything is sent when what the broker holds is unknown", schema: pairSchema,
			params: `{"foo":"f2","bar":"b1","baz":"z1"}`, held: nil, named: []string{"foo"},
			body: `{"bar":"b1","baz":"z1","foo":"f2"}`},
		{name: "a secret-sourced key is always sent, and checked", schema: pairSchema,
			params: `{"foo":"f2","bar":"b1"}`, secret: "size", held: held, named: []string{"foo"},
			err: "parameter size: maximum: got 12, want 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ResolveParameters(context.Background(), ns, &runtime.RawExtension{Raw: []byte(tc.params)}, nil, nil)
			assert.NilError(t, err)
			if tc.secret != "" {
				p.All[tc.secret], p.FromSecret[tc.secret] = json.RawMessage(`12`), true
			}
			before := maps.Clone(tc.held)

			out, added, err := planUpdateBody(json.RawMessage(tc.schema), p, tc.held, tc.named)

			assert.DeepEqual(t, tc.held, before) // the record's hashes are not changed in place
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, added, tc.added)
			sent := p.changed(out).JSON() // what the engine's update sends
			assert.Equal(t, string(sent), tc.body)
			assert.NilError(t, ValidateParameters(json.RawMessage(tc.schema), sent), "what is sent passes the schema as it is")
		})
	}
}

// withUpdateSchema gives plan "small" an update schema.
func withUpdateSchema(t *testing.T, f *fixture, update string) {
	t.Helper()
	_, err := f.st.PlanSchemas().Create(context.Background(), &v1alpha1.ServicePlanSchemas{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName(brokerName, classID)},
		Spec: v1alpha1.ServicePlanSchemasSpec{BrokerName: brokerName, Scope: v1alpha1.ScopeCluster, ClassID: classID, Plans: []v1alpha1.PlanSchemas{{
			PlanID: planSmall, InstanceUpdate: &runtime.RawExtension{Raw: []byte(update)},
		}}},
	})
	assert.NilError(t, err)
}

// TestUpdate_SendsTheBodyItChecked drives updates of an instance whose plan's update
// schema asks for foo and bar together, and checks the PATCH the broker gets.
func TestUpdate_SendsTheBodyItChecked(t *testing.T) {
	lastPatch := func(f *fixture) string {
		calls := f.broker.CallsTo(fake.MethodUpdate)
		assert.Assert(t, len(calls) > 0)
		return string(calls[len(calls)-1].Request.(osb.UpdateRequest).Parameters)
	}
	for _, tc := range []struct {
		name  string
		pairs []string
		patch string
		notes []string
	}{
		{name: "a changed key alone brings its partner", pairs: []string{"foo=f2"}, patch: `{"bar":"b1","foo":"f2"}`,
			notes: []string{`The update also sends bar, unchanged: the plan's update schema asks for it with the parameters that change.`}},
		{name: "both named, one unchanged: both sent", pairs: []string{"foo=f2", "bar=b1"}, patch: `{"bar":"b1","foo":"f2"}`},
		{name: "an unrelated key named with its value is sent", pairs: []string{"foo=f2", "bar=b2", "baz=z1"}, patch: `{"bar":"b2","baz":"z1","foo":"f2"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			withUpdateSchema(t, f, pairSchema)
			f.provisioned("db", planSmall, `{"foo":"f1","bar":"b1","baz":"z1"}`)
			var said notes

			res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
				Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Parameters: &ParametersInput{Pairs: tc.pairs}}, Follow: said.follow(false),
			})

			assert.NilError(t, err)
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Equal(t, lastPatch(f), tc.patch)
			assert.DeepEqual(t, []string(said), append(tc.notes, `Updating instance "db" in namespace "dev" (parameters)...`))
			inst := f.get("db")
			assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
			// The broker's success records every key as held.
			assert.DeepEqual(t, inst.Status.Provisioned.ParameterHashes, mustHashes(t, inst.Spec.Parameters))
		})
	}
}

func mustHashes(t *testing.T, p *runtime.RawExtension) map[string]string {
	t.Helper()
	h, err := InlineParameterHashes(p)
	assert.NilError(t, err)
	return h
}

func TestUpdate_AKeyTheUpdateMustSendAndNobodyHas_ChangesNothing(t *testing.T) {
	f := newFixture(t)
	withUpdateSchema(t, f, pairSchema)
	f.provisioned("db", planSmall, `{"foo":"f1"}`)
	before := f.snapshot()

	_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"foo=f2"}}},
	})

	assert.ErrorContains(t, err, `instance "db" not updated: invalid parameters: parameters: missing property 'bar' (the plan's update schema asks for it in the update and the instance has no value to send: give it with -p bar=VALUE)`)
	f.assertUnchanged(before)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestUpdate_OnlyUnchangedValues_SendsNothing(t *testing.T) {
	f := newFixture(t)
	withUpdateSchema(t, f, pairSchema)
	f.provisioned("db", planSmall, `{"foo":"f1","bar":"b1"}`)

	res, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"bar=b1"}}},
	})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.Calls(), 0), "the broker holds these values: there is nothing to send")
	assert.DeepEqual(t, f.get("db").Status.Provisioned.ParameterHashes, mustHashes(t, f.get("db").Spec.Parameters))
}

func TestTouch_ChecksEveryParameterItSends(t *testing.T) {
	f := newFixture(t)
	withUpdateSchema(t, f, pairSchema)
	f.provisioned("db", planSmall, `{"foo":"f1","bar":"b1","size":11}`)
	before := f.snapshot()

	_, err := f.engine.Touch(context.Background(), TouchRequest{Namespace: ns, Name: "db"})

	assert.ErrorContains(t, err, `instance "db" not touched: touch sends every parameter, and the plan's update schema refuses them: invalid parameters: parameter size: maximum: got 11, want 10; change them with "kubectl catalog update db -p KEY=VALUE -n dev"`)
	f.assertUnchanged(before)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))

	f2 := newFixture(t)
	withUpdateSchema(t, f2, pairSchema)
	f2.provisioned("db", planSmall, `{"foo":"f1","bar":"b1"}`)
	res, err := f2.engine.Touch(context.Background(), TouchRequest{Namespace: ns, Name: "db"})
	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Equal(t, string(f2.broker.CallsTo(fake.MethodUpdate)[0].Request.(osb.UpdateRequest).Parameters), `{"bar":"b1","foo":"f1"}`)
}

// An update refused after it dropped the hashes of the unchanged keys it sent again:
// --revert finds the broker holds the reverted spec, and settles without a call.
func TestRevert_AfterARefusedUpdateThatSentUnchangedKeys_SettlesWithoutABrokerCall(t *testing.T) {
	f := newFixture(t)
	withUpdateSchema(t, f, pairSchema)
	f.provisioned("db", planSmall, `{"foo":"f1","bar":"b1"}`)
	f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 400, "", "foo f2 is sold out"))
	_, err := f.engine.Update(context.Background(), InstanceUpdateRequest{
		Namespace: ns, Name: "db", UpdateRequest: UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"foo=f2"}}},
	})
	assert.NilError(t, err)
	assert.Equal(t, condition(f.get("db"), v1alpha1.ConditionUpdateFailed).Reason, ReasonUpdateRejected)
	assert.Equal(t, string(f.broker.CallsTo(fake.MethodUpdate)[0].Request.(osb.UpdateRequest).Parameters), `{"bar":"b1","foo":"f2"}`)
	f.broker.ResetCalls()

	res, err := f.engine.Revert(context.Background(), RevertRequest{Namespace: ns, Name: "db"})

	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.DeepEqual(t, res.Changes, []string{`parameters {"foo":"f1","bar":"b1"}`})
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
	assert.Equal(t, f.get("db").Status.Phase, v1alpha1.PhaseReady)
}

// An instance the broker does not hold yet is provisioned next, with every parameter:
// those are checked, against the create schema.
func TestPrepareUpdate_NotProvisioned_ChecksWhatTheProvisionSends(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		pairs        []string
		want         string
	}{
		{name: "a value the create schema refuses", params: `{"storage_gb":2}`, pairs: []string{"storage_gb=11"}, want: "parameter storage_gb: maximum: got 11, want 10"},
		{name: "the spec's other parameters complete it", params: `{"storage_gb":2}`, pairs: []string{"ha=true"}},
		{name: "a parameter the create schema requires and nobody gave", pairs: []string{"ha=true"}, want: "parameters: missing property 'storage_gb'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withSchemas(t)
			inst := &v1alpha1.ServiceInstance{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
				Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db", ClassID: classID,
					PlanID: planSmall, PlanExternalName: "small"},
			}
			if tc.params != "" {
				inst.Spec.Parameters = &runtime.RawExtension{Raw: []byte(tc.params)}
			}

			got, err := f.engine.PrepareUpdate(context.Background(), inst, UpdateRequest{Parameters: &ParametersInput{Pairs: tc.pairs}})

			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got.Instance.Status.ParametersSalt, "", "nothing but the spec changes")
		})
	}
}

// A plan change judges the parameters that stand after it, the held ones merged with
// those given, against the new plan's schema: a value the old plan allowed and the new
// one does not is refused before anything is written or sent, naming the parameter,
// the limit and the -p that fixes it. Only values are judged: a key the new plan does
// not name is not (an update cannot remove it), and what is sent is unchanged.
func TestPrepareUpdate_PlanChange_ChecksTheParametersThatStand(t *testing.T) {
	const largeSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,
"properties":{"storage_gb":{"type":"integer","minimum":20,"maximum":500}}}`
	for _, tc := range []struct {
		name        string
		params      string // held, inline
		provisioned bool
		pairs       []string
		update      bool // the large plan has an update schema (else only a create schema)
		want        string
	}{
		{name: "a held value below the new plan's minimum", params: `{"storage_gb":8}`, provisioned: true, update: true,
			want: `instance "db" not updated: plan "large" does not accept a value the instance keeps: invalid parameters: parameter storage_gb: minimum: got 8, want 20 (the instance keeps it from its current plan, and an update does not change what it does not send: give it a value the plan accepts in the same update, -p storage_gb=20)`},
		{name: "judged by the create schema when the plan has no update schema", params: `{"storage_gb":8}`, provisioned: true,
			want: `parameter storage_gb: minimum: got 8, want 20`},
		{name: "given in the same update", params: `{"storage_gb":8}`, provisioned: true, update: true, pairs: []string{"storage_gb=20"}},
		{name: "a key the new plan does not name is not judged", params: `{"storage_gb":8,"ha":true}`, provisioned: true, update: true, pairs: []string{"storage_gb=30"}},
		{name: "no parameters held", provisioned: true, update: true},
		{name: "not provisioned: the provision that follows sends them all", params: `{"storage_gb":8}`,
			want: `parameter storage_gb: minimum: got 8, want 20`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withSchemas(t)
			ctx := context.Background()
			s, err := f.st.PlanSchemas().Get(ctx, storetest.CatalogNamespace, v1alpha1.ClassRecordName(brokerName, classID))
			assert.NilError(t, err)
			large := v1alpha1.PlanSchemas{PlanID: planLarge, InstanceCreate: &runtime.RawExtension{Raw: []byte(largeSchema)}}
			if tc.update {
				large.InstanceUpdate = &runtime.RawExtension{Raw: []byte(largeSchema)}
			}
			s.Spec.Plans = append(s.Spec.Plans, large)
			_, err = f.st.PlanSchemas().Update(ctx, s)
			assert.NilError(t, err)
			var inst *v1alpha1.ServiceInstance
			if tc.provisioned {
				inst = f.provisioned("db", planSmall, tc.params)
			} else {
				inst = f.create("db", planSmall, tc.params)
			}
			req := UpdateRequest{Plan: "large"}
			if tc.pairs != nil {
				req.Parameters = &ParametersInput{Pairs: tc.pairs}
			}

			got, err := f.engine.PrepareUpdate(ctx, inst, req)

			assert.Assert(t, is.Len(f.broker.Calls(), 0))
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got.Instance.Spec.PlanID, planLarge)
		})
	}
}

// refuseUpdate changes db's spec (plan large, a changed and a new parameter) and lets
// the broker refuse it as refusal says.
func refuseUpdate(t *testing.T, f *fixture, refusal string) Result {
	t.Helper()
	no := false
	setIntent(t, f, func(i *v1alpha1.ServiceInstance) {
		i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large"
		i.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{"a":2,"b":"x","c":true}`)}
	})
	switch refusal {
	case "400":
		f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 400, "", "plan large is sold out"))
	case "update_repeatable false":
		f.broker.UpdateReturns(nil, &osb.HTTPStatusError{StatusCode: 422, Description: "resize failed", UpdateRepeatable: &no})
	case "async failed, not repeatable":
		f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "up"}, nil)
		f.broker.SetPollSequence("up", fake.PollStep{Response: &osb.LastOperationResponse{State: osb.StateFailed, Description: "resize failed", UpdateRepeatable: &no}})
		f.step("db")
		f.advance(2 * time.Second)
	case "unusable":
		f.broker.UpdateReturns(nil, &osb.HTTPStatusError{StatusCode: 400, Description: "disk lost", InstanceUsable: &no})
	default:
		t.Fatalf("unknown refusal %q", refusal)
	}
	return f.step("db")
}

func TestStepInstance_RefusedUpdate_StaysReadyAtWhatTheBrokerHolds(t *testing.T) {
	for _, tc := range []struct {
		refusal, reason, words string
	}{
		{refusal: "400", reason: ReasonUpdateRejected, words: "plan large is sold out"},
		{refusal: "update_repeatable false", reason: ReasonUpdateNotRepeatable, words: "resize failed"},
		{refusal: "async failed, not repeatable", reason: ReasonUpdateNotRepeatable, words: "resize failed"},
	} {
		t.Run(tc.refusal, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1,"b":"x"}`)
			before := f.get("db").Status.Provisioned.DeepCopy()

			res := refuseUpdate(t, f, tc.refusal)

			inst := f.get("db")
			assert.Equal(t, res.State, StateNeedsUser, res.Message)
			assert.Assert(t, is.Contains(res.Message, tc.words))
			assert.Assert(t, is.Contains(res.Message, `"kubectl catalog update db --revert -n dev"`))
			assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
			assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Status, metav1.ConditionTrue)
			failed := condition(inst, v1alpha1.ConditionUpdateFailed)
			assert.Equal(t, failed.Status, metav1.ConditionTrue)
			assert.Equal(t, failed.Reason, tc.reason)
			assert.Assert(t, is.Contains(failed.Message, "still runs with its previous plan and parameters"))
			assert.Equal(t, condition(inst, v1alpha1.ConditionFailed).Type, "", "no Failed condition: the instance runs")
			assert.DeepEqual(t, inst.Status.Provisioned, before)
			assert.Assert(t, !inst.HasPendingWork())
			assert.NilError(t, CheckBindable(inst, f.class()))

			calls := len(f.broker.Calls())
			f.advance(time.Hour)
			assert.Equal(t, f.step("db").State, StateNeedsUser)
			assert.Equal(t, len(f.broker.Calls()), calls, "a refused update is not sent again until the spec changes")
		})
	}
}

func TestStepInstance_RefusedUpdateOfUnusableInstance_IsFailedAndNotBindable(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)

	res := refuseUpdate(t, f, "unusable")

	inst := f.get("db")
	assert.Equal(t, res.State, StateNeedsUser)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseFailed)
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Status, metav1.ConditionFalse)
	assert.Equal(t, condition(inst, v1alpha1.ConditionUpdateFailed).Reason, ReasonUpdateRejected)
	assert.ErrorContains(t, CheckBindable(inst, f.class()), "unusable")
}

func TestStepInstance_PlanNotUpdateable_StaysReadyWithUpdateFailed(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planFixed, "")
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })

	res := f.step("db")

	inst := f.get("db")
	assert.Equal(t, res.State, StateNeedsUser)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Status, metav1.ConditionTrue)
	assert.Assert(t, is.Contains(condition(inst, v1alpha1.ConditionUpdateFailed).Message, "plan_updateable: false"))
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}

func TestStepInstance_Success_RecordsTheParametersAsTheSpecNamedThem(t *testing.T) {
	f := newFixture(t)
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("db-params", map[string]string{"extra": `{"password":"hunter2"}`}), metav1.CreateOptions{})
	assert.NilError(t, err)
	inst := f.create("db", planSmall, `{"a":1}`)
	inst.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-params", Key: "extra"}}}
	_, err = f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(t, err)

	assert.Equal(t, f.step("db").State, StateSettled)

	applied := f.get("db").Status.Provisioned.Parameters
	assert.Assert(t, applied != nil)
	assert.Equal(t, string(applied.Inline.Raw), `{"a":1}`)
	assert.DeepEqual(t, applied.From, inst.Spec.ParametersFrom)
	cm, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), store.ConfigMapName(v1alpha1.KindServiceInstance, "db"), metav1.GetOptions{})
	assert.NilError(t, err)
	for k, v := range cm.Data {
		assert.Assert(t, !strings.Contains(v, "hunter2"), "a Secret's value in the record's key %s", k)
	}
}

func TestRevert_AfterARefusedUpdate_SettlesReadyWithoutCallingTheBroker(t *testing.T) {
	f := newFixture(t)
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("db-params", map[string]string{"extra": `{"password":"hunter2"}`}), metav1.CreateOptions{})
	assert.NilError(t, err)
	inst := f.create("db", planSmall, `{"a":1,"b":"x"}`)
	from := []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-params", Key: "extra"}}}
	inst.Spec.ParametersFrom = from
	_, err = f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(t, err)
	assert.Equal(t, f.step("db").State, StateSettled)
	setIntent(t, f, func(i *v1alpha1.ServiceInstance) {
		i.Spec.ParametersFrom = append(i.Spec.ParametersFrom, v1alpha1.ParametersFromSource{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "other"}})
	})
	_, err = f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("other", map[string]string{"tier": "gold"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	refuseUpdate(t, f, "400")
	f.broker.ResetCalls()

	reverted, changes, err := f.engine.revertSpec(context.Background(), ns, "db")

	assert.NilError(t, err)
	assert.DeepEqual(t, changes, []string{"plan small", `parameters {"a":1,"b":"x"}`, "parameters from Secret db-params/extra"})
	assert.Equal(t, reverted.Spec.PlanID, planSmall)
	assert.Equal(t, reverted.Spec.PlanExternalName, "small")
	assert.Equal(t, string(reverted.Spec.Parameters.Raw), `{"a":1,"b":"x"}`)
	assert.DeepEqual(t, reverted.Spec.ParametersFrom, from)

	res := f.step("db")

	inst = f.get("db")
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.Calls(), 0), "the broker holds this already")
	assert.Equal(t, condition(inst, v1alpha1.ConditionUpdateFailed).Type, "")
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Message, "the broker holds the instance as specified")
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Assert(t, !inst.HasPendingWork())
}

func TestRevert_WithoutRecordedParameters_UsesTheHashesTheBrokerHolds(t *testing.T) {
	for _, tc := range []struct {
		name, requested, want, wantErr string
	}{
		{name: "a parameter the broker never got is dropped", requested: `{"a":1,"c":true}`, want: `{"a":1}`},
		{name: "a changed value cannot be restored", requested: `{"a":2}`, wantErr: "parameters a are not recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.provisioned("db", planSmall, `{"a":1}`)
			// As an earlier release left it: hashes, no values.
			_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
				i.Status.Provisioned.Parameters = nil
				return nil
			})
			assert.NilError(t, err)
			setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(tc.requested) })
			f.broker.UpdateReturns(nil, fake.HTTPError("PATCH", 400, "", "no"))
			f.step("db")

			reverted, _, err := f.engine.revertSpec(context.Background(), ns, "db")

			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, string(reverted.Spec.Parameters.Raw), tc.want)
			assert.Equal(t, f.step("db").State, StateSettled)
		})
	}
}

func TestRevert_NothingToRevert_WritesNothing(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	rv := f.get("db").ResourceVersion

	_, changes, err := f.engine.revertSpec(context.Background(), ns, "db")

	assert.NilError(t, err)
	assert.Assert(t, is.Len(changes, 0))
	assert.Equal(t, f.get("db").ResourceVersion, rv)
}

func TestRevert_RefusesAnInstanceWithAnOperationInFlight(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, `{"a":1}`)
	setSpec(t, f, "db", func(i *v1alpha1.ServiceInstance) { i.Spec.Parameters.Raw = []byte(`{"a":2}`) })
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 202, Async: true, Operation: "up"}, nil)
	f.step("db")

	_, _, err := f.engine.revertSpec(context.Background(), ns, "db")

	assert.ErrorContains(t, err, "still updating")
}

// setIntent changes db's spec as a verb does, as the user's intent.
func setIntent(t *testing.T, f *fixture, mutate func(*v1alpha1.ServiceInstance)) {
	t.Helper()
	_, err := f.st.Instances().UpdateWithRetry(store.WithIntent(context.Background()), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		mutate(i)
		return nil
	})
	assert.NilError(t, err)
}

// class is the fixture's class record.
func (f *fixture) class() *v1alpha1.ServiceClass {
	f.t.Helper()
	c, err := f.st.Classes().Get(context.Background(), f.classNamespace(), v1alpha1.ClassRecordName(brokerName, classID))
	assert.NilError(f.t, err)
	return c
}
