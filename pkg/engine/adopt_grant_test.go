package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// namespaceUser is a user with every right in one namespace and none elsewhere, who may
// not create SubjectAccessReviews (a namespace's users may not): she may ask only about
// herself.
type namespaceUser struct{ ns string }

func (u namespaceUser) Allowed(context.Context, string, []string, authorizationv1.ResourceAttributes) (bool, string, error) {
	return false, "", errors.New(`subjectaccessreviews.authorization.k8s.io is forbidden: User "bob" cannot create resource "subjectaccessreviews"`)
}

func (u namespaceUser) SelfAllowed(_ context.Context, a authorizationv1.ResourceAttributes) (bool, string, error) {
	return a.Namespace == u.ns, "RBAC: no rule allows it", nil
}

// The trust token was created anew, stranding bob's binding in team-b of dev's instance,
// which alice shared with team-b and wrote again under the new token. bob adopts team-b:
// his bind could have written that binding (it leaves the grant, which is alice's, to
// reconcile, since bob may not ask the API server what alice may do), so his adopt
// re-stamps it rather than refusing it; reconcile checks the grant at every step.
func TestAdoptAuthorship_ACrossNamespaceBindingWhoseGrantTheRunnerMayNotAskAbout(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	ctx := context.Background()
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "new"}}
	alice := writerStore(f, "alice", "new")
	inst, err := alice.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	inst.Spec.SharedWith = []string{consumerNS}
	_, err = alice.Instances().Update(store.WithIntent(ctx), inst)
	assert.NilError(t, err)
	_, err = writerStore(f, "bob", "old").Bindings().Create(store.WithIntent(ctx),
		NewBinding(BindingIntent{Namespace: consumerNS, Name: "pin", Instance: "db", InstanceNamespace: ns, SecretName: "pin"}))
	assert.NilError(t, err)

	f.engine.cfg.Authorizer = namespaceUser{ns: consumerNS}
	f.engine.cfg.Store = writerStore(f, "bob", "new")
	f.engine.cfg.Platform = StaticPlatform{Cluster: "cluster-1", User: &osb.OriginatingIdentity{Username: "bob", UID: "u-bob"}}
	res, err := f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: consumerNS, Confirm: yes})
	assert.NilError(t, err)
	assert.Equal(t, len(res.Records), 1)
	assert.Equal(t, res.Records[0].Outcome, AuthorshipAdopted, res.Records[0].Detail)
	b, err := f.st.Bindings().Get(ctx, consumerNS, "pin")
	assert.NilError(t, err)
	assert.DeepEqual(t, store.AuthorOf(b), store.Author{Username: "bob", Groups: []string{"system:authenticated"}, Token: "new"})

	// An instance not shared with team-b lets no adopt of team-b count the binding.
	inst, err = alice.Instances().Get(ctx, ns, "db")
	assert.NilError(t, err)
	inst.Spec.SharedWith = nil
	_, err = alice.Instances().Update(store.WithIntent(ctx), inst)
	assert.NilError(t, err)
	_, err = writerStore(f, "bob", "old").Bindings().Update(store.WithIntent(ctx), b)
	assert.NilError(t, err)
	res, err = f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: consumerNS, Confirm: yes})
	assert.NilError(t, err)
	assert.Equal(t, res.Records[0].Outcome, AuthorshipRefused)
}

