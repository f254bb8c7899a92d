package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// loaderCreds are credentials a broker or an owner could give to take over the process of
// a workload reading them as environment variables.
var loaderCreds = map[string]any{
	"host": "db.example", "password": secretValue,
	"LD_PRELOAD": "/tmp/x.so", "BASH_ENV": "/tmp/x.sh", "NODE_OPTIONS": "--require /tmp/x.js", "PATH": "/tmp",
}

func readyMessage(b *v1alpha1.ServiceBinding) string {
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}

func eventsOf(rec *fakeEvents, reason string) []Event {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []Event
	for _, e := range rec.evs {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// A bind answer (synchronous or asynchronous) whose keys would become loader or
// interpreter variables: a binding projected as environment variables gets a Secret
// without them, a Warning Event and a Ready message naming them; a binding projected as
// files keeps every key.
func TestEnvShape_BindAnswerWithLoaderVariables_LeftOutOnlyWhereTheyBecomeVariables(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       v1alpha1.WorkloadProjection
		async   bool
		leftOut []string
	}{
		{name: "files", p: v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web"}},
		{name: "env", p: v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web", Env: true},
			leftOut: []string{"BASH_ENV", "LD_PRELOAD", "NODE_OPTIONS", "PATH"}},
		{name: "env, async broker", p: v1alpha1.WorkloadProjection{Kind: "StatefulSet", Name: "web", Env: true}, async: true,
			leftOut: []string{"BASH_ENV", "LD_PRELOAD", "NODE_OPTIONS", "PATH"}},
		{name: "env with a prefix", p: v1alpha1.WorkloadProjection{Kind: "CronJob", Name: "web", Env: true, EnvPrefix: "DB_"}},
		{name: "a prefix that completes a loader variable", p: v1alpha1.WorkloadProjection{Kind: "DaemonSet", Name: "web", Env: true, EnvPrefix: "PYTHON"},
			leftOut: []string{"PATH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, p := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = true })
			rec := &fakeEvents{}
			f.engine.cfg.Events = rec
			if tc.async {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "bop-1"}, nil)
				f.broker.SetBindingPollSequence("bop-1", fake.Succeeded())
				f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: loaderCreds}, nil)
			} else {
				f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: loaderCreds}, nil)
			}
			f.createBinding("app", func(in *BindingIntent) { in.Projections = []v1alpha1.WorkloadProjection{tc.p} })
			res := f.driveBinding("app")
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Assert(t, p.projected["app/"+tc.p.Kind+"/web/app"], "%v", p.projected)

			data := f.secretData("app")
			assert.Equal(t, string(data["password"]), secretValue)
			b := f.getBinding("app")
			evs := eventsOf(rec, ReasonEnvKeysLeftOut)
			for _, k := range []string{"BASH_ENV", "LD_PRELOAD", "NODE_OPTIONS", "PATH"} {
				_, kept := data[k]
				left := len(tc.leftOut) > 0 && strings.Contains(strings.Join(tc.leftOut, ","), k)
				assert.Equal(t, kept, !left, "key %s", k)
				assert.Equal(t, slicesContains(b.Status.Secret.Keys, k), !left, "status.secret.keys %v", b.Status.Secret.Keys)
				if left {
					assert.Assert(t, is.Contains(readyMessage(b), k))
					assert.Assert(t, len(evs) == 1 && strings.Contains(evs[0].Note, k), "%+v", evs)
				}
			}
			if len(tc.leftOut) == 0 {
				assert.Equal(t, len(evs), 0, "%+v", evs)
				assert.Assert(t, !strings.Contains(readyMessage(b), "left out"), readyMessage(b))
			} else {
				assert.Equal(t, evs[0].Type, EventWarning)
			}
			f.assertNoSecretInRecords()
		})
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// New credentials of a user-provided instance that add loader variables: the copy of a
// binding projected as environment variables leaves them out, with a Warning Event.
func TestEnvShape_UserProvidedCredentialsChanged_LoaderVariablesLeftOutOfTheCopy(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}
	rec := &fakeEvents{}
	f.engine.cfg.Events = rec
	ctx := context.Background()
	f.userProvided(map[string]string{"password": "old"})
	f.createBinding("env", func(in *BindingIntent) {
		in.ExternalID = "id-env"
		in.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web", Env: true}}
	})
	f.createBinding("files", func(in *BindingIntent) {
		in.ExternalID = "id-files"
		in.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}}
	})
	for _, name := range []string{"env", "files"} {
		assert.Equal(t, f.driveBinding(name).State, StateSettled)
	}

	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.UserProvided.Revision++ })
	assert.NilError(t, f.engine.WriteUserProvidedCredentials(ctx, f.get("db"),
		toBytes(map[string]string{"password": "new", "LD_PRELOAD": "/tmp/x.so", "JAVA_TOOL_OPTIONS": "-javaagent:/tmp/x.jar"})))
	res := f.step("db")
	assert.Equal(t, res.State, StateSettled, res.Message)

	env := f.secretData("env")
	assert.Equal(t, string(env["password"]), "new")
	_, ld := env["LD_PRELOAD"]
	_, java := env["JAVA_TOOL_OPTIONS"]
	assert.Assert(t, !ld && !java, "%v", env)
	assert.Assert(t, is.Contains(readyMessage(f.getBinding("env")), "LD_PRELOAD"))
	files := f.secretData("files")
	assert.Equal(t, string(files["LD_PRELOAD"]), "/tmp/x.so", "files are not variables")
	evs := eventsOf(rec, ReasonEnvKeysLeftOut)
	assert.Equal(t, len(evs), 1, "%+v", evs)
	assert.Assert(t, is.Contains(evs[0].Note, "JAVA_TOOL_OPTIONS"))
}

