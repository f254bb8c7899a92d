package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
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

type failingAuthorizer struct{}

func (failingAuthorizer) Allowed(context.Context, string, []string, authorizationv1.ResourceAttributes) (bool, string, error) {
	return false, "", errors.New("connection refused")
}

// A verb's --wait ends at a refusal only a person can lift (a record written under a
// token since created anew: its owner adopts it), with the refusal naming the fix,
// rather than retrying it with backoff for as long as it may wait.
func TestFollow_ARefusalOnlyAPersonCanLift_EndsTheWaitAtOnce(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "new"}}
	f.engine.cfg.Authorizer = &rbac{}
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("root", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	// Written by the user running the engine, under the token in force before.
	_, err = writerStore(f, testUser.Username, "old").Instances().Create(store.WithIntent(context.Background()), forgedInstance("db2", ns, "id-2", withSecretParameters))
	assert.NilError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	res, err := f.engine.FollowInstance(ctx, ns, "db2", "update", nil, Follow{Wait: true, Timeout: 3 * time.Second})
	took := time.Since(start)

	assert.NilError(t, err)
	assert.Assert(t, res.Refused && res.NeedsPerson, "%+v", res)
	assert.Assert(t, took < time.Second, "the wait ends at once, not after %s", took)
	assert.Assert(t, is.Contains(res.Message, `"kubectl catalog adopt -n `+ns+`"`), res.Message)
	assert.Equal(t, len(f.broker.Calls()), 0)
}

// A refusal that comes of a request that failed (the API server could not be asked what
// the author may do) may go away by itself: it does not end a wait.
func TestTrust_ARefusalForAFailedRequest_IsNotOneOnlyAPersonCanLift(t *testing.T) {
	f := newFixture(t)
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	f.engine.cfg.Authorizer = failingAuthorizer{}
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("root", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = writerStore(f, "bob", "tok").Instances().Create(store.WithIntent(context.Background()), forgedInstance("db2", ns, "id-2", withSecretParameters))
	assert.NilError(t, err)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db2"}})

	assertRefused(t, f, res, ns, "db2", ReasonRefusedAuthorUnverified)
	assert.Assert(t, !res.NeedsPerson, "%+v", res)
}
