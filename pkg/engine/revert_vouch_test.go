package engine

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// update --revert writes the instance as its user's intent, the rest of the spec with
// the plan and parameters it sets back: on an instance mallory rewrote (a sharedWith
// naming another namespace, parameters the broker does not hold) it asks before alice
// vouches for it and changes nothing unless she confirms, as update does; alice's own
// instance asks nothing.
func TestRevert_AnotherPersonsInstance_AsksBeforeTheUserVouchesForIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		author  string
		confirm func(Vouch) error
		err     string
		asked   bool
		author2 string
	}{
		{name: "not confirmed", author: "mallory", err: ErrNotConfirmed.Error(), author2: "mallory"},
		{name: "the user says no", author: "mallory", confirm: func(Vouch) error { return errors.New("no") }, err: "no", asked: true, author2: "mallory"},
		{name: "confirmed", author: "mallory", confirm: func(Vouch) error { return nil }, asked: true, author2: "alice"},
		{name: "the user's own: nothing to ask", author: "alice", author2: "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			_, err := writerStore(f, tc.author, "tok").Instances().Create(store.WithIntent(ctx), forgedInstance("db", ns, instanceOSB, func(i *v1alpha1.ServiceInstance) {
				i.Spec.SharedWith = []string{"other"}
				i.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{"size":9}`)}
			}))
			assert.NilError(t, err)
			_, err = f.st.Instances().UpdateWithRetry(ctx, ns, "db", func(i *v1alpha1.ServiceInstance) error {
				i.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
				i.Status.Phase = v1alpha1.PhaseReady
				return nil
			})
			assert.NilError(t, err)
			f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
			f.engine.cfg.Authorizer = selfRBAC{rbac: &rbac{allow: map[string][]authorizationv1.ResourceAttributes{"alice": {
				{Namespace: ns, Verb: "update", Resource: "configmaps", Name: store.ConfigMapName(v1alpha1.KindServiceInstance, "db")},
			}}}, user: "alice"}
			f.engine.cfg.Store = writerStore(f, "alice", "tok")
			before, err := f.st.Instances().Get(ctx, ns, "db")
			assert.NilError(t, err)

			asked := false
			v := Voucher{Shown: func(Vouch) { asked = true }}
			if tc.confirm != nil {
				v.Confirm = func(x Vouch) error { asked = true; return tc.confirm(x) }
			}
			_, _, err = f.engine.revertSpecVouched(ctx, ns, "db", v)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
			} else {
				assert.NilError(t, err)
			}
			assert.Equal(t, asked, tc.asked)
			after, err := f.st.Instances().Get(ctx, ns, "db")
			assert.NilError(t, err)
			assert.Equal(t, store.AuthorOf(after).Username, tc.author2)
			if tc.author2 != "alice" {
				assert.Equal(t, after.ResourceVersion, before.ResourceVersion, "nothing is written")
				assert.Equal(t, string(after.Spec.Parameters.Raw), `{"size":9}`)
			} else {
				assert.Assert(t, after.Spec.Parameters == nil, "reverted: %s", after.Spec.Parameters)
			}
		})
	}
}
