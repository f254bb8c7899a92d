package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

func TestTrust_APlanAccessRulesDisable_IsNeverProvisioned_UntilEnabled(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Access().Create(ctx, &v1alpha1.CatalogAccess{
		ObjectMeta: metav1.ObjectMeta{Namespace: storetest.CatalogNamespace, Name: v1alpha1.CatalogAccessName},
		Spec: v1alpha1.CatalogAccessSpec{Rules: []v1alpha1.AccessRule{
			{Namespace: ns, BrokerName: brokerName, ClassID: classID, PlanID: planLarge, Enabled: false},
		}},
	})
	assert.NilError(t, err)
	f.create("big", planLarge, "")

	res := f.step("big")
	assertRefused(t, f, res, ns, "big", ReasonRefusedPlanNotAllowed)
	assert.Assert(t, is.Contains(res.Message, "kubectl catalog access enable db/large -n dev"))

	_, err = f.st.Access().UpdateWithRetry(ctx, storetest.CatalogNamespace, v1alpha1.CatalogAccessName, func(a *v1alpha1.CatalogAccess) error {
		a.Spec.Rules[0].Enabled = true
		return nil
	})
	assert.NilError(t, err)
	f.advance(time.Hour)
	res = f.step("big")
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Equal(t, condition(f.get("big"), v1alpha1.ConditionRefused).Type, "", "the refusal is cleared once the call goes ahead")
}

func TestTrust_BrokerRecordsThatReachOutOfTheirNamespace_AreRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		broker v1alpha1.BrokerSpec
		reason string
	}{
		{name: "a cluster-scoped broker outside the catalog namespace",
			broker: v1alpha1.BrokerSpec{URL: "https://evil.example", Scope: v1alpha1.ScopeCluster}, reason: ReasonRefusedUntrustedReference},
		{name: "credentials of another namespace",
			broker: v1alpha1.BrokerSpec{URL: "https://evil.example", Scope: v1alpha1.ScopeNamespace,
				Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "root", Namespace: "victim"}}},
			reason: ReasonRefusedUntrustedReference},
		{name: "credentials of its namespace its author may not read",
			broker: v1alpha1.BrokerSpec{URL: "https://evil.example", Scope: v1alpha1.ScopeNamespace,
				Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "root"}}},
			reason: ReasonRefusedNotAuthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
			f.engine.cfg.Authorizer = &rbac{}
			w := writerStore(f, "mallory", "tok")
			ctx := store.WithIntent(context.Background())
			_, err := w.Brokers().Create(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "evil"}, Spec: tc.broker})
			assert.NilError(t, err)
			_, err = w.Classes().Create(ctx, &v1alpha1.ServiceClass{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.ClassRecordName("evil", classID)},
				Spec: v1alpha1.ServiceClassSpec{BrokerName: "evil", Scope: v1alpha1.ScopeNamespace, ID: classID, ExternalName: "db", Bindable: true,
					Plans: []v1alpha1.ServicePlan{{ID: planSmall, ExternalName: "small"}}},
			})
			assert.NilError(t, err)
			_, err = w.Instances().Create(ctx, forgedInstance("x", ns, "id-x", func(i *v1alpha1.ServiceInstance) {
				i.Spec.Scope, i.Spec.BrokerName = v1alpha1.ScopeNamespace, "evil"
			}))
			assert.NilError(t, err)

			res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}})

			assertRefused(t, f, res, ns, "x", tc.reason)
		})
	}
}

type forbiddenClients struct{}

func (forbiddenClients) ClientFor(_ context.Context, b *v1alpha1.Broker) (osb.Client, error) {
	return nil, &brokerclient.SecretError{Broker: b.Name, Namespace: b.Namespace, Name: "auth",
		Err: apierrors.NewForbidden(k8sschema.GroupResource{Resource: "secrets"}, "auth", errors.New("RBAC"))}
}

func TestTrust_AUserWhoMayNotReadAClusterBrokersCredentials_LeavesTheCallToReconcile(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Brokers = forbiddenClients{}
	f.create("db", planSmall, "")

	res := f.step("db")

	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, res.RequeueAfter > 0, "a --wait looks again for reconcile's progress")
	assert.Assert(t, is.Contains(res.Message, "reconcile sends the request"))
	inst := f.get("db")
	assert.Assert(t, WaitingForReconcile(inst))
	assert.Assert(t, inst.Status.Retry == nil, "no backoff holds reconcile back")
	assert.Assert(t, inst.HasPendingWork(), "reconcile finds it")
	assert.Assert(t, inst.Status.Phase != v1alpha1.PhaseFailed, "nothing failed")
}

