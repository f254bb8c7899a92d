package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// notes collects the lines an operation notes.
type notes []string

func (n *notes) follow(wait bool) Follow {
	return Follow{Wait: wait, Note: func(line string) { *n = append(*n, line) }}
}

// clockMoves makes the engine's clock (and the fake cluster's, which reads f.now) move
// on a little at every reading, so that the waits of a drive end.
func (f *fixture) clockMoves() {
	f.engine.cfg.Now = func() time.Time {
		f.now = f.now.Add(50 * time.Millisecond)
		return f.now
	}
}

// clusterState is every ConfigMap and Secret of the fake cluster, by namespace/name,
// with its resourceVersion: what a refused operation must leave as it was.
func (f *fixture) clusterState() map[string]string {
	f.t.Helper()
	out := map[string]string{}
	cms, err := f.cluster.Core.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, cm := range cms.Items {
		out["configmap "+cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	secrets, err := f.cluster.Core.CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, s := range secrets.Items {
		out["secret "+s.Namespace+"/"+s.Name] = s.ResourceVersion
	}
	return out
}

// previewingProjector is a recordingProjector that previews projections too.
type previewingProjector struct {
	*recordingProjector
	missing string
	server  []bool
}

func (p *previewingProjector) PreviewProjection(_ context.Context, namespace, _, _ string, w v1alpha1.WorkloadProjection, server bool) (WorkloadChange, error) {
	p.server = append(p.server, server)
	if w.Name == p.missing {
		return WorkloadChange{}, errors.New(strings.ToLower(w.Kind) + " \"" + w.Name + "\" not found in namespace \"" + namespace + "\"")
	}
	return WorkloadChange{Changed: true, After: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name}}}, nil
}

func TestBind_ChecksRecordsAndDrives_DefaultNames(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	var said notes

	res, err := f.engine.Bind(context.Background(), BindRequest{Namespace: ns, Instance: "db", Follow: said.follow(true)})

	assert.NilError(t, err)
	assert.Equal(t, res.Name, "db")
	assert.Equal(t, res.SecretName, "db")
	assert.Equal(t, res.Followed.State, StateSettled, res.Followed.Message)
	assert.Equal(t, res.Binding.Status.Phase, v1alpha1.PhaseReady)
	assert.DeepEqual(t, []string(said), []string{`Binding instance "db" as "db" in namespace "` + ns + `"...`})
	assert.Equal(t, string(f.secretData("db")["password"]), secretValue)
	assert.Assert(t, f.engine.cfg.Store.Intended(f.getBinding("db")), "the binding is written as the user's intent")
}

