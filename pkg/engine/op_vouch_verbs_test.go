package engine

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// share, unshare and touch write the instance as their user's intent, which makes her the
// author of the whole spec. On an instance mallory rewrote to name a Secret (verified as
// hers by the trust policy), they ask before alice vouches for it, refuse when she may not
// read it, and change nothing unless she confirms; an instance naming nothing beyond
// itself, or alice's own, asks nothing.
func TestEverydayVerbs_AnotherPersonsInstance_AskBeforeTheUserVouchesForIt(t *testing.T) {
	vault := []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "vault", Key: "params"}}}
	cases := []struct {
		name    string
		author  string
		from    []v1alpha1.ParametersFromSource
		mayRead bool
		confirm func(Vouch) error
		dryRun  DryRun
		err     string // "" none
		asked   bool
		author2 string // the author after the verb
	}{
		{name: "not confirmed", author: "mallory", from: vault, mayRead: true, err: ErrNotConfirmed.Error(), author2: "mallory"},
		{name: "the user says no", author: "mallory", from: vault, mayRead: true, confirm: func(Vouch) error { return errors.New("no") },
			err: "no", asked: true, author2: "mallory"},
		{name: "a Secret the user may not read", author: "mallory", from: vault, confirm: func(Vouch) error { return nil },
			err: `you may not get Secret "vault"`, author2: "mallory"},
		{name: "a dry run shows it", author: "mallory", from: vault, mayRead: true, dryRun: DryRunClient, asked: true, author2: "mallory"},
		{name: "confirmed", author: "mallory", from: vault, mayRead: true, confirm: func(Vouch) error { return nil }, asked: true, author2: "alice"},
		{name: "naming no Secret: nothing to ask", author: "mallory", author2: "alice"},
		{name: "the user's own: nothing to ask", author: "alice", from: vault, mayRead: true, author2: "alice"},
	}
	verbs := []struct {
		name string
		run  func(e *Engine, v Voucher, dry DryRun) error
	}{
		{"share", func(e *Engine, v Voucher, dry DryRun) error {
			_, err := e.Share(context.Background(), ShareRequest{Namespace: ns, Name: "db", To: "other", DryRun: dry, Vouch: v})
			return err
		}},
		{"unshare", func(e *Engine, v Voucher, dry DryRun) error {
			_, err := e.Unshare(context.Background(), UnshareRequest{Namespace: ns, Name: "db", From: "gone", DryRun: dry, Vouch: v})
			return err
		}},
	}
	for _, verb := range verbs {
		for _, tc := range cases {
			if verb.name == "unshare" && tc.from == nil {
				continue // the grant unshare withdraws names a namespace already
			}
			t.Run(verb.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				sec := secret("vault", map[string]string{"params": `{"leak":"x"}`})
				sec.Namespace = ns
				f := newBrokerFixture(t, catalogNamespace(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, sec)
				var shared []string
				if verb.name == "unshare" {
					shared = []string{"gone"}
				}
				fx := &fixture{t: t, cluster: f.cluster}
				_, err := writerStore(fx, tc.author, "tok").Instances().Create(store.WithIntent(ctx), &v1alpha1.ServiceInstance{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
					Spec:       v1alpha1.ServiceInstanceSpec{BrokerName: brokerName, ParametersFrom: tc.from, SharedWith: shared},
				})
				assert.NilError(t, err)
				var allow []authorizationv1.ResourceAttributes
				if tc.mayRead {
					allow = append(allow, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: "vault"})
				}
				allow = append(allow, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Resource: "configmaps",
					Name: store.ConfigMapName(v1alpha1.KindServiceInstance, "db")})
				f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
				f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{allow: map[string][]authorizationv1.ResourceAttributes{"alice": allow}}, user: "alice"}
				f.engine.cfg.Store = writerStore(fx, "alice", "tok")
				before, err := f.st.Instances().Get(ctx, ns, "db")
				assert.NilError(t, err)

				asked := false
				v := Voucher{Shown: func(Vouch) { asked = true }}
				if tc.confirm != nil {
					v.Confirm = func(x Vouch) error { asked = true; return tc.confirm(x) }
				}
				err = verb.run(f.engine, v, tc.dryRun)
				if tc.err != "" {
					assert.ErrorContains(t, err, tc.err)
				} else {
					assert.NilError(t, err)
				}
				assert.Equal(t, asked, tc.asked)
				after, err := f.st.Instances().Get(ctx, ns, "db")
				assert.NilError(t, err)
				assert.Equal(t, store.AuthorOf(after).Username, tc.author2)
				if tc.author2 != "alice" || tc.dryRun.Enabled() {
					assert.Equal(t, after.ResourceVersion, before.ResourceVersion, "nothing is written")
				}
			})
		}
	}
}
