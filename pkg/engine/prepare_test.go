package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// withSchemas gives the fixture's plan "small" a create, update and binding schema, and
// Secret "params" a JSON object under key "json" and a plain value under "password".
func withSchemas(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	schema := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	_, err := f.st.PlanSchemas().Create(context.Background(), &v1alpha1.ServicePlanSchemas{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.ClassRecordName(brokerName, classID)},
		Spec: v1alpha1.ServicePlanSchemasSpec{BrokerName: brokerName, Scope: v1alpha1.ScopeCluster, ClassID: classID, Plans: []v1alpha1.PlanSchemas{{
			PlanID: planSmall,
			InstanceCreate: schema(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","required":["storage_gb"],
				"properties":{"storage_gb":{"type":"integer","maximum":10},"ha":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}}}}`),
			InstanceUpdate: schema(`{"type":"object","required":["storage_gb"],"properties":{"storage_gb":{"type":"integer","maximum":10}}}`),
			BindingCreate:  schema(`{"type":"object","additionalProperties":false,"properties":{"role":{"type":"string","enum":["readwrite","readonly"]}}}`),
		}}},
	})
	assert.NilError(t, err)
	_, err = f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("params", map[string]string{"json": `{"ha": true}`}), metav1.CreateOptions{})
	assert.NilError(t, err)
	return f
}

// answers is an Asker with scripted answers, by question.
type answers map[string]string

func (a answers) Select(message string, _ []string, _ string) (string, error) {
	return a.Input(message, "", "")
}

func (a answers) Input(message, _, _ string) (string, error) {
	if v, ok := a[message]; ok {
		return v, nil
	}
	return "", fmt.Errorf("unexpected question %q", message)
}

func isInputError(err error) bool {
	var in *InputError
	return errors.As(err, &in) && in.UsageMistake()
}

func TestPrepareInstance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    InstanceRequest
		params string // the record's inline parameters
		want   string // the error
		input  bool   // a usage mistake
	}{
		{name: "typed by the schema", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Pairs: []string{"storage_gb=5", "tags=a"}}},
			params: `{"storage_gb":5,"tags":["a"]}`},
		{name: "-p over the object, numbers kept as written", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Object: []byte(`{"storage_gb": 1, "n": 12345678901234567890}`), Pairs: []string{"storage_gb=9"}}},
			params: `{"n":12345678901234567890,"storage_gb":9}`},
		{name: "parameters from a Secret checked, not recorded", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Pairs: []string{"storage_gb=5"},
			FromSecret: []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "params", Key: "json"}}}}},
			params: `{"storage_gb":5}`},
		{name: "a plan without a schema", req: InstanceRequest{Plan: "large", Parameters: ParametersInput{Pairs: []string{"x=5"}}}, params: `{"x":"5"}`},
		{name: "no parameters", req: InstanceRequest{Plan: "large"}},
		{name: "asked for what is missing", req: InstanceRequest{Class: "", Ask: answers{"Class:": "db", "Plan:": "small", "Parameter storage_gb:": "7"}},
			params: `{"storage_gb":7}`},
		{name: "bad JSON", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Object: []byte(`{`)}}, want: "parameters must be a JSON object", input: true},
		{name: "an array", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Object: []byte(`[1]`)}}, want: "parameters must be a JSON object", input: true},
		{name: "null", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Object: []byte(`null`)}}, want: "parameters must be a JSON object", input: true},
		{name: "trailing data", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Object: []byte(`{"a": 1} {"b": 2}`)}}, want: "single JSON object", input: true},
		{name: "-p without =", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Pairs: []string{"novalue"}}}, want: "key=value", input: true},
		{name: "-p of the wrong type", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Pairs: []string{"storage_gb=lots"}}}, want: "storage_gb", input: true},
		{name: "missing key in a Secret", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Pairs: []string{"storage_gb=5"},
			FromSecret: []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "params", Key: "nokey"}}}}},
			want: `Secret "params" in namespace "dev" has no key "nokey"`},
		{name: "schema violation", req: InstanceRequest{Plan: "small", Parameters: ParametersInput{Pairs: []string{"storage_gb=11"}}},
			want: `instance "x" not provisioned: invalid parameters: parameter storage_gb: maximum: got 11, want 10 (see the plan's schema with "kubectl catalog describe plan db/small --show-schemas")`},
		{name: "required parameter missing", req: InstanceRequest{Plan: "small"}, want: "storage_gb"},
		{name: "no class and no one to ask", req: InstanceRequest{Class: ""}, want: "--class is required", input: true},
		{name: "no plan and no one to ask", req: InstanceRequest{}, want: `--plan is required: class "db" has plans small, large, fixed`, input: true},
		{name: "unknown plan", req: InstanceRequest{Plan: "nosuch"}, want: "nosuch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withSchemas(t)
			req := tc.req
			req.Namespace, req.Name = ns, "x"
			if req.Class == "" && req.Ask == nil && tc.name != "no class and no one to ask" {
				req.Class = "db"
			}
			inst, err := f.engine.PrepareInstance(context.Background(), req)
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				assert.Equal(t, isInputError(err), tc.input, "%v", err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, inst.Name, "x")
			assert.Equal(t, inst.Spec.ClassID, classID)
			if tc.params == "" {
				assert.Assert(t, inst.Spec.Parameters == nil)
			} else {
				assert.Equal(t, string(inst.Spec.Parameters.Raw), tc.params)
			}
			assert.DeepEqual(t, inst.Spec.ParametersFrom, tc.req.Parameters.FromSecret)
			_, err = f.st.Instances().Get(context.Background(), ns, "x")
			assert.Assert(t, err != nil, "nothing is recorded")
		})
	}
}

func TestPrepareUpdate(t *testing.T) {
	instance := func(plan, params, maintenance string) *v1alpha1.ServiceInstance {
		inst := &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db", ClassID: classID,
				PlanID: plan, PlanExternalName: map[string]string{planSmall: "small", planLarge: "large", planFixed: "fixed"}[plan]},
			Status: v1alpha1.ServiceInstanceStatus{Provisioned: &v1alpha1.ProvisionedState{PlanID: plan, MaintenanceInfoVersion: maintenance}},
		}
		if params != "" {
			inst.Spec.Parameters = &runtime.RawExtension{Raw: []byte(params)}
		}
		return inst
	}
	fromSecret := []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "params", Key: "json"}}}
	for _, tc := range []struct {
		name    string
		inst    *v1alpha1.ServiceInstance
		req     UpdateRequest
		changes []string
		notes   []string
		check   func(t *testing.T, inst *v1alpha1.ServiceInstance)
		want    string // the error
		input   bool
	}{
		{name: "plan change", inst: instance(planSmall, "", ""), req: UpdateRequest{Plan: "large"}, changes: []string{"plan large"},
			check: func(t *testing.T, inst *v1alpha1.ServiceInstance) { assert.Equal(t, inst.Spec.PlanID, planLarge) }},
		{name: "plan change by OSB id", inst: instance(planSmall, "", ""), req: UpdateRequest{Plan: planLarge}, changes: []string{"plan large"}},
		{name: "same plan changes nothing", inst: instance(planSmall, "", ""), req: UpdateRequest{Plan: "small"}},
		{name: "plan not updateable", inst: instance(planFixed, "", ""), req: UpdateRequest{Plan: "small"},
			want: `instance "db" cannot change plan: plan "fixed" of class "db" is not updateable (plan_updateable: false); deprovision it and provision a new instance instead`},
		{name: "unknown plan", inst: instance(planSmall, "", ""), req: UpdateRequest{Plan: "huge"}, want: `class "db" has no plan "huge": choose one of small, large, fixed`},
		{name: "maintenance upgrade", inst: instance(planSmall, "", "0.9.0"), req: UpdateRequest{Upgrade: true}, changes: []string{"maintenance version 1.0.0"},
			check: func(t *testing.T, inst *v1alpha1.ServiceInstance) {
				assert.Equal(t, inst.Spec.MaintenanceInfoVersion, "1.0.0")
			}},
		{name: "maintenance upgrade with a plan change", inst: instance(planLarge, "", ""), req: UpdateRequest{Plan: "small", Upgrade: true},
			changes: []string{"plan small", "maintenance version 1.0.0"}},
		{name: "maintenance already current", inst: instance(planSmall, "", "1.0.0"), req: UpdateRequest{Upgrade: true},
			notes: []string{`Instance "db" already has maintenance version 1.0.0.`}},
		{name: "plan without maintenance version", inst: instance(planLarge, "", ""), req: UpdateRequest{Upgrade: true},
			notes: []string{`Plan "large" has no maintenance version; nothing to upgrade.`}},
		{name: "parameters merged, Secrets added", inst: instance(planSmall, `{"storage_gb":2,"keep":true}`, ""),
			req:     UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"storage_gb=3"}, FromSecret: fromSecret}},
			changes: []string{"parameters"},
			check: func(t *testing.T, inst *v1alpha1.ServiceInstance) {
				assert.Equal(t, string(inst.Spec.Parameters.Raw), `{"keep":true,"storage_gb":3}`)
				assert.DeepEqual(t, inst.Spec.ParametersFrom, fromSecret)
			}},
		{name: "a parameter the update schema asks for and the instance lacks", inst: instance(planSmall, "", ""),
			req:  UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"other=x"}}},
			want: `instance "db" not updated: invalid parameters: parameters: missing property 'storage_gb' (the plan's update schema asks for it in the update and the instance has no value to send: give it with -p storage_gb=VALUE)`},
		{name: "bad JSON", inst: instance(planSmall, "", ""), req: UpdateRequest{Parameters: &ParametersInput{Object: []byte(`{"a":`)}}, want: "JSON object", input: true},
		{name: "schema violation", inst: instance(planSmall, "", ""), req: UpdateRequest{Parameters: &ParametersInput{Pairs: []string{"storage_gb=11"}}},
			want: `instance "db" not updated: invalid parameters: parameter storage_gb: maximum: got 11, want 10`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withSchemas(t)
			before := tc.inst.DeepCopy()
			got, err := f.engine.PrepareUpdate(context.Background(), tc.inst, tc.req)
			assert.DeepEqual(t, tc.inst, before) // the caller's copy is not changed
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				assert.Equal(t, isInputError(err), tc.input, "%v", err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got.Changes, tc.changes)
			assert.DeepEqual(t, got.Notes, tc.notes)
			if tc.check != nil {
				tc.check(t, got.Instance)
			}
		})
	}
}

