package engine

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const (
	firstSecretValue  = "first-value-of-the-params-secret"
	secondSecretValue = "second-value-of-the-params-secret"
)

// putSecret creates or replaces Secret name of the namespace with data.
func (f *fixture) putSecret(name string, data map[string]string) {
	f.t.Helper()
	secrets := f.cluster.Core.CoreV1().Secrets(ns)
	s := secret(name, data)
	if _, err := secrets.Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		_, err = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
		assert.NilError(f.t, err)
		return
	}
	_, err := secrets.Create(context.Background(), s, metav1.CreateOptions{})
	assert.NilError(f.t, err)
}

// secretExists reports whether Secret name exists in the namespace.
func (f *fixture) secretExists(name string) bool {
	f.t.Helper()
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

// withParamsFrom makes instance name take parameters from Secret secretName too.
func (f *fixture) withParamsFrom(name, secretName string) {
	f.t.Helper()
	inst := f.get(name)
	inst.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: secretName}}}
	_, err := f.st.Instances().Update(store.WithIntent(context.Background()), inst)
	assert.NilError(f.t, err)
}

// interruptedInstanceCall steps instance name with a broker that acts and then sees the
// command die before the outcome is stored, leaving the call in flight.
func (f *fixture) interruptedInstanceCall(name string, method string) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	died := func() error { cancel(); return &osb.TransportError{Canceled: true, Err: context.Canceled} }
	switch method {
	case fake.MethodProvision:
		f.broker.OnProvision(func(context.Context, *osb.ProvisionRequest) (*osb.ProvisionResponse, error) { return nil, died() })
	case fake.MethodUpdate:
		f.broker.OnUpdate(func(context.Context, *osb.UpdateRequest) (*osb.UpdateResponse, error) { return nil, died() })
	}
	_, err := f.engine.StepInstance(ctx, f.get(name))
	assert.ErrorIs(f.t, err, context.Canceled)
	op := f.get(name).Status.InFlight
	assert.Assert(f.t, op != nil && !op.Async, "the call is left in flight")
}

// engineAs is another engine over the fixture's cluster, as a different process with
// its own view of the platform (reconcile, say).
func (f *fixture) engineAs(holder string, platform Platform) *Engine {
	cfg := f.engine.cfg
	cfg.Holder, cfg.Platform = holder, platform
	return New(cfg)
}

func TestStepInstance_ParametersSecretChangedBeforeTheResend_ResendsTheFirstValues(t *testing.T) {
	f := newFixture(t)
	f.putSecret("db-params", map[string]string{"password": firstSecretValue})
	f.create("db", planSmall, `{"a":1,"note":"<b>"}`)
	f.withParamsFrom("db", "db-params")

	f.interruptedInstanceCall("db", fake.MethodProvision)
	op := f.get("db").Status.InFlight
	assert.Assert(t, op.Sent != nil && op.Sent.ParametersSecret != "", "the parameters from Secrets are kept at the write-ahead: %+v", op.Sent)
	kept, err := f.st.GetSecret(context.Background(), ns, op.Sent.ParametersSecret)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(kept.OwnerReferences, 1))
	assert.Equal(t, kept.OwnerReferences[0].UID, f.get("db").UID, "the kept Secret is owned by the record")
	assert.Equal(t, kept.Labels[store.LabelInstance], "db")
	f.assertNoValueInRecords(firstSecretValue)

	f.putSecret("db-params", map[string]string{"password": secondSecretValue})
	provisionReturns(f, 200, nil)
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	calls := f.broker.CallsTo(fake.MethodProvision)
	assert.Assert(t, is.Len(calls, 2))
	first, second := calls[0].Request.(osb.ProvisionRequest), calls[1].Request.(osb.ProvisionRequest)
	assert.DeepEqual(t, first, second)
	assert.Assert(t, strings.Contains(string(second.Parameters), firstSecretValue), "%s", second.Parameters)
	inst := f.get("db")
	assert.Equal(t, inst.Status.Provisioned.ParametersChecksum, op.ParametersChecksum, "success records what was sent")
	assert.Assert(t, !f.secretExists(op.Sent.ParametersSecret), "the kept Secret goes once the outcome is stored")

	// The changed Secret is sent by the next update of the instance.
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 200}, nil)
	assert.Equal(t, f.step("db").State, StateSettled)
	upd := f.broker.CallsTo(fake.MethodUpdate)
	assert.Assert(t, is.Len(upd, 1))
	assert.Equal(t, string(upd[0].Request.(osb.UpdateRequest).Parameters), `{"password":"`+secondSecretValue+`"}`)
	f.assertNoValueInRecords(secondSecretValue)
}