// Reconcile itself may not read a cluster broker's credentials: nobody else will make the
// call, so it backs off and says that reconcile lacks the permission, and what to grant.
func TestTrust_ReconcileMayNotReadAClusterBrokersCredentials_BacksOffNamingWhatToGrant(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Brokers = forbiddenClients{}
	f.create("db", planSmall, "")
	ctx := AsReconcile(context.Background())

	res, err := f.engine.StepInstance(ctx, f.get("db"))

	assert.NilError(t, err)
	assert.Assert(t, !WaitingForReconcile(f.get("db")))
	assert.Assert(t, is.Contains(res.Message, "reconcile itself may not read the credentials of cluster broker"))
	assert.Assert(t, is.Contains(res.Message, "grant reconcile's ServiceAccount \"get\" on that Secret"))
	first := f.get("db").Status.Retry
	assert.Assert(t, first != nil && first.NextRetryAt.Sub(f.now) >= 2*time.Second, "%+v", first)
	for range 4 {
		f.advance(time.Hour)
		_, err = f.engine.StepInstance(ctx, f.get("db"))
		assert.NilError(t, err)
	}
	last := f.get("db").Status.Retry
	assert.Assert(t, last.Attempts == 5 && last.NextRetryAt.Sub(f.now) > first.NextRetryAt.Sub(first.LastAttemptAt.Time), "%+v then %+v", first, last)
}

// namespaceBroker records (as user w) a namespace-scoped broker "nb" of namespace ns,
// with no credentials of its own, and its class.
func namespaceBroker(t *testing.T, w *store.Store, url string) {
	t.Helper()
	ctx := store.WithIntent(context.Background())
	b, err := w.Brokers().Get(ctx, ns, "nb")
	if store.IsNotFound(err) {
		_, err = w.Brokers().Create(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nb"},
			Spec: v1alpha1.BrokerSpec{URL: url, Scope: v1alpha1.ScopeNamespace}})
		assert.NilError(t, err)
		_, err = w.Classes().Create(ctx, &v1alpha1.ServiceClass{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.ClassRecordName("nb", classID)},
			Spec: v1alpha1.ServiceClassSpec{BrokerName: "nb", Scope: v1alpha1.ScopeNamespace, ID: classID, ExternalName: "db", Bindable: true,
				Plans: []v1alpha1.ServicePlan{{ID: planSmall, ExternalName: "small"}}},
		})
		assert.NilError(t, err)
		return
	}
	assert.NilError(t, err)
	b.Spec.URL = url
	_, err = w.Brokers().Update(ctx, b)
	assert.NilError(t, err)
}

// A namespace-scoped broker record is a ConfigMap too: whoever may write ConfigMaps in
// the namespace may point it at a server of their own. Parameters from Secrets go to it
// only when the broker record's author may read those Secrets as well, so that reconcile
// never reads a Secret for one author and sends it to a URL another chose.
func TestTrust_ParametersFromSecrets_GoOnlyToANamespaceBrokerWhoseAuthorMayReadThem(t *testing.T) {
	setup := func(t *testing.T, brokerAuthor string) (*fixture, *rbac) {
		f := newFixture(t)
		f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
		authz := &rbac{allow: map[string][]authorizationv1.ResourceAttributes{
			"bob": {{Namespace: ns, Verb: "get", Resource: "secrets", Name: "root"}},
		}}
		f.engine.cfg.Authorizer = authz
		_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("root", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
		assert.NilError(t, err)
		namespaceBroker(t, writerStore(f, brokerAuthor, "tok"), "https://"+brokerAuthor+".example")
		_, err = writerStore(f, "bob", "tok").Instances().Create(store.WithIntent(context.Background()), forgedInstance("db2", ns, "id-2", func(i *v1alpha1.ServiceInstance) {
			withSecretParameters(i)
			i.Spec.Scope, i.Spec.BrokerName = v1alpha1.ScopeNamespace, "nb"
		}))
		assert.NilError(t, err)
		return f, authz
	}
	ref := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db2"}}

	t.Run("the broker's author may read them", func(t *testing.T) {
		f, _ := setup(t, "bob")
		res := f.stepRecord(ref)
		assert.Equal(t, res.State, StateSettled, res.Message)
		assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1)
	})
	t.Run("the broker's author may not: no provision", func(t *testing.T) {
		f, _ := setup(t, "mallory")
		res := f.stepRecord(ref)
		assertRefused(t, f, res, ns, "db2", ReasonRefusedNotAuthorized)
		c := condition(f.get("db2"), v1alpha1.ConditionRefused)
		assert.Assert(t, is.Contains(c.Message, `broker "nb"`), c.Message)
	})
	t.Run("the broker re-pointed by someone who may not: no update", func(t *testing.T) {
		f, _ := setup(t, "bob")
		assert.Equal(t, f.stepRecord(ref).State, StateSettled)
		f.broker.ResetCalls()
		namespaceBroker(t, writerStore(f, "mallory", "tok"), "https://mallory.example")
		// The status is free to write: a checksum nothing matches asks for an update.
		_, err := writerStore(f, "mallory", "tok").Instances().UpdateWithRetry(context.Background(), ns, "db2", func(i *v1alpha1.ServiceInstance) error {
			i.Status.Provisioned.ParametersChecksum = "unknown"
			return nil
		})
		assert.NilError(t, err)
		f.advance(time.Minute)

		res := f.stepRecord(ref)

		assertRefused(t, f, res, ns, "db2", ReasonRefusedNotAuthorized)
	})
}
