package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// selfRBAC is rbac answering the runner's own questions (SelfSubjectAccessReviews) as
// those of user.
type selfRBAC struct {
	*rbac
	user string
}

func (r selfRBAC) SelfAllowed(ctx context.Context, a authorizationv1.ResourceAttributes) (bool, string, error) {
	return r.Allowed(ctx, r.user, nil, a)
}

// yes confirms every adoption (--yes).
func yes([]Vouch) error { return nil }

func TestAdoptAuthorship_RestampsOnlyWhatTheRunnerCouldHaveWritten(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("root", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("mine", map[string]string{"password": "s3cret"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	// Written before the policy, by someone who may write ConfigMaps in the namespace.
	before := writerStore(f, "mallory", "")
	_, err = before.Instances().Create(store.WithIntent(ctx), forgedInstance("plain", ns, "id-plain", nil))
	assert.NilError(t, err)
	_, err = before.Instances().Create(store.WithIntent(ctx), forgedInstance("own-secret", ns, "id-own", func(i *v1alpha1.ServiceInstance) {
		i.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "mine"}}}
	}))
	assert.NilError(t, err)
	_, err = before.Instances().Create(store.WithIntent(ctx), forgedInstance("root-secret", ns, "id-root", withSecretParameters))
	assert.NilError(t, err)
	// One written under the policy already.
	_, err = writerStore(f, "bob", "tok").Instances().Create(store.WithIntent(ctx), forgedInstance("bobs", ns, "id-bobs", nil))
	assert.NilError(t, err)

	// alice runs it: she may read Secret "mine", not "root".
	f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{allow: map[string][]authorizationv1.ResourceAttributes{
		"alice": {{Namespace: ns, Verb: "get", Resource: "secrets", Name: "mine"}},
	}}, user: "alice"}
	f.engine.cfg.Store = writerStore(f, "alice", "tok")
	authorOf := func(name string) store.Author {
		inst, err := f.st.Instances().Get(ctx, ns, name)
		assert.NilError(t, err)
		return store.AuthorOf(inst)
	}
	specOf := func(name string) v1alpha1.ServiceInstanceSpec {
		inst, err := f.st.Instances().Get(ctx, ns, name)
		assert.NilError(t, err)
		return inst.Spec
	}
	want := map[string]string{"plain": AuthorshipAdopted, "own-secret": AuthorshipAdopted, "root-secret": AuthorshipRefused, "bobs": AuthorshipVerified}
	outcomes := func(res AdoptAuthorshipResult) map[string]string {
		got := map[string]string{}
		for _, r := range res.Records {
			got[r.Name] = r.Outcome
		}
		return got
	}

	// A dry run says so and writes nothing.
	res, err := f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: ns, DryRun: DryRunClient})
	assert.NilError(t, err)
	assert.DeepEqual(t, outcomes(res), want)
	assert.DeepEqual(t, authorOf("plain"), store.Author{Username: "mallory", Groups: []string{"system:authenticated"}})

	specBefore := specOf("own-secret")
	// Without a confirmation (no terminal, no --yes) nothing is adopted.
	_, err = f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: ns})
	assert.ErrorIs(t, err, ErrNotConfirmed)
	assert.Equal(t, authorOf("plain").Username, "mallory")
	// A no adopts nothing either.
	var asked []Vouch
	_, err = f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: ns, Confirm: func(vs []Vouch) error {
		asked = vs
		return errors.New("no")
	}})
	assert.ErrorContains(t, err, "no")
	assert.Equal(t, authorOf("plain").Username, "mallory")
	assert.Equal(t, authorOf("own-secret").Username, "mallory")
	shown := map[string]string{}
	for _, v := range asked {
		shown[v.Name] = v.Written() + ": " + strings.Join(v.Means, "; ")
	}
	assert.Equal(t, len(shown), 2, "%v", shown)
	assert.Check(t, is.Contains(shown["own-secret"], `names "mallory" as its author, which no one can verify`))
	assert.Check(t, is.Contains(shown["own-secret"], `parameters from Secret "mine"`))

	res, err = f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: ns, Confirm: yes})
	assert.NilError(t, err)
	assert.DeepEqual(t, outcomes(res), want)
	assert.Equal(t, res.Refused(), 1)
	for _, r := range res.Records {
		if r.Name == "root-secret" {
			assert.ErrorContains(t, &RefusedError{Message: r.Detail}, `you may not get Secret "root"`)
		}
	}
	for _, name := range []string{"plain", "own-secret"} {
		assert.DeepEqual(t, authorOf(name), store.Author{Username: "alice", Groups: []string{"system:authenticated"}, Token: "tok"})
	}
	assert.DeepEqual(t, specOf("own-secret"), specBefore)
	assert.Equal(t, authorOf("root-secret").Username, "mallory", "a record failing a check is left unchanged")
	assert.Equal(t, authorOf("root-secret").Token, "")
	assert.Equal(t, authorOf("bobs").Username, "bob")
}

func TestAdoptAuthorship_NeedsThePolicyInForce(t *testing.T) {
	f := newFixture(t)
	_, err := f.engine.AdoptAuthorship(context.Background(), AdoptAuthorshipRequest{Namespace: ns})
	assert.ErrorContains(t, err, `an administrator runs "kubectl catalog init" first`)
}