func TestStepInstance_NamespaceUnreadableByTheVerb_ReconcileResendsTheSameSpaceGUID(t *testing.T) {
	f := newFixture(t)
	// The user may not get namespaces: the verb sends the namespace's name.
	f.engine = f.engineAs("verb", StaticPlatform{Cluster: "cluster-1", User: testUser, NamespaceUIDs: map[string]string{ns: ns}})
	f.create("db", planSmall, `{"a":1}`)
	f.interruptedInstanceCall("db", fake.MethodProvision)

	reconciler := f.engineAs("reconcile", StaticPlatform{Cluster: "cluster-1", User: testUser, NamespaceUIDs: map[string]string{ns: "ns-uid-1"}})
	provisionReturns(f, 200, nil)
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	res, err := reconciler.StepInstance(context.Background(), f.get("db"))
	assert.NilError(t, err)

	assert.Equal(t, res.State, StateSettled, res.Message)
	calls := f.broker.CallsTo(fake.MethodProvision)
	assert.Assert(t, is.Len(calls, 2))
	first, second := calls[0].Request.(osb.ProvisionRequest), calls[1].Request.(osb.ProvisionRequest)
	assert.Equal(t, first.SpaceGUID, ns)
	assert.DeepEqual(t, first, second)
}

func TestStepBinding_NamespaceUnreadableAndSecretChanged_ReconcileResendsTheSameBind(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.putSecret("app-params", map[string]string{"token": firstSecretValue})
	f.engine = f.engineAs("verb", StaticPlatform{Cluster: "cluster-1", User: testUser, NamespaceUIDs: map[string]string{ns: ns}})
	f.createBinding("app", func(in *BindingIntent) {
		in.Parameters = []byte(`{"role":"reader"}`)
		in.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "app-params"}}}
	})
	ctx, cancel := context.WithCancel(context.Background())
	f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		cancel()
		return nil, &osb.TransportError{Canceled: true, Err: context.Canceled}
	})
	_, err := f.engine.StepBinding(ctx, f.getBinding("app"))
	assert.ErrorIs(t, err, context.Canceled)
	op := f.getBinding("app").Status.InFlight
	assert.Assert(t, op != nil && op.Sent != nil && op.Sent.ParametersSecret != "")
	f.assertNoValueInRecords(firstSecretValue)

	f.putSecret("app-params", map[string]string{"token": secondSecretValue})
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 200, Credentials: map[string]any{"password": secretValue}}, nil)
	reconciler := f.engineAs("reconcile", StaticPlatform{Cluster: "cluster-1", User: testUser, NamespaceUIDs: map[string]string{ns: "ns-uid-1"}})
	reconciler.cfg.Projector = f.engine.cfg.Projector
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	res, err := reconciler.StepBinding(context.Background(), f.getBinding("app"))
	assert.NilError(t, err)

	assert.Equal(t, res.State, StateSettled, res.Message)
	calls := f.broker.CallsTo(fake.MethodBind)
	assert.Assert(t, is.Len(calls, 2))
	first, second := calls[0].Request.(osb.BindRequest), calls[1].Request.(osb.BindRequest)
	assert.Equal(t, first.BindResource.AppGUID, ns)
	assert.DeepEqual(t, first, second)
	assert.Assert(t, strings.Contains(string(second.Parameters), firstSecretValue))
	assert.Equal(t, f.getBinding("app").Status.Bound.ParametersChecksum, op.ParametersChecksum)
	assert.Assert(t, !f.secretExists(op.Sent.ParametersSecret), "the kept Secret goes once the outcome is stored")
}

