package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// unvouchedFixture: no trust policy; mallory, whom no one can verify, wrote a namespace
// broker with credentials, an instance through it with parameters from a Secret, a
// binding projecting into a workload and copying another Secret, and an instance of the
// cluster broker that names no Secret.
func unvouchedFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.engine.cfg.Trust = staticTrust{TrustState{Reason: "not installed"}}
	ctx := store.WithIntent(context.Background())
	for _, s := range []string{"root", "nb-auth", "extra"} {
		_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret(s, map[string]string{"username": "u", "password": "p"}), metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	w := writerStore(f, "mallory", "")
	namespaceBroker(t, w, "https://nb.example")
	_, err := w.Brokers().UpdateWithRetry(ctx, ns, "nb", func(b *v1alpha1.Broker) error {
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "nb-auth"}}
		return nil
	})
	assert.NilError(t, err)
	_, err = w.Instances().Create(ctx, forgedInstance("db2", ns, "id-2", func(i *v1alpha1.ServiceInstance) {
		withSecretParameters(i)
		i.Spec.Scope, i.Spec.BrokerName = v1alpha1.ScopeNamespace, "nb"
	}))
	assert.NilError(t, err)
	_, err = w.Instances().Create(ctx, forgedInstance("plain", ns, "id-plain", nil))
	assert.NilError(t, err)
	_, err = w.Bindings().Create(ctx, &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: v1alpha1.ServiceBindingSpec{InstanceName: "db2", SecretName: "app-creds", ExternalID: "b-app",
			SecretTransforms: []v1alpha1.SecretTransform{{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.SecretReference{Name: "extra"}}}},
			Projections:      []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "web"}}}})
	assert.NilError(t, err)
	return f
}

func (f *fixture) unvouched(rec v1alpha1.Record) *Unvouched {
	f.t.Helper()
	u, err := f.engine.UnvouchedRecord(context.Background(), rec)
	assert.NilError(f.t, err)
	return u
}

func TestTrust_Unvouched_SaysWhichSecretGoesWhere(t *testing.T) {
	f := unvouchedFixture(t)
	ctx := context.Background()
	b, err := f.st.Brokers().Get(ctx, ns, "nb")
	assert.NilError(t, err)
	u := f.unvouched(b)
	assert.Assert(t, u != nil)
	assert.Equal(t, u.Kind, v1alpha1.KindBroker)
	assert.DeepEqual(t, u.Lends, []string{`Secret "nb-auth" (its credentials) goes to https://nb.example`})

	u = f.unvouched(f.get("db2"))
	assert.Assert(t, u != nil)
	assert.Equal(t, u.Kind+" "+u.Namespace+"/"+u.Name, v1alpha1.KindServiceInstance+" "+ns+"/db2")
	assert.DeepEqual(t, u.Lends, []string{
		`Secret "nb-auth" (credentials of broker "nb") goes to https://nb.example`,
		`Secret "root" (parameters) goes to https://nb.example (broker "nb")`,
	})

	bind, err := f.st.Bindings().Get(ctx, ns, "app")
	assert.NilError(t, err)
	u = f.unvouched(bind)
	assert.Assert(t, u != nil)
	assert.DeepEqual(t, u.Lends, []string{
		`Secret "nb-auth" (credentials of broker "nb") goes to https://nb.example`,
		`Secret "extra" is copied into Secret "app-creds"`,
		`Deployment "web" is changed to mount Secret "app-creds"`,
	})

	assert.Assert(t, f.unvouched(f.get("plain")) == nil, "the cluster broker's credentials are the administrators': nothing is lent")

	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	f.engine.auth = newAuthority(f.engine)
	assert.Assert(t, f.unvouched(f.get("db2")) == nil, "under the trust policy the runner's rights are never lent")
}

// Being deleted, an instance needs only its broker's credentials: its parameters are
// not sent again.
func TestTrust_Unvouched_ADeletionLendsOnlyTheBrokersCredentials(t *testing.T) {
	f := unvouchedFixture(t)
	inst := f.get("db2")
	now := metav1.Now()
	inst.DeletionTimestamp = &now
	u := f.unvouched(inst)
	assert.Assert(t, u != nil)
	assert.DeepEqual(t, u.Lends, []string{`Secret "nb-auth" (credentials of broker "nb") goes to https://nb.example`})
}

// The rights a person agreed to lend go to the records shown only: another record no
// one vouches for is refused as before.
func TestTrust_RunnersRightsFor_TheRecordsShownOnly(t *testing.T) {
	f := unvouchedFixture(t)
	ctx := store.WithIntent(context.Background())
	_, err := writerStore(f, "mallory", "").Instances().Create(ctx, forgedInstance("later", ns, "id-later", func(i *v1alpha1.ServiceInstance) {
		withSecretParameters(i)
		i.Spec.Scope, i.Spec.BrokerName = v1alpha1.ScopeNamespace, "nb"
	}))
	assert.NilError(t, err)
	u := f.unvouched(f.get("db2"))
	lent := WithRunnersRightsFor(AsReconcile(context.Background()), []Unvouched{*u})

	res, err := f.engine.StepInstance(lent, f.get("db2"))
	assert.NilError(t, err)
	assert.Assert(t, !res.Refused, "%+v", res)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1)

	f.broker.ResetCalls()
	res, err = f.engine.StepInstance(lent, f.get("later"))
	assert.NilError(t, err)
	assertRefused(t, f, res, ns, "later", ReasonRefusedAuthorUnverified)
}