func TestPrepareBinding(t *testing.T) {
	fromSecret := func(key string) []v1alpha1.ParametersFromSource {
		return []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "params", Key: key}}}
	}
	for _, tc := range []struct {
		name   string
		up     bool // a user-provided instance
		params ParametersInput
		want   string // the error, or the binding's inline parameters
		input  bool
	}{
		{name: "no parameters"},
		{name: "typed and checked", params: ParametersInput{Pairs: []string{"role=readonly"}}, want: `{"role":"readonly"}`},
		{name: "schema violation", params: ParametersInput{Pairs: []string{"role=admin"}},
			want: `binding "b" not created: invalid parameters: parameter role`},
		{name: "Secret's parameters checked too", params: ParametersInput{FromSecret: fromSecret("json")}, want: `binding "b" not created: invalid parameters`},
		{name: "missing key in a Secret", params: ParametersInput{FromSecret: fromSecret("nokey")}, want: `Secret "params" in namespace "dev" has no key "nokey"`},
		{name: "bad JSON", params: ParametersInput{Object: []byte(`[]`)}, want: "parameters must be a JSON object", input: true},
		{name: "user-provided", up: true},
		{name: "user-provided takes no parameters", up: true, params: ParametersInput{Pairs: []string{"role=readonly"}},
			want: `instance "db" is user-provided: its bindings get a copy of its credentials and take no parameters; binding "b" not created`, input: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withSchemas(t)
			inst := &v1alpha1.ServiceInstance{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
				Spec:       v1alpha1.ServiceInstanceSpec{ClassExternalName: "db", PlanExternalName: "small", PlanID: planSmall},
				Status:     v1alpha1.ServiceInstanceStatus{Provisioned: &v1alpha1.ProvisionedState{PlanID: planSmall}},
			}
			class, err := f.st.Classes().Get(context.Background(), storetest.CatalogNamespace, v1alpha1.ClassRecordName(brokerName, classID))
			assert.NilError(t, err)
			if tc.up {
				inst.Spec.UserProvided = &v1alpha1.UserProvidedService{CredentialsSecret: "db-credentials"}
				class = nil
			}
			b, err := f.engine.PrepareBinding(context.Background(), inst, class, BindingRequest{
				BindingIntent: BindingIntent{Namespace: ns, Name: "b", Instance: "db", SecretName: "b-secret", ExternalID: "bind-1"},
				Parameters:    tc.params,
			})
			if tc.want != "" && tc.want[0] != '{' {
				assert.ErrorContains(t, err, tc.want)
				assert.Equal(t, isInputError(err), tc.input, "%v", err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, b.Spec.SecretName, "b-secret")
			assert.Equal(t, b.Spec.ExternalID, "bind-1")
			assert.DeepEqual(t, b.Spec.ParametersFrom, tc.params.FromSecret)
			if tc.want == "" {
				assert.Assert(t, b.Spec.Parameters == nil)
				return
			}
			var got map[string]any
			assert.NilError(t, json.Unmarshal(b.Spec.Parameters.Raw, &got))
			assert.Equal(t, string(b.Spec.Parameters.Raw), tc.want)
		})
	}
}
