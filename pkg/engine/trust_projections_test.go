package engine

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestTrust_AProjectionIntoAWorkloadTheAuthorMayNotChange_IsRefused(t *testing.T) {
	f, p := bindingFixture(t, nil)
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	authz := &rbac{allow: map[string][]authorizationv1.ResourceAttributes{
		"mallory": {{Namespace: ns, Verb: "update", Group: "apps", Resource: "deployments", Name: "hers"}},
	}}
	f.engine.cfg.Authorizer = authz
	_, err := writerStore(f, "mallory", "tok").Bindings().Create(store.WithIntent(context.Background()), NewBinding(BindingIntent{
		Namespace: ns, Name: "b", Instance: "db", SecretName: "b", ExternalID: "bind-b",
		Projections: []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "hers"}, {Kind: "Deployment", Name: "someone-elses"}},
	}))
	assert.NilError(t, err)

	for range 3 {
		if res := f.stepBinding("b"); res.Refused || res.Done() {
			break
		}
	}

	b := f.getBinding("b")
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "conditions: %+v", b.Status.Conditions)
	assert.Equal(t, c.Reason, ReasonRefusedNotAuthorized)
	assert.Assert(t, is.Contains(c.Message, `update deployments.apps "someone-elses"`))
	assert.Equal(t, len(p.projected), 0, "no workload was changed")
}

// A binding's status is free to write for anyone who may update its ConfigMap: a
// projection it lists as made proves nothing about the spec's author. Forged entries
// must not spare a workload the author may not change from the check.
func TestTrust_AProjectionTheStatusClaimsMade_IsStillCheckedAgainstTheAuthor(t *testing.T) {
	f, p := bindingFixture(t, nil)
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	f.engine.cfg.Authorizer = &rbac{allow: map[string][]authorizationv1.ResourceAttributes{
		"mallory": {{Namespace: ns, Verb: "update", Group: "apps", Resource: "deployments", Name: "hers"}},
	}}
	b := NewBinding(BindingIntent{
		Namespace: ns, Name: "b", Instance: "db", SecretName: "b", ExternalID: "bind-b",
		Projections: []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "hers"}, {Kind: "Deployment", Name: "someone-elses"}},
	})
	b.Status.Projected = []v1alpha1.WorkloadProjection{{Kind: "Deployment", Name: "someone-elses"}}
	_, err := writerStore(f, "mallory", "tok").Bindings().Create(store.WithIntent(context.Background()), b)
	assert.NilError(t, err)

	for range 3 {
		if res := f.stepBinding("b"); res.Refused || res.Done() {
			break
		}
	}

	got := f.getBinding("b")
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "conditions: %+v", got.Status.Conditions)
	assert.Equal(t, c.Reason, ReasonRefusedNotAuthorized)
	assert.Assert(t, is.Contains(c.Message, `update deployments.apps "someone-elses"`))
	for k := range p.projected {
		assert.Assert(t, !strings.Contains(k, "someone-elses"), "projected into a workload the author may not change: %v", p.projected)
	}
}
