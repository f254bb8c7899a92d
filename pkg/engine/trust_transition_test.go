package engine

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// While "reconcile uninstall" takes the trust policy away, its token is gone and no
// record's author can be verified. A user's own bind, unbind and deprovision of the
// records she wrote under the old token go on with her own rights (she may read the
// Secrets they name), and nothing they say names a flag of reconcile.
func TestTrust_NoPolicyInForce_AUsersOwnVerbsOnHerRecordsWork(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.engine.cfg.Trust = staticTrust{TrustState{Reason: "ValidatingAdmissionPolicy is not installed"}}
	// Nobody may be asked about: only the runner's own rights can apply.
	f.engine.cfg.Authorizer = &rbac{}
	for _, s := range []string{"root", "nb-auth"} {
		_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret(s, map[string]string{"username": "u", "password": "p"}), metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	alice := writerStore(f, "alice", "old")
	wctx := store.WithIntent(ctx)
	namespaceBroker(t, alice, "https://nb.example")
	_, err := alice.Brokers().UpdateWithRetry(wctx, ns, "nb", func(b *v1alpha1.Broker) error {
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "nb-auth"}}
		return nil
	})
	assert.NilError(t, err)
	_, err = alice.Instances().Create(wctx, forgedInstance("shared", ns, "id-shared", func(i *v1alpha1.ServiceInstance) {
		withSecretParameters(i)
		i.Spec.Scope, i.Spec.BrokerName = v1alpha1.ScopeNamespace, "nb"
	}))
	assert.NilError(t, err)
	_, err = alice.Bindings().Create(wctx, &v1alpha1.ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: v1alpha1.ServiceBindingSpec{InstanceName: "shared", SecretName: "app", ExternalID: "b-app"}})
	assert.NilError(t, err)
	// Provisioned and bound while the policy was in force.
	mine := WithRunnersRights(ctx)
	res, err := f.engine.StepInstance(mine, f.get("shared"))
	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	app, err := f.st.Bindings().Get(ctx, ns, "app")
	assert.NilError(t, err)
	res, err = f.engine.StepBinding(mine, app)
	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	f.broker.ResetCalls()

	noFlag := func(what string, err error, msg string) {
		t.Helper()
		assert.NilError(t, err, what)
		assert.Assert(t, !strings.Contains(msg, "--trust"), "%s names reconcile's flag: %s", what, msg)
	}
	b, err := f.engine.Bind(ctx, BindRequest{Namespace: ns, Instance: "shared", Name: "app2", Follow: Follow{Wait: true}})
	noFlag("bind", err, b.Followed.Message)
	assert.Equal(t, b.Followed.State, StateSettled, b.Followed.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 1)

	var unbound []Result
	_, err = f.engine.Unbind(ctx, UnbindRequest{Namespace: ns, Bindings: []string{"app"}, Follow: Follow{Wait: true},
		Unbound: func(o UnbindOutcome) error { unbound = append(unbound, o.Followed); return nil }})
	assert.Equal(t, len(unbound), 1)
	noFlag("unbind", err, unbound[0].Message)
	assert.Equal(t, unbound[0].State, StateDeleted, unbound[0].Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodUnbind)), 1)

	d, err := f.engine.Deprovision(ctx, DeprovisionRequest{Namespace: ns, Name: "shared", Follow: Follow{Wait: true}})
	noFlag("deprovision", err, d.Result.Message)
	assert.Equal(t, d.Result.State, StateDeleted, d.Result.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
}
