package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

func secretTemplate(only bool, kv ...string) *v1alpha1.SecretTemplate {
	t := &v1alpha1.SecretTemplate{Keys: map[string]string{}, Only: only}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Keys[kv[i]] = kv[i+1]
	}
	return t
}

const databaseURL = `postgres://{{ .credentials.host }}:{{ .credentials.port }}/{{ .instance.name }}?password={{ urlquery .credentials.password }}&b={{ .binding.name }}&plan={{ .instance.plan }}`

// A binding with a template gets the rendered keys in its Secret, over the credentials
// or instead of them (only), synchronously or asynchronously bound.
func TestSecretTemplate_Bind_RendersTheKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		only  bool
		async bool
		keys  []string
	}{
		{name: "with the credentials", keys: []string{"DATABASE_URL", "host", "password", "port", "provider", "type"}},
		{name: "only the rendered keys", only: true, keys: []string{"DATABASE_URL", "provider", "type"}},
		{name: "async broker", async: true, keys: []string{"DATABASE_URL", "host", "password", "port", "provider", "type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = true })
			if tc.async {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
				f.broker.SetBindingPollSequence("bop-1", fake.Succeeded())
				f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"host": "db.example", "port": 5432, "password": secretValue}}, nil)
			}
			f.createBinding("web", func(in *BindingIntent) { in.SecretTemplate = secretTemplate(tc.only, "DATABASE_URL", databaseURL) })

			res := f.driveBinding("web")

			assert.Equal(t, res.State, StateSettled, res.Message)
			data := f.secretData("web")
			assert.Equal(t, string(data["DATABASE_URL"]), "postgres://db.example:5432/db?password="+secretValue+"&b=web&plan=plan-small")
			assert.DeepEqual(t, f.getBinding("web").Status.Secret.Keys, tc.keys)
			f.assertNoSecretInRecords()
		})
	}
}

// A binding record whose template cannot work on any credentials (written by hand, or by
// an older client) is refused before the broker is asked.
func TestSecretTemplate_BindStep_BrokenTemplate_NoBrokerCall(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("web", func(in *BindingIntent) {
		in.SecretTemplate = secretTemplate(false, "DATABASE_URL", `{{ .credentials.host `)
	})

	res := f.driveBinding("web")

	assert.Equal(t, res.State, StateNeedsUser, res.Message)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
	c := meta.FindStatusCondition(f.getBinding("web").Status.Conditions, v1alpha1.ConditionFailed)
	assert.Assert(t, c != nil)
	assert.Assert(t, is.Contains(c.Message, `secret template key "DATABASE_URL": the template does not parse`))
	assert.Assert(t, is.Contains(c.Message, "spec.secretTemplate"))
}

// bind checks the template before anything is recorded or sent: a template that does
// not parse, breaks a bound, or names what the instance and the binding do not have.
func TestSecretTemplate_Bind_BadTemplate_NothingRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    *v1alpha1.SecretTemplate
		want string
	}{
		{name: "does not parse", t: secretTemplate(false, "URL", "{{ .credentials.host "), want: `secret template key "URL": the template does not parse`},
		{name: "unknown function", t: secretTemplate(false, "URL", `{{ env "HOME" }}`), want: `function "env" not defined`},
		{name: "define", t: secretTemplate(false, "URL", `{{ define "x" }}{{ end }}`), want: "{{define}} and {{block}} are not allowed"},
		{name: "invalid key", t: secretTemplate(false, "a b", "x"), want: `secret template key "a b": not a valid Secret key`},
		{name: "no keys", t: secretTemplate(false), want: "secret template has no keys"},
		{name: "unknown instance field", t: secretTemplate(false, "URL", "{{ .instance.nme }}"), want: `map has no entry for key "nme"`},
		{name: "wrong arguments", t: secretTemplate(false, "URL", "{{ b64enc }}"), want: "wrong number of args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			before := f.clusterState()

			_, err := f.engine.Bind(context.Background(), BindRequest{Namespace: ns, Instance: "db", Name: "web", SecretTemplate: tc.t, Follow: Follow{Wait: true}})

			assert.ErrorContains(t, err, `binding "web" not created: `)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, "fix the template")
			var input *InputError
			assert.Assert(t, errors.As(err, &input), "a usage mistake: %v", err)
			assert.DeepEqual(t, f.clusterState(), before)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
		})
	}
}

// A template that fails on the broker's answer (a key the credentials do not have)
// writes no Secret, says which key failed without any value, and unbinds what the broker
// made.
func TestSecretTemplate_Bind_FailsOnTheAnswer_NoSecretNoValueShown(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("web", func(in *BindingIntent) {
		in.SecretTemplate = secretTemplate(false, "DATABASE_URL", `{{ .credentials.password }}{{ .credentials.uri }}`)
	})

	res := f.driveBinding("web")

	assert.Equal(t, res.State, StateNeedsUser, res.Message)
	_, err := f.st.GetSecret(context.Background(), ns, "web")
	assert.Assert(t, err != nil, "no Secret")
	b := f.getBinding("web")
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionFailed)
	assert.Assert(t, c != nil)
	assert.Assert(t, is.Contains(c.Message, `secret template key "DATABASE_URL"`))
	assert.Assert(t, is.Contains(c.Message, `map has no entry for key "uri"`))
	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), 1), "what the broker made is unbound")
	evs := eventsOf(rec, ReasonSecretTemplateFailed)
	assert.Assert(t, is.Len(evs, 1))
	assert.Assert(t, is.Contains(evs[0].Note, `secret template key "DATABASE_URL"`))
	for _, e := range rec.evs {
		assert.Assert(t, !strings.Contains(e.Note, secretValue), "an Event shows a credential: %s", e.Note)
	}
	f.assertNoSecretInRecords()
}