func TestStepInstance_UpdateResend_SendsTheKeptUpdateThenTheNewerSpec(t *testing.T) {
	f := newFixture(t)
	f.putSecret("db-params", map[string]string{"password": firstSecretValue})
	f.create("db", planSmall, `{"a":1}`)
	f.withParamsFrom("db", "db-params")
	assert.Equal(t, f.step("db").State, StateSettled)
	provisioned := f.get("db").Status.Provisioned.ParametersChecksum
	setInline := func(params string) {
		inst := f.get("db")
		inst.Spec.Parameters = &runtime.RawExtension{Raw: []byte(params)}
		_, err := f.st.Instances().Update(store.WithIntent(context.Background()), inst)
		assert.NilError(t, err)
	}
	setInline(`{"a":2}`)
	f.interruptedInstanceCall("db", fake.MethodUpdate)
	op := f.get("db").Status.InFlight

	// Meanwhile the spec goes back to what was provisioned, and the Secret changes.
	setInline(`{"a":1}`)
	f.putSecret("db-params", map[string]string{"password": secondSecretValue})
	f.broker.UpdateReturns(&osb.UpdateResponse{StatusCode: 200}, nil)
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	res := f.step("db")

	calls := f.broker.CallsTo(fake.MethodUpdate)
	assert.Assert(t, is.Len(calls, 2), "the re-send is made even though the spec matches what was provisioned")
	first, second := calls[0].Request.(osb.UpdateRequest), calls[1].Request.(osb.UpdateRequest)
	assert.DeepEqual(t, first, second)
	assert.Equal(t, string(second.Parameters), `{"a":2,"password":"`+firstSecretValue+`"}`)
	inst := f.get("db")
	assert.Equal(t, inst.Status.Provisioned.ParametersChecksum, op.ParametersChecksum, "success records what was sent")
	assert.Assert(t, inst.Status.Provisioned.ParametersChecksum != provisioned)
	assert.Equal(t, res.State, StateWaiting, "the spec moved on: a new update follows")

	assert.Equal(t, f.step("db").State, StateSettled)
	calls = f.broker.CallsTo(fake.MethodUpdate)
	assert.Assert(t, is.Len(calls, 3))
	assert.Equal(t, string(calls[2].Request.(osb.UpdateRequest).Parameters), `{"a":1,"password":"`+secondSecretValue+`"}`)
	assert.Assert(t, calls[2].Request.(osb.UpdateRequest).RequestIdentity != first.RequestIdentity, "a new update, not a re-send")
}

func TestStepInstance_KeptParametersNotTheRecords_AreNeverSentAndTheInstanceIsMitigated(t *testing.T) {
	f := newFixture(t)
	f.putSecret("db-params", map[string]string{"password": firstSecretValue})
	f.create("db", planSmall, "")
	f.withParamsFrom("db", "db-params")
	f.interruptedInstanceCall("db", fake.MethodProvision)
	name := f.get("db").Status.InFlight.Sent.ParametersSecret

	// The kept Secret is replaced by one the record does not own.
	secrets := f.cluster.Core.CoreV1().Secrets(ns)
	assert.NilError(t, secrets.Delete(context.Background(), name, metav1.DeleteOptions{}))
	_, err := secrets.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
		Data: map[string][]byte{store.RequestParametersKey: []byte(`{"password":"` + secondSecretValue + `"}`)}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	f.step("db")

	assert.Assert(t, is.Len(f.broker.CallsTo(fake.MethodProvision), 1), "no re-send that is not the first request")
	inst := f.get("db")
	assert.Assert(t, inst.Status.OrphanMitigation != nil, "what the first request may have created is deleted first")
	assert.Assert(t, inst.Status.InFlight == nil)
	assert.Assert(t, f.secretExists(name), "a Secret the record does not own is left alone")
}

func TestStepInstance_KeptParametersSecret_IsDroppedWhenTheWriteAheadLoses(t *testing.T) {
	f := newFixture(t)
	f.putSecret("db-params", map[string]string{"password": firstSecretValue})
	f.create("db", planSmall, "")
	f.withParamsFrom("db", "db-params")
	stale := f.get("db")
	// Someone else changes the record after it was read: the write-ahead conflicts.
	_, err := f.st.Instances().Update(context.Background(), f.get("db"))
	assert.NilError(t, err)

	res, err := f.engine.StepInstance(context.Background(), stale)
	assert.NilError(t, err)

	assert.Assert(t, is.Len(f.broker.Calls(), 0), res.Message)
	secrets, err := f.cluster.Core.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	assert.NilError(t, err)
	for _, s := range secrets.Items {
		assert.Assert(t, !strings.HasPrefix(s.Name, store.RequestSecretPrefix), "Secret %s of a call never made is left", s.Name)
	}
}

