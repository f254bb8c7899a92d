package marketplace_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
)

func TestFindClass_NamesAClassByEveryFormWithOneMessagePerFailure(t *testing.T) {
	classes := []*v1alpha1.ServiceClass{
		class(catNS, "acme", v1alpha1.ScopeCluster, "pg", "postgres", "small"),
		class(catNS, "acme", v1alpha1.ScopeCluster, "rd", "redis", "small"),
		class(userNS, "other", v1alpha1.ScopeNamespace, "rd2", "redis", "small"),
		// An external name that is also another class's id: the external name wins.
		class(userNS, "other", v1alpha1.ScopeNamespace, "x9", "pg", "small"),
	}
	for _, tc := range []struct {
		name, arg, wantID, wantErr string
	}{
		{name: "external name", arg: "postgres", wantID: "pg"},
		{name: "broker-qualified", arg: "other/redis", wantID: "rd2"},
		{name: "broker-qualified id", arg: "acme/rd", wantID: "rd"},
		{name: "record name", arg: v1alpha1.ClassRecordName("acme", "rd"), wantID: "rd"},
		{name: "OSB id", arg: "rd2", wantID: "rd2"},
		{name: "external name before id", arg: "pg", wantID: "x9"},
		{name: "typo", arg: "postgress",
			wantErr: `class "postgress" not found in the marketplace of namespace "dev"; did you mean "postgres"? (run "kubectl catalog marketplace" to list what is offered)`},
		{name: "typo after broker", arg: "acme/postgress",
			wantErr: `class "acme/postgress" not found in the marketplace of namespace "dev"; did you mean "postgres"? (run "kubectl catalog marketplace" to list what is offered)`},
		{name: "several brokers", arg: "redis",
			wantErr: `class "redis" is offered by several brokers in namespace "dev": name one of "acme/redis" or "other/redis" (BROKER/CLASS)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := marketplace.FindClass(classes, tc.arg, userNS)
			if tc.wantErr != "" {
				assert.Error(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, c.Spec.ID, tc.wantID)
		})
	}
}

func TestFindClass_EveryNamespaceSaysSo(t *testing.T) {
	_, err := marketplace.FindClass(nil, "postgres", "")
	assert.Error(t, err, `class "postgres" not found in any namespace (run "kubectl catalog marketplace" to list what is offered)`)
}

func TestFindPlan_ByNameOrIDElseSuggests(t *testing.T) {
	c := class(catNS, "acme", v1alpha1.ScopeCluster, "pg", "postgres", "small", "large")
	p, err := marketplace.FindPlan(c, "pg-large", userNS)
	assert.NilError(t, err)
	assert.Equal(t, p.ExternalName, "large")
	_, err = marketplace.FindPlan(c, "smal", userNS)
	assert.Error(t, err, `plan "smal" of class "postgres" not found in the marketplace of namespace "dev"; did you mean "small"? (run "kubectl catalog get plans -c postgres" to list them)`)
}

func TestMatchPlanIn_TakesClassQualifiedNames(t *testing.T) {
	c := class(catNS, "acme", v1alpha1.ScopeCluster, "pg", "postgres", "small")
	p := &c.Spec.Plans[0]
	for arg, want := range map[string]bool{
		"small": true, "pg-small": true, "postgres/small": true, "acme/postgres/small": true,
		"other/postgres/small": false, "redis/small": false, "large": false,
	} {
		assert.Equal(t, marketplace.MatchPlanIn(c, p, arg), want, arg)
	}
}
