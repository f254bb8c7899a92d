package bind_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/bind"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/describe"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Records of the fixture.
const (
	ns       = storetest.UserNamespace
	catNS    = storetest.CatalogNamespace
	broker   = "acme"
	classID  = "svc-pg"
	planHob  = "plan-hobby"
	planCold = "plan-cold"
)

// fixture is a fake cluster with a broker, a class with a bindable and a non-bindable
// plan, a ready instance "db" of each, and a fake broker answering binds.
type fixture struct {
	cluster *storetest.Cluster
	osb     *fake.Client
	eng     *engine.Engine
	// st is the engine's store, which the command writes with too, as in the CLI.
	st     *store.Store
	out    bytes.Buffer
	errOut bytes.Buffer
}

// credentialValues are what the fake broker hands out; no output may show them.
var credentialValues = []string{"s3cr3t-p4ssw0rd-value", "postgresql://u:s3cr3t-p4ssw0rd-value@pg.example:5432/app"}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{cluster: storetest.NewCluster(), osb: fake.New()}
	st := f.cluster.Store()
	f.st = st
	f.eng = enginetest.New(st, f.osb, func(c *engine.Config) {
		c.Projector = kube.WorkloadProjector{P: &projection.Projector{Client: f.cluster.Core}}
	})
	ctx := context.Background()
	_, err := st.Brokers().Create(ctx, &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: broker},
		Spec:       v1alpha1.BrokerSpec{URL: "https://broker.example", Scope: v1alpha1.ScopeCluster},
	})
	assert.NilError(t, err)
	className := v1alpha1.ClassRecordName(broker, classID)
	_, err = st.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: className},
		Spec: v1alpha1.ServiceClassSpec{
			BrokerName: broker, Scope: v1alpha1.ScopeCluster, ID: classID, ExternalName: "postgresql", Bindable: true,
			Plans: []v1alpha1.ServicePlan{{ID: planHob, ExternalName: "hobby"}, {ID: planCold, ExternalName: "cold", Bindable: ptr.To(false)}},
		},
	})
	assert.NilError(t, err)
	_, err = st.PlanSchemas().Create(ctx, &v1alpha1.ServicePlanSchemas{
		ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: className},
		Spec: v1alpha1.ServicePlanSchemasSpec{BrokerName: broker, Scope: v1alpha1.ScopeCluster, ClassID: classID, Plans: []v1alpha1.PlanSchemas{{
			PlanID: planHob,
			BindingCreate: &runtime.RawExtension{Raw: []byte(`{"type":"object","additionalProperties":false,
				"properties":{"role":{"type":"string","enum":["readwrite","readonly"]}}}`)},
		}}},
	})
	assert.NilError(t, err)
	for name, plan := range map[string]string{"db": planHob, "cold": planCold} {
		inst, err := st.Instances().Create(ctx, &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: broker, ClassExternalName: "postgresql", ClassID: classID,
				PlanExternalName: plan, PlanID: plan, ExternalID: "inst-" + name},
			Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhaseReady},
				Provisioned: &v1alpha1.ProvisionedState{PlanID: plan}},
		})
		assert.NilError(t, err)
		// Provisioned by the engine, the instance holds its id's claim.
		_, _, err = st.ClaimExternalID(ctx, v1alpha1.KindServiceInstance, inst, inst.Spec.ExternalID)
		assert.NilError(t, err)
	}
	f.osb.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{
		"host": "pg.example", "port": 5432, "username": "u", "password": credentialValues[0], "uri": credentialValues[1],
	}, Endpoints: []osb.Endpoint{{Host: "pg.example", Ports: []string{"5432"}}}}, nil)
	_, err = f.cluster.Core.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "app:1"}},
		}}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	return f
}

// options are bind's options on the fixture, as NewCmdBind would set them.
func (f *fixture) options(inst string, change func(*bind.Options)) *bind.Options {
	o := &bind.Options{
		Instance: inst,
		VerbOptions: lifecycle.VerbOptions{Output: printers.NewOutputFlags(false), DryRun: cmdutil.DryRunNone,
			Wait: lifecycle.WaitFlags{Interval: time.Second, Timeout: time.Minute},
			Clients: cmdutil.Clients{Namespace: ns, Engine: f.eng,
				Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &f.out, &f.errOut)}},
	}
	if change != nil {
		change(o)
	}
	return o
}

func (f *fixture) run(t *testing.T, o *bind.Options) error {
	t.Helper()
	if err := o.Validate(nil); err != nil {
		return err
	}
	return o.Run(context.Background())
}