// A namespace being deleted took bob's RoleBinding with it: reconcile may no longer read
// his broker's credentials for the deprovision, and its refusal names adopt. An
// administrator who may adopts his records, and they are hers from then on.
func TestAdoptAuthorship_RecordsBeingDeletedWhoseAuthorLostHisRights(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	authz := &rbac{allow: map[string][]authorizationv1.ResourceAttributes{
		"bob": {{Namespace: ns, Verb: "get", Resource: "secrets", Name: "nb-auth"}},
	}}
	f.engine.cfg.Authorizer = authz
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("nb-auth", map[string]string{"username": "u", "password": "p"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	bob := writerStore(f, "bob", "tok")
	namespaceBroker(t, bob, "https://nb.example")
	_, err = bob.Brokers().UpdateWithRetry(store.WithIntent(ctx), ns, "nb", func(b *v1alpha1.Broker) error {
		b.Spec.Auth = &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "nb-auth"}}
		return nil
	})
	assert.NilError(t, err)
	_, err = bob.Instances().Create(store.WithIntent(ctx), forgedInstance("db2", ns, "id-2", func(i *v1alpha1.ServiceInstance) {
		i.Spec.Scope, i.Spec.BrokerName = v1alpha1.ScopeNamespace, "nb"
	}))
	assert.NilError(t, err)
	assert.Equal(t, f.stepRecord(f.get("db2")).State, StateSettled)
	// The namespace is deleted: bob's RoleBinding first, then the records.
	authz.allow = nil
	f.engine.auth = newAuthority(f.engine)
	for _, cm := range []string{store.ConfigMapName(v1alpha1.KindBroker, "nb"), store.ConfigMapName(v1alpha1.KindServiceInstance, "db2")} {
		assert.NilError(t, f.cluster.Core.CoreV1().ConfigMaps(ns).Delete(ctx, cm, metav1.DeleteOptions{}))
	}
	inst := f.get("db2")
	assert.Assert(t, inst.DeletionTimestamp != nil, "held by its finalizer")

	res, err := f.engine.StepInstance(AsReconcile(ctx), inst)
	assert.NilError(t, err)
	assert.Assert(t, res.Refused, "%+v", res)
	c := condition(f.get("db2"), v1alpha1.ConditionRefused)
	assert.Assert(t, is.Contains(c.Message, `the record's author "bob" may not`), c.Message)
	assert.Assert(t, is.Contains(c.Message, `"kubectl catalog adopt -n `+ns+`"`), c.Message)

	f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{allow: map[string][]authorizationv1.ResourceAttributes{
		"alice": {{Namespace: ns, Verb: "get", Resource: "secrets", Name: "nb-auth"}},
	}}, user: "alice"}
	f.engine.cfg.Store = writerStore(f, "alice", "tok")
	res2, err := f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: ns, Confirm: yes})
	assert.NilError(t, err)
	got := map[string]string{}
	for _, r := range res2.Records {
		got[r.Kind+"/"+r.Name] = r.Outcome
	}
	assert.DeepEqual(t, got, map[string]string{"broker/nb": AuthorshipAdopted, "serviceinstance/db2": AuthorshipAdopted})
	assert.Equal(t, store.AuthorOf(f.get("db2")).Username, "alice")
}

// failingSelfReview answers no SelfSubjectAccessReview: the API server is unreachable or
// overloaded.
type failingSelfReview struct{ *rbac }

func (failingSelfReview) SelfAllowed(context.Context, authorizationv1.ResourceAttributes) (bool, string, error) {
	return false, "", errors.New("the server is currently unable to handle the request")
}

// TestAdoptAuthorship_ASelfReviewThatFails_IsAnErrorNotARefusal: when the API server
// cannot answer whether the runner may do what a record needs, adopt fails and adopts
// nothing: no record is reported refused for a permission it may well have.
func TestAdoptAuthorship_ASelfReviewThatFails_IsAnErrorNotARefusal(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("mine", map[string]string{"password": "s3cret"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	before := writerStore(f, "mallory", "")
	_, err = before.Instances().Create(store.WithIntent(ctx), forgedInstance("plain", ns, "id-plain", nil))
	assert.NilError(t, err)
	_, err = before.Instances().Create(store.WithIntent(ctx), forgedInstance("own-secret", ns, "id-own", func(i *v1alpha1.ServiceInstance) {
		i.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "mine"}}}
	}))
	assert.NilError(t, err)
	f.engine.cfg.Authorizer = failingSelfReview{rbac: &rbac{}}
	f.engine.cfg.Store = writerStore(f, "alice", "tok")

	res, err := f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: ns, Confirm: yes})

	assert.ErrorContains(t, err, "unable to handle the request")
	assert.ErrorContains(t, err, `instance "own-secret"`)
	assert.ErrorContains(t, err, "nothing was adopted")
	assert.Equal(t, res.Refused(), 0)
	for _, name := range []string{"plain", "own-secret"} {
		inst, gerr := f.st.Instances().Get(ctx, ns, name)
		assert.NilError(t, gerr)
		assert.Equal(t, store.AuthorOf(inst).Username, "mallory", "%s is left as it was", name)
	}
}