// bind (and apply -f, which makes the same request) refuses to expose another
// namespace's credentials as environment variables without a prefix, and a prefix under
// which every key is a loader variable, before anything is recorded; with a prefix of
// the consumer's it binds.
func TestEnvShape_Bind_SharedInstanceAsVariablesWithoutPrefix_Refused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		instNS string
		p      v1alpha1.WorkloadProjection
		want   string
	}{
		{name: "shared, --env", instNS: ns, p: v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web", Env: true},
			want: `binding "app" not created: binding "app" would expose the credentials of instance "db" of namespace "dev" to deployment "web" as environment variables without a prefix`},
		{name: "own, --env-prefix LD_", p: v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web", Env: true, EnvPrefix: "LD_"},
			want: `--env-prefix "LD_" makes every key a loader variable`},
		{name: "shared, --env-prefix DYLD_X", instNS: ns, p: v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web", Env: true, EnvPrefix: "DYLD_X"},
			want: `--env-prefix "DYLD_X" makes every key a loader variable`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := boundFromTeamB(t)
			f.engine.cfg.Projector = &previewingProjector{recordingProjector: &recordingProjector{projected: map[string]bool{}}}
			before := f.clusterState()
			bns := ns
			if tc.instNS != "" {
				bns = consumerNS
			}
			_, err := f.engine.Bind(context.Background(), BindRequest{Namespace: bns, Instance: "db", InstanceNamespace: tc.instNS, Name: "app2",
				Projections: []v1alpha1.WorkloadProjection{tc.p}})
			assert.ErrorContains(t, err, strings.ReplaceAll(tc.want, `"app"`, `"app2"`))
			assert.ErrorContains(t, err, "--env-prefix")
			var input *InputError
			assert.Assert(t, errors.As(err, &input), "a usage mistake: %v", err)
			assert.DeepEqual(t, f.clusterState(), before)
		})
	}

	t.Run("shared, with a prefix of the consumer's", func(t *testing.T) {
		f := boundFromTeamB(t)
		p := &recordingProjector{projected: map[string]bool{}}
		f.engine.cfg.Projector = &previewingProjector{recordingProjector: p}
		f.clockMoves()
		var said notes
		_, err := f.engine.Bind(context.Background(), BindRequest{Namespace: consumerNS, Instance: "db", InstanceNamespace: ns, Name: "app2",
			Projections: []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web", Env: true, EnvPrefix: "DB_"}}, Follow: said.follow(true)})
		assert.NilError(t, err)
		assert.Assert(t, p.projected["app2/Deployment/web/app2"], "%v", p.projected)
	})
}

// A binding record that projects another namespace's credentials as variables without a
// prefix (written by hand, or before that was refused) is refused its projection, and
// keys its Secret did not hold are left out of every later write.
func TestEnvShape_RecordedUnprefixedSharedEnv_RefusedAndNewKeysLeftOut(t *testing.T) {
	f := boundFromTeamB(t)
	p := &recordingProjector{projected: map[string]bool{}}
	f.engine.cfg.Projector = p
	b, err := f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	keys := b.Status.Secret.Keys
	b.Spec.Projections = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web", Env: true}}
	_, err = f.st.Bindings().Update(store.WithIntent(context.Background()), b)
	assert.NilError(t, err)

	res := f.stepBindingIn(consumerNS, "app")
	b, err = f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil, "%+v (%s)", b.Status.Conditions, res.Message)
	assert.Equal(t, c.Reason, ReasonRefusedUnprefixedEnv)
	assert.Assert(t, is.Contains(c.Message, "--env-prefix"))
	assert.Equal(t, len(p.projected), 0, "nothing projected")

	// A rotation's answer with a new key: it is left out.
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue, "HOME": "/tmp"}}, nil)
	_, err = f.engine.Rotate(context.Background(), RotateRequest{Namespace: consumerNS, Name: "app"})
	_ = err // the projection stays refused
	data, err := f.st.GetSecret(context.Background(), consumerNS, "app")
	assert.NilError(t, err)
	_, home := data.Data["HOME"]
	assert.Assert(t, !home, "a key new to the Secret is left out: %v (had %v)", data.Data, keys)
	assert.Equal(t, string(data.Data["password"]), secretValue)
}