func TestBind_Run_BindsAndReportsKeysNotValues(t *testing.T) {
	f := newFixture(t)
	err := f.run(t, f.options("db", func(o *bind.Options) {
		o.Params.Params = []string{"role=readonly"}
		o.To = []string{"deployment/web"}
	}))
	assert.NilError(t, err)
	elapsed := regexp.MustCompile(`\(\d+s\)`)
	golden.Assert(t, elapsed.ReplaceAllString(f.out.String()+"--- stderr\n"+f.errOut.String(), "(Ns)"), "bind.golden")
	st := f.cluster.Store()
	b, err := st.Bindings().Get(context.Background(), ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, b.Spec.SecretName, "db")
	assert.Equal(t, string(b.Spec.Parameters.Raw), `{"role":"readonly"}`)
	s, err := st.GetSecret(context.Background(), ns, "db")
	assert.NilError(t, err)
	assert.Equal(t, string(s.Data["password"]), credentialValues[0])

	// Nothing a user sees shows a credential value, unless asked to.
	var desc bytes.Buffer
	desc.WriteString(describe.BindingView(b, describe.SecretView{Secret: s}, time.Now()))
	assert.NilError(t, printers.BindingTable(&desc, []v1alpha1.ServiceBinding{*b}, true, true, time.Now()))
	for _, text := range []string{f.out.String(), f.errOut.String(), desc.String()} {
		for _, v := range credentialValues {
			assert.Assert(t, !strings.Contains(text, v), "credential value shown:\n%s", text)
		}
	}
	shown := describe.BindingView(b, describe.SecretView{Secret: s, Show: true}, time.Now())
	assert.Assert(t, is.Contains(shown, credentialValues[0]))
}

func TestBind_Run_DryRunClientWritesNothing(t *testing.T) {
	f := newFixture(t)
	err := f.run(t, f.options("db", func(o *bind.Options) {
		o.DryRun = cmdutil.DryRunClient
		o.To = []string{"deployment/web"}
		o.EnvPrefix = "DB_"
		o.ExternalID = "fixed-id"
	}))
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(f.out.String(), "kind: ServiceBinding"))
	assert.Assert(t, is.Contains(f.out.String(), "externalID: fixed-id"))
	assert.Assert(t, is.Contains(f.out.String(), "prefix: DB_"))
	assert.Assert(t, is.Contains(f.errOut.String(), "environment variables prefixed DB_"))
	_, err = f.cluster.Store().Bindings().Get(context.Background(), ns, "db")
	assert.Assert(t, err != nil)
	d, err := f.cluster.Core.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Assert(t, is.Len(d.Spec.Template.Spec.Containers[0].EnvFrom, 0))
	assert.Assert(t, is.Len(f.osb.Calls(), 0))
}

func TestBind_Run_DryRunServerSendsTheBindingAsADryRun(t *testing.T) {
	f := newFixture(t)
	err := f.run(t, f.options("db", func(o *bind.Options) {
		o.DryRun = cmdutil.DryRunServer
		o.ExternalID = "fixed-id"
	}))
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(f.out.String(), "kind: ServiceBinding"))
	assert.Assert(t, is.Contains(f.errOut.String(), "Dry run (server)"))
	_, err = f.cluster.Store().Bindings().Get(context.Background(), ns, "db")
	assert.Assert(t, store.IsNotFound(err), "a server dry run stored the binding: %v", err)
	assert.Equal(t, f.cluster.DryRuns(), 1)
	assert.Assert(t, is.Len(f.osb.Calls(), 0))
}

func TestBind_Run_RefusesBeforeRecordingAnything(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inst   string
		change func(*bind.Options)
		setup  func(t *testing.T, f *fixture)
		want   string
	}{
		{name: "missing instance", inst: "nosuch", want: `instance "nosuch" not found in namespace "dev": list the instances with "kubectl catalog get instances -n dev"`},
		{name: "not bindable", inst: "cold", want: `plan "cold" of class "postgresql" is not bindable`},
		{name: "schema", inst: "db", change: func(o *bind.Options) { o.Params.Params = []string{"role=admin"} }, want: "role"},
		{name: "foreign Secret", inst: "db", change: func(o *bind.Options) { o.SecretName = "mine" },
			setup: func(t *testing.T, f *fixture) {
				_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
				assert.NilError(t, err)
			},
			want: `Secret "mine" already exists and is not managed by this binding: choose another with --secret-name`},
		{name: "missing workload", inst: "db", change: func(o *bind.Options) { o.To = []string{"statefulset/nosuch"} }, want: `statefulset "nosuch" not found`},
		{name: "name taken", inst: "db",
			setup: func(t *testing.T, f *fixture) {
				_, err := f.cluster.Store().Bindings().Create(context.Background(), engine.NewBinding(engine.BindingIntent{Namespace: ns, Name: "db", Instance: "db", SecretName: "other"}))
				assert.NilError(t, err)
			},
			want: `binding "db" already exists in namespace "dev": see it with "kubectl catalog describe binding db -n dev", wait for what is under way on it with "kubectl catalog wait binding/db --for=condition=Ready -n dev"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			before, err := f.cluster.Core.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
			assert.NilError(t, err)
			err = f.run(t, f.options(tc.inst, tc.change))
			assert.ErrorContains(t, err, tc.want)
			after, err := f.cluster.Core.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
			assert.NilError(t, err)
			assert.Equal(t, len(after.Items), len(before.Items))
			assert.Assert(t, is.Len(f.osb.CallsTo(fake.MethodBind), 0))
		})
	}
}