// A namespace holding an instance whose broker was deregistered: adopt lists that
// instance as refused (no one could write its spec now: the broker is gone) and adopts
// the others, instead of adopting nothing as if the API server had failed.
func TestAdoptAuthorship_AnInstanceOfABrokerGone_IsRefusedAndTheOthersAdopted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "new"}}
	old := writerStore(f, "alice", "old")
	_, err := old.Instances().Create(store.WithIntent(ctx), forgedInstance("gone", ns, "id-gone", func(i *v1alpha1.ServiceInstance) {
		i.Spec.BrokerName = "deregistered"
	}))
	assert.NilError(t, err)
	_, err = old.Instances().Create(store.WithIntent(ctx), forgedInstance("plain", ns, "id-plain", nil))
	assert.NilError(t, err)

	f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{}, user: "alice"}
	f.engine.cfg.Store = writerStore(f, "alice", "new")
	res, err := f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: ns, Confirm: yes})
	assert.NilError(t, err)
	got := map[string]string{}
	for _, r := range res.Records {
		got[r.Name] = r.Outcome
		if r.Name == "gone" {
			assert.Check(t, strings.Contains(r.Detail, `"deregistered"`), r.Detail)
		}
	}
	assert.DeepEqual(t, got, map[string]string{"gone": AuthorshipRefused, "plain": AuthorshipAdopted})
	inst, err := f.st.Instances().Get(ctx, ns, "plain")
	assert.NilError(t, err)
	assert.Equal(t, store.AuthorOf(inst).Token, "new")
}

// The trust token was created anew, stranding alice's user-provided instance and its
// binding. Her adopt re-stamps both: a user-provided instance goes through no broker,
// and what its spec sends is its credentials Secret, which she may read. Before, adopt
// read a broker of no name for each and adopted nothing ("run it again"), so neither
// could ever be adopted. A runner who may not read that Secret gets both refused.
func TestAdoptAuthorship_AUserProvidedInstanceAndItsBinding_AreCheckedByTheirCredentialsSecret(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "new"}}
	old := writerStore(f, "alice", "old")
	inst, err := old.Instances().Create(store.WithIntent(ctx),
		NewUserProvidedInstance(ns, "up", v1alpha1.UserProvidedService{CredentialsSecret: CredentialsSecretName("up")}))
	assert.NilError(t, err)
	assert.NilError(t, f.engine.WriteUserProvidedCredentials(ctx, inst, toBytes(map[string]string{"password": "s3cret"})))
	_, err = old.Bindings().Create(store.WithIntent(ctx),
		NewBinding(BindingIntent{Namespace: ns, Name: "upb", Instance: "up", SecretName: "upb"}))
	assert.NilError(t, err)

	adopt := func(may []authorizationv1.ResourceAttributes) map[string]string {
		t.Helper()
		f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{allow: map[string][]authorizationv1.ResourceAttributes{"alice": may}}, user: "alice"}
		f.engine.cfg.Store = writerStore(f, "alice", "new")
		res, err := f.engine.AdoptAuthorship(ctx, AdoptAuthorshipRequest{Namespace: ns, Confirm: yes})
		assert.NilError(t, err)
		got := map[string]string{}
		for _, r := range res.Records {
			got[r.Kind+"/"+r.Name] = r.Outcome
		}
		return got
	}
	readCreds := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: CredentialsSecretName("up")}
	createRecords := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "configmaps"}
	assert.DeepEqual(t, adopt([]authorizationv1.ResourceAttributes{createRecords}),
		map[string]string{"serviceinstance/up": AuthorshipRefused, "servicebinding/upb": AuthorshipRefused})
	for _, name := range []string{"up", "upb"} {
		var rec v1alpha1.Record
		if name == "up" {
			rec, err = f.st.Instances().Get(ctx, ns, name)
		} else {
			rec, err = f.st.Bindings().Get(ctx, ns, name)
		}
		assert.NilError(t, err)
		assert.Equal(t, store.AuthorOf(rec).Token, "old", name)
	}

	assert.DeepEqual(t, adopt([]authorizationv1.ResourceAttributes{createRecords, readCreds}),
		map[string]string{"serviceinstance/up": AuthorshipAdopted, "servicebinding/upb": AuthorshipAdopted})
	up, err := f.st.Instances().Get(ctx, ns, "up")
	assert.NilError(t, err)
	assert.Equal(t, store.AuthorOf(up).Token, "new")
	b, err := f.st.Bindings().Get(ctx, ns, "upb")
	assert.NilError(t, err)
	assert.Equal(t, store.AuthorOf(b).Token, "new")
}