func (f *fixture) assertNoValueInRecords(value string) {
	f.t.Helper()
	cms, err := f.cluster.Core.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	assert.NilError(f.t, err)
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			assert.Assert(f.t, !strings.Contains(v, value), "a secret value is in ConfigMap %s key %s", cm.Name, k)
		}
	}
}

func TestSentParameters_AForgedKeptSecretNamingTheBindingsCredentials_IsNeverRead(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	b := f.createBinding("app", nil)
	// The binding's credentials, as a broker that chose the key "parameters" wrote them.
	_, err := f.st.WriteBindingSecret(context.Background(), b, map[string][]byte{
		store.RequestParametersKey: []byte(`{"password":"` + secretValue + `"}`),
	})
	assert.NilError(t, err)

	// status.inFlight.sent is the record's author's to write: it names the Secret.
	p, err := sentParameters(f.engine, context.Background(), f.getBinding("app"),
		&v1alpha1.SentRequest{Parameters: `{}`, ParametersSecret: b.Spec.SecretName})

	assert.Assert(t, isSentLost(err), "got %v, parameters %v", err, p)
	assert.Assert(t, p == nil)
}

func TestSentParameters_AForgedKeptSecretNamingUserProvidedCredentials_IsNeverRead(t *testing.T) {
	f := newFixture(t)
	f.userProvided(map[string]string{store.RequestParametersKey: `{"password":"` + secretValue + `"}`})

	p, err := sentParameters(f.engine, context.Background(), f.get("db"),
		&v1alpha1.SentRequest{Parameters: `{}`, ParametersSecret: CredentialsSecretName("db")})

	assert.Assert(t, isSentLost(err), "got %v, parameters %v", err, p)
}

// forgeSent rewrites the platform fields status.inFlight.sent keeps of instance name, as
// its author may.
func (f *fixture) forgeSent(name, cluster, space string) {
	f.t.Helper()
	inst := f.get(name)
	inst.Status.InFlight.Sent.ClusterID, inst.Status.InFlight.Sent.NamespaceUID = cluster, space
	_, err := f.st.Instances().Update(context.Background(), inst)
	assert.NilError(f.t, err)
}

func TestStepInstance_ForgedPlatformFieldsOfAResend_AreNotSent(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, `{"a":1}`)
	f.interruptedInstanceCall("db", fake.MethodProvision)
	f.forgeSent("db", "another-cluster", "uid-of-another-tenants-namespace")

	provisionReturns(f, 200, nil)
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	res := f.step("db")

	assert.Equal(t, res.State, StateSettled, res.Message)
	calls := f.broker.CallsTo(fake.MethodProvision)
	assert.Assert(t, is.Len(calls, 2))
	first, second := calls[0].Request.(osb.ProvisionRequest), calls[1].Request.(osb.ProvisionRequest)
	assert.Equal(t, second.OrganizationGUID, "cluster-1")
	assert.Equal(t, second.SpaceGUID, "uid-"+ns)
	assert.Equal(t, second.Context.ClusterID, "cluster-1")
	assert.DeepEqual(t, first, second)
}

func TestStepBinding_ForgedPlatformFieldsOfAResend_AreNotSent(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.createBinding("app", nil)
	ctx, cancel := context.WithCancel(context.Background())
	f.broker.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		cancel()
		return nil, &osb.TransportError{Canceled: true, Err: context.Canceled}
	})
	_, err := f.engine.StepBinding(ctx, f.getBinding("app"))
	assert.ErrorIs(t, err, context.Canceled)
	b := f.getBinding("app")
	b.Status.InFlight.Sent.ClusterID, b.Status.InFlight.Sent.NamespaceUID = "another-cluster", "uid-of-another-tenants-namespace"
	_, err = f.st.Bindings().Update(context.Background(), b)
	assert.NilError(t, err)

	f.broker.BindReturns(&osb.BindResponse{StatusCode: 200, Credentials: map[string]any{"password": secretValue}}, nil)
	// Past the grace for the broker's work on the call no one saw answered.
	f.advance(DefaultMitigationGrace)
	_, err = f.engine.StepBinding(context.Background(), f.getBinding("app"))
	assert.NilError(t, err)

	calls := f.broker.CallsTo(fake.MethodBind)
	assert.Assert(t, is.Len(calls, 2))
	first, second := calls[0].Request.(osb.BindRequest), calls[1].Request.(osb.BindRequest)
	assert.DeepEqual(t, first, second)
}
