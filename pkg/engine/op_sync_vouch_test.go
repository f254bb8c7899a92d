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
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// "sync broker" records its request as the user's own intent, which makes her the author
// of the broker's URL and credentials Secret. On a broker record another person wrote
// (mallory, pointing a Secret alice may read at a URL of her choosing) it must show what
// that vouches for and go on only when confirmed; a Secret alice may not read herself
// she cannot vouch for.
func TestSyncBroker_AnotherPersonsBroker_AsksBeforeTheUserVouchesForIt(t *testing.T) {
	type want struct {
		err     string // "" none
		asked   bool
		synced  bool
		author  string
		noVouch bool
	}
	cases := []struct {
		name      string
		namespace string // the broker's namespace
		author    string
		token     string // the token the broker was written under
		mayRead   bool
		dryRun    DryRun
		confirm   func(Vouch) error
		want      want
	}{
		{name: "another person's, not confirmed (no terminal, no --yes)", namespace: ns, author: "mallory", token: "tok", mayRead: true,
			want: want{err: ErrNotConfirmed.Error(), author: "mallory"}},
		{name: "another person's, the user says no", namespace: ns, author: "mallory", token: "tok", mayRead: true,
			confirm: func(Vouch) error { return errors.New("no") }, want: want{err: "no", asked: true, author: "mallory"}},
		{name: "another person's, confirmed", namespace: ns, author: "mallory", token: "tok", mayRead: true,
			confirm: func(Vouch) error { return nil }, want: want{asked: true, synced: true, author: "alice"}},
		{name: "written before the policy, confirmed", namespace: ns, author: "mallory", token: "", mayRead: true,
			confirm: func(Vouch) error { return nil }, want: want{asked: true, synced: true, author: "alice"}},
		{name: "a Secret the user may not read: refused", namespace: ns, author: "mallory", token: "tok", mayRead: false,
			confirm: func(Vouch) error { return nil }, want: want{err: `you may not get Secret "acme-auth"`, author: "mallory"}},
		{name: "a dry run shows it and changes nothing", namespace: ns, author: "mallory", token: "tok", mayRead: true, dryRun: DryRunClient,
			confirm: func(Vouch) error { return nil }, want: want{author: "mallory"}},
		{name: "the user's own broker: nothing to ask", namespace: ns, author: "alice", token: "tok", mayRead: true,
			want: want{synced: true, author: "alice", noVouch: true}},
		{name: "a cluster broker of the catalog namespace: trusted as it is", namespace: storetest.CatalogNamespace, author: "admin2", token: "tok",
			want: want{synced: true, author: "alice", noVouch: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newBrokerFixture(t, authSecret(ns), authSecret(storetest.CatalogNamespace), catalogNamespace())
			scope := v1alpha1.ScopeNamespace
			if tc.namespace == storetest.CatalogNamespace {
				scope = v1alpha1.ScopeCluster
			}
			fx := &fixture{t: t, cluster: f.cluster}
			_, err := writerStore(fx, tc.author, tc.token).Brokers().Create(store.WithIntent(ctx), &v1alpha1.Broker{
				ObjectMeta: metav1.ObjectMeta{Namespace: tc.namespace, Name: brokerName},
				Spec: v1alpha1.BrokerSpec{URL: f.tb.URL(), Scope: scope,
					Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "acme-auth"}}},
			})
			assert.NilError(t, err)
			var allow []authorizationv1.ResourceAttributes
			if tc.mayRead {
				allow = append(allow, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: "acme-auth"})
			}
			f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
			f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{allow: map[string][]authorizationv1.ResourceAttributes{"alice": allow}}, user: "alice"}
			f.engine.cfg.Store = writerStore(fx, "alice", "tok")
			before, err := f.st.Brokers().Get(ctx, tc.namespace, brokerName)
			assert.NilError(t, err)

			var asked []Vouch
			req := SyncBrokerRequest{Name: brokerName, Namespace: ns, Scope: scope, DryRun: tc.dryRun}
			if tc.confirm != nil {
				req.Confirm = func(v Vouch) error { asked = append(asked, v); return tc.confirm(v) }
			}
			res, err := f.engine.SyncBroker(ctx, req)

			if tc.want.err != "" {
				assert.ErrorContains(t, err, tc.want.err)
			} else {
				assert.NilError(t, err)
			}
			assert.Equal(t, len(asked) > 0, tc.want.asked)
			if tc.want.synced {
				assert.Equal(t, f.catalogCalls(), 1)
			} else {
				assert.Equal(t, f.catalogCalls(), 0, "no broker is called")
			}
			after, err := f.st.Brokers().Get(ctx, tc.namespace, brokerName)
			assert.NilError(t, err)
			assert.Equal(t, store.AuthorOf(after).Username, tc.want.author)
			if !tc.want.synced {
				assert.Equal(t, after.ResourceVersion, before.ResourceVersion, "nothing is written")
			}
			var shown *Vouch
			switch {
			case len(asked) > 0:
				shown = &asked[0]
			case res != nil:
				shown = res.Vouch
			}
			if tc.want.noVouch {
				assert.Assert(t, shown == nil, "%+v", shown)
				return
			}
			if shown == nil {
				return
			}
			means := strings.Join(shown.Means, "\n")
			assert.Check(t, is.Contains(means, `its credentials, Secret "acme-auth" in namespace "`+ns+`", go to "`+f.tb.URL()+`"`))
			assert.Equal(t, shown.Was, "mallory")
		})
	}
}

// The spec shown is the spec vouched for: a broker rewritten while the user read the
// question is not synced.
func TestSyncBroker_ARecordRewrittenWhileAsked_IsNotSynced(t *testing.T) {
	ctx := context.Background()
	f := newBrokerFixture(t, authSecret(ns), catalogNamespace())
	fx := &fixture{t: t, cluster: f.cluster}
	mallory := writerStore(fx, "mallory", "tok")
	_, err := mallory.Brokers().Create(store.WithIntent(ctx), &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: brokerName},
		Spec: v1alpha1.BrokerSpec{URL: f.tb.URL(), Scope: v1alpha1.ScopeNamespace,
			Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "acme-auth"}}},
	})
	assert.NilError(t, err)
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{allow: map[string][]authorizationv1.ResourceAttributes{
		"alice": {{Namespace: ns, Verb: "get", Resource: "secrets", Name: "acme-auth"}}}}, user: "alice"}
	f.engine.cfg.Store = writerStore(fx, "alice", "tok")

	_, err = f.engine.SyncBroker(ctx, SyncBrokerRequest{Name: brokerName, Namespace: ns, Scope: v1alpha1.ScopeNamespace,
		Confirm: func(Vouch) error {
			_, err := mallory.Brokers().UpdateWithRetry(store.WithIntent(ctx), ns, brokerName, func(b *v1alpha1.Broker) error {
				b.Spec.URL = "https://elsewhere.example"
				return nil
			})
			return err
		}})
	assert.ErrorContains(t, err, "changed since it was shown")
	after, err := f.st.Brokers().Get(ctx, ns, brokerName)
	assert.NilError(t, err)
	assert.Equal(t, store.AuthorOf(after).Username, "mallory")
	assert.Equal(t, f.catalogCalls(), 0)
}
