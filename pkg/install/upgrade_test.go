package install

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// The earlier release's policy compared an author's groups joined with "," only; this
// release's also accepts the list form that keeps a group holding a "," apart. Applying it
// over the earlier one changes that one variable: the policy was in force all along, so
// the token stays and no record is stranded by the upgrade. Any other change renews it.
func TestApply_ThePolicyOfTheEarlierReleaseIsUpgradedInPlace_TheTokenStays(t *testing.T) {
	ctx := context.Background()
	o := Defaults()
	o.Image = "example.invalid/kubectl-catalog:test"
	opts := ApplyOptions{SkipEnforcementCheck: true}
	for _, tc := range []struct {
		name    string
		stamped string
		want    string
	}{
		{name: "the earlier release's groups check", want: Unchanged,
			stamped: "variables.author == request.userInfo.username && variables.groups == request.userInfo.?groups.orValue([]).join(',')"},
		{name: "any other check", want: Renewed, stamped: "variables.author == request.userInfo.username"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := fake.NewClientset()
			_, err := Apply(ctx, core, Build(o), opts)
			assert.NilError(t, err)
			token := func() string {
				cm, err := core.CoreV1().ConfigMaps(o.TrustNamespace()).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
				assert.NilError(t, err)
				return cm.Data[store.TrustTokenKey]
			}
			before := token()
			p, err := core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, store.TrustPolicyName, metav1.GetOptions{})
			assert.NilError(t, err)
			for i, v := range p.Spec.Variables {
				if v.Name == "stamped" {
					p.Spec.Variables[i].Expression = tc.stamped
				}
			}
			_, err = core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(ctx, p, metav1.UpdateOptions{})
			assert.NilError(t, err)

			res, err := Apply(ctx, core, Build(o), opts)
			assert.NilError(t, err)
			last := res[len(res)-1]
			assert.Equal(t, last.String(), "configmap/catalog-trust "+tc.want)
			if tc.want == Unchanged {
				assert.Equal(t, token(), before)
			} else {
				assert.Assert(t, token() != before)
			}
		})
	}
}

// This release's policy also checks who sets a record's migrated-from annotation; the
// earlier release's vouched for authors the same way: applied over it, the policy is
// upgraded in place and the token stays.
func TestApply_TheEarlierReleasesPolicyWithoutTheMigratedFromCheck_IsUpgradedInPlace(t *testing.T) {
	ctx := context.Background()
	o := Defaults()
	o.Image = "example.invalid/kubectl-catalog:test"
	opts := ApplyOptions{SkipEnforcementCheck: true}
	core := fake.NewClientset()
	_, err := Apply(ctx, core, Build(o), opts)
	assert.NilError(t, err)
	cm, err := core.CoreV1().ConfigMaps(o.TrustNamespace()).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	before := cm.Data[store.TrustTokenKey]
	p, err := core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, store.TrustPolicyName, metav1.GetOptions{})
	assert.NilError(t, err)
	p.Spec = trust.PriorPolicy().Spec
	_, err = core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(ctx, p, metav1.UpdateOptions{})
	assert.NilError(t, err)

	res, err := Apply(ctx, core, Build(o), opts)
	assert.NilError(t, err)
	assert.Equal(t, res[len(res)-1].String(), "configmap/catalog-trust "+Unchanged)
	p, err = core.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, store.TrustPolicyName, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Spec.Validations, trust.Policy().Spec.Validations)
	cm, err = core.CoreV1().ConfigMaps(o.TrustNamespace()).Get(ctx, store.TrustConfigMap, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, cm.Data[store.TrustTokenKey], before)
}