func TestBind_BadInput_LeavesEveryRecordAndSecretAsItWas(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   BindRequest
		setup func(t *testing.T, f *fixture)
		want  string
		input bool
	}{
		{name: "no instance, no one to ask", req: BindRequest{}, want: "bind needs the INSTANCE to bind", input: true},
		{name: "missing instance", req: BindRequest{Instance: "nosuch"}, want: `instance "nosuch" not found in namespace "` + ns + `"`},
		{name: "missing shared instance", req: BindRequest{Instance: "nosuch", InstanceNamespace: "team-a"},
			want: `list the instances with "kubectl catalog get instances -n team-a"`},
		{name: "not shared", req: BindRequest{Namespace: "team-b", Instance: "db", InstanceNamespace: ns},
			want: `binding "db" not created: binding "db" names instance "db" of namespace "` + ns + `", which does not exist or is not shared with namespace "team-b"`},
		{name: "limit reached", req: BindRequest{Instance: "db"},
			setup: func(t *testing.T, f *fixture) {
				f.createBinding("other", func(in *BindingIntent) { in.SecretName = "other" })
				other, err := f.bindingIn(ns, "other")
				assert.NilError(t, err)
				_, err = f.st.Instances().UpdateWithRetry(store.WithIntent(context.Background()), ns, "db", func(i *v1alpha1.ServiceInstance) error {
					i.Spec.MaxBindings = ptr.To[int32](1)
					i.Status.Consumers = []v1alpha1.ConsumerReservation{{Namespace: ns, Name: "other", UID: string(other.UID)}}
					return nil
				})
				assert.NilError(t, err)
			},
			want: `has reached its limit of 1 bindings (` + ns + `/other)`},
		{name: "name taken", req: BindRequest{Instance: "db", SecretName: "free"},
			setup: func(t *testing.T, f *fixture) {
				f.createBinding("db", func(in *BindingIntent) { in.SecretName = "taken" })
			},
			want: `binding "db" already exists in namespace "` + ns + `"`},
		{name: "foreign Secret", req: BindRequest{Instance: "db", SecretName: "mine"},
			setup: func(t *testing.T, f *fixture) {
				_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("mine", nil), metav1.CreateOptions{})
				assert.NilError(t, err)
			},
			want: `Secret "mine" already exists and is not managed by this binding`},
		{name: "missing Secret of a transform", req: BindRequest{Instance: "db", Transforms: []v1alpha1.SecretTransform{
			{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.SecretReference{Name: "extra"}}}}},
			want: `--add-keys-from-secret extra: Secret "extra" not found`},
		{name: "parameters not an object", req: BindRequest{Instance: "db", Parameters: ParametersInput{Object: []byte("[1]")}},
			want: "parameters must be a JSON object", input: true},
		{name: "missing workload", req: BindRequest{Instance: "db", Projections: []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "nosuch"}}},
			want: `binding "db" not created: deployment "nosuch" not found`},
		{name: "bad input, dry run", req: BindRequest{Instance: "nosuch", DryRun: DryRunServer}, want: `instance "nosuch" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, p := bindingFixture(t, nil)
			f.engine.cfg.Projector = &previewingProjector{recordingProjector: p, missing: "nosuch"}
			if tc.setup != nil {
				tc.setup(t, f)
			}
			before := f.clusterState()
			if tc.req.Namespace == "" {
				tc.req.Namespace = ns
			}
			var said notes
			tc.req.Follow = said.follow(true)

			_, err := f.engine.Bind(context.Background(), tc.req)

			assert.ErrorContains(t, err, tc.want)
			var input *InputError
			assert.Equal(t, errors.As(err, &input), tc.input, "a usage mistake: %v", err)
			assert.DeepEqual(t, f.clusterState(), before)
			assert.Equal(t, f.cluster.DryRuns(), 0)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
			assert.Assert(t, is.Len(said, 0), "nothing is said before a write that is not made")
		})
	}
}

func TestBind_DryRun_WritesNothingAndCallsNoBroker(t *testing.T) {
	for _, tc := range []struct {
		dry     DryRun
		dryRuns int
	}{{dry: DryRunClient}, {dry: DryRunServer, dryRuns: 1}} {
		t.Run(string(tc.dry), func(t *testing.T) {
			f, p := bindingFixture(t, nil)
			pp := &previewingProjector{recordingProjector: p}
			f.engine.cfg.Projector = pp
			before := f.clusterState()

			res, err := f.engine.Bind(context.Background(), BindRequest{Namespace: ns, Instance: "db", Name: "ro", ExternalID: "fixed-id", DryRun: tc.dry,
				Projections: []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}}})

			assert.NilError(t, err)
			assert.Equal(t, res.Binding.Name, "ro")
			assert.Equal(t, res.Binding.Spec.SecretName, "ro")
			assert.Equal(t, res.Binding.Spec.ExternalID, "fixed-id")
			assert.Assert(t, is.Len(res.Changes, 1))
			assert.Equal(t, res.Changes[0].Workload.Name, "web")
			assert.DeepEqual(t, pp.server, []bool{tc.dry == DryRunServer})
			assert.DeepEqual(t, f.clusterState(), before)
			assert.Equal(t, f.cluster.DryRuns(), tc.dryRuns)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
			assert.Assert(t, is.Len(p.projected, 0))
		})
	}
}

// asker answers Select with the first option, recording the options.
type asker struct{ options []string }

func (a *asker) Select(_ string, options []string, _ string) (string, error) {
	a.options = options
	return options[0], nil
}

func (a *asker) Input(string, string, string) (string, error) { return "", errors.New("not asked") }

func TestBind_NoInstanceGiven_AsksAmongTheReadyOnes(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	provisionReturns(f, 202, nil)
	f.create("slow", planSmall, "")
	f.step("slow")
	a := &asker{}

	res, err := f.engine.Bind(context.Background(), BindRequest{Namespace: ns, Ask: a, Follow: Follow{Wait: true}})

	assert.NilError(t, err)
	assert.DeepEqual(t, a.options, []string{"db"})
	assert.Equal(t, res.Instance, "db")
	assert.Equal(t, res.Name, "db")
}

func TestBind_BrokerFailure_IsAnErrorWithTheBinding(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.broker.BindReturns(nil, fake.HTTPError("PUT", 400, "", "bad request"))

	res, err := f.engine.Bind(context.Background(), BindRequest{Namespace: ns, Instance: "db", Follow: Follow{Wait: true}})

	assert.ErrorContains(t, err, `binding "db" failed: `)
	assert.Assert(t, res.Binding != nil, "the verb shows the binding as it stands")
}

func TestBind_RefusedAfterTheCheck_RecordRemovedAndNothingCreated(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("db", nil)
	b, err := f.st.Bindings().UpdateWithRetry(context.Background(), ns, "db", func(b *v1alpha1.ServiceBinding) error {
		b.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRefused, Status: metav1.ConditionTrue, Reason: ReasonRefusedLimitReached,
			Message: "the limit is reached; nothing is sent to the broker for this record until that changes"}}
		return nil
	})
	assert.NilError(t, err)

	err = f.engine.dropRefusedBinding(context.Background(), Result{Refused: true, Binding: b})

	assert.Error(t, err, `binding "db" not created: the limit is reached`)
	_, err = f.st.Bindings().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err), "the refused record is removed: %v", err)
	assert.Assert(t, is.Len(f.broker.Calls(), 0))
}
