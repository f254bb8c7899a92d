package trust

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The policy admits a write that sets or changes a record's migrated-from annotation
// only from the record's author or a user who may read the Service Catalog's objects of
// its kind in its namespace; the state says whether the installed policy is this one
// (MigratedFrom) or the earlier release's, which is in force all the same (Older).
func TestCheckPolicy_SaysWhetherThePolicyCoversMigratedFrom(t *testing.T) {
	older := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	token := TokenConfigMap(ns, "tok")
	token.CreationTimestamp = metav1.NewTime(older.Add(time.Hour))
	b := Binding()
	b.CreationTimestamp = older
	for _, tc := range []struct {
		name            string
		policy          *admissionv1.ValidatingAdmissionPolicy
		covers, inForce bool
	}{
		{name: "this release's", policy: Policy(), covers: true, inForce: true},
		{name: "the earlier release's", policy: PriorPolicy(), inForce: true},
		{name: "the earlier release's with its migrated-from check taken out", inForce: false, policy: func() *admissionv1.ValidatingAdmissionPolicy {
			p := Policy()
			p.Spec.Validations[2].Expression = "true"
			return p
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.policy.CreationTimestamp = older
			st, err := CheckPolicy(context.Background(), fake.NewClientset(tc.policy, b, token), ns)
			assert.NilError(t, err)
			assert.Equal(t, st.InForce(), tc.inForce, "%+v", st)
			assert.Equal(t, st.MigratedFrom, tc.covers, "%+v", st)
			if tc.inForce && !tc.covers {
				assert.Assert(t, is.Contains(st.Older, "kubectl catalog init"))
				assert.Assert(t, is.Contains(st.Older, store.AnnotationMigratedFrom))
			} else {
				assert.Equal(t, st.Older, "")
			}
		})
	}
	t.Run("unreadable policy: the token alone, no coverage", func(t *testing.T) {
		core := fake.NewClientset(token)
		core.PrependReactor("get", "validatingadmissionpolicies", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}, store.TrustPolicyName, nil)
		})
		st, err := CheckPolicy(context.Background(), core, ns)
		assert.NilError(t, err)
		assert.Assert(t, st.InForce() && st.TokenOnly && !st.MigratedFrom, "%+v", st)
	})
}

func TestPolicy_ChecksWhoSetsMigratedFrom(t *testing.T) {
	p := Policy()
	all := ""
	for _, v := range p.Spec.Variables {
		all += v.Expression + "\n"
	}
	for _, v := range p.Spec.Validations {
		all += v.Expression + "\n"
	}
	assert.Assert(t, is.Contains(all, "'"+store.AnnotationMigratedFrom+"'"))
	assert.Assert(t, is.Contains(all, "authorizer.group('servicecatalog.k8s.io')"))
	assert.Assert(t, is.Contains(all, "variables.stamped"))
	assert.Equal(t, len(p.Spec.Validations), len(PriorPolicy().Spec.Validations)+1)
}

// init upgrades the earlier release's policy in place: it vouched for authors the same
// way, so the token stays. A policy that is neither is no upgrade.
func TestUpgradedInPlace_TheEarlierReleasesPolicies(t *testing.T) {
	prior := PriorPolicy()
	priorOldStamped := PriorPolicy()
	for i, v := range priorOldStamped.Spec.Variables {
		if v.Name == "stamped" {
			priorOldStamped.Spec.Variables[i].Expression = priorStamped[0]
		}
	}
	weakened := PriorPolicy()
	weakened.Spec.Validations[0].Expression = "true"
	assert.Assert(t, UpgradedInPlace(prior))
	assert.Assert(t, UpgradedInPlace(priorOldStamped))
	assert.Assert(t, !UpgradedInPlace(weakened))
	assert.Assert(t, !UpgradedInPlace(Policy()), "the same policy is no upgrade")
}
