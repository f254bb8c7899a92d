package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestOriginatingIdentity_IsTheVerifiedAuthorsWhenUnattended_TheVerbUsersOtherwise(t *testing.T) {
	bob := &osb.OriginatingIdentity{Username: "bob", Groups: []string{"system:authenticated"}, Extra: map[string][]string{}}
	for _, tc := range []struct {
		name       string
		unattended bool
		trust      TrustState
		token      string
		want       *osb.OriginatingIdentity // nil: no header
	}{
		{name: "reconcile, a verified author", unattended: true, trust: TrustState{Token: "tok"}, token: "tok", want: bob},
		{name: "reconcile, an author the policy in force cannot vouch for", unattended: true, trust: TrustState{Token: "tok"}, token: "old"},
		{name: "reconcile, no trust policy: its own", unattended: true, trust: TrustState{Reason: "not installed"}, token: "", want: testUser},
		{name: "a verb: its user's", trust: TrustState{Token: "tok"}, token: "tok", want: testUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.engine.cfg.Trust = staticTrust{tc.trust}
			f.engine.cfg.Unattended = tc.unattended
			_, err := writerStore(f, "bob", tc.token).Instances().Create(store.WithIntent(context.Background()), forgedInstance("db2", ns, "id-2", nil))
			assert.NilError(t, err)

			res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db2"}})

			calls := f.broker.CallsTo(fake.MethodProvision)
			assert.Equal(t, len(calls), 1, "%+v", res)
			opts := calls[0].Request.(osb.ProvisionRequest).RequestOptions
			if tc.want == nil {
				assert.Assert(t, opts.OriginatingIdentity == nil && opts.OmitOriginatingIdentity, "%+v", opts)
				return
			}
			assert.DeepEqual(t, opts.OriginatingIdentity, tc.want)
		})
	}
}