// A rotation renders the template from the new credentials; a rotation with a new
// template that fails, before the broker is asked or on its answer, leaves the Secret as
// it was and names the key; a good one afterwards rotates.
func TestSecretTemplate_Rotate_FailingTemplateLeavesTheOldSecret(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("web", func(in *BindingIntent) { in.SecretTemplate = secretTemplate(false, "DATABASE_URL", databaseURL) })
	assert.Equal(t, f.driveBinding("web").State, StateSettled)
	f.clockMoves()
	old := f.secretData("web")

	// Checked before anything is written or sent.
	before := f.clusterState()
	calls := len(f.broker.Calls())
	_, err := f.engine.Rotate(context.Background(), RotateRequest{Namespace: ns, Name: "web", SecretTemplate: secretTemplate(false, "DATABASE_URL", "{{ .instance.nme }}"), Follow: Follow{Wait: true}})
	assert.ErrorContains(t, err, `binding "web" not rotated: secret template key "DATABASE_URL"`)
	assert.ErrorContains(t, err, "fix the template")
	assert.DeepEqual(t, f.clusterState(), before)
	assert.Equal(t, len(f.broker.Calls()), calls)

	// Failing on the broker's answer.
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"host": "db2.example", "port": 5432, "password": "r0tat3d-pw"}}, nil)
	_, err = f.engine.Rotate(context.Background(), RotateRequest{Namespace: ns, Name: "web", SecretTemplate: secretTemplate(false, "DATABASE_URL", "{{ .credentials.uri }}"), Follow: Follow{Wait: true}})
	assert.ErrorContains(t, err, `secret template key "DATABASE_URL"`)
	assert.DeepEqual(t, f.secretData("web"), old)
	for _, s := range []string{"r0tat3d-pw", secretValue} {
		assert.Assert(t, !strings.Contains(err.Error(), s), "the error shows a credential: %v", err)
	}

	// Fixed: the next rotation renders the new credentials.
	_, err = f.engine.Rotate(context.Background(), RotateRequest{Namespace: ns, Name: "web", SecretTemplate: secretTemplate(true, "DATABASE_URL", databaseURL), Follow: Follow{Wait: true}})
	assert.NilError(t, err)
	data := f.secretData("web")
	assert.Equal(t, string(data["DATABASE_URL"]), "postgres://db2.example:5432/db?password=r0tat3d-pw&b=web&plan=plan-small")
	assert.DeepEqual(t, f.getBinding("web").Status.Secret.Keys, []string{"DATABASE_URL", "provider", "type"})
	assert.Assert(t, f.getBinding("web").Spec.SecretTemplate.Only)
}

// The env-shaping rules apply to rendered keys: a rendered loader variable is left out
// of the Secret of a binding projected as environment variables.
func TestSecretTemplate_EnvShaping_AppliesToRenderedKeys(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	f.createBinding("web", func(in *BindingIntent) {
		in.SecretTemplate = secretTemplate(false, "LD_PRELOAD", "/tmp/x.so", "DATABASE_URL", databaseURL)
		in.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web", Env: true}}
	})

	assert.Equal(t, f.driveBinding("web").State, StateSettled)

	data := f.secretData("web")
	_, has := data["LD_PRELOAD"]
	assert.Assert(t, !has)
	assert.Assert(t, is.Contains(string(data["DATABASE_URL"]), "postgres://"))
	assert.Assert(t, is.Len(eventsOf(rec, ReasonEnvKeysLeftOut), 1))
}

// A binding of a user-provided instance renders its copy with the template; new
// credentials the template cannot render leave the copy as it was.
func TestSecretTemplate_UserProvided_CopyRenderedAndKeptOnFailure(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}
	ctx := context.Background()
	f.userProvided(map[string]string{"host": "db.internal", "password": upsPassword})
	f.createBinding("app", func(in *BindingIntent) {
		in.SecretTemplate = secretTemplate(false, "DATABASE_URL", "postgres://{{ .credentials.host }}/{{ .instance.name }}?p={{ .credentials.password }}")
	})
	assert.Equal(t, f.driveBinding("app").State, StateSettled)
	assert.Equal(t, string(f.secretData("app")["DATABASE_URL"]), "postgres://db.internal/db?p="+upsPassword)
	before := f.secretData("app")

	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.UserProvided.Revision++ })
	assert.NilError(t, f.engine.WriteUserProvidedCredentials(ctx, f.get("db"), toBytes(map[string]string{"password": "new-pa55word"})))
	f.step("db")
	for range 3 {
		f.stepBinding("app")
		f.advance(time.Minute)
	}

	assert.DeepEqual(t, f.secretData("app"), before)
	c := meta.FindStatusCondition(f.getBinding("app").Status.Conditions, v1alpha1.ConditionReady)
	assert.Assert(t, c != nil && strings.Contains(c.Message, `secret template key "DATABASE_URL"`), "%+v", c)
	f.assertNoValueInRecords("new-pa55word")
	f.assertNoValueInRecords(upsPassword)
}
