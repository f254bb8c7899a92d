package marketplace_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

const (
	catNS  = "catalog-system"
	userNS = "dev"
)

func class(ns, broker string, scope v1alpha1.Scope, id, name string, plans ...string) *v1alpha1.ServiceClass {
	c := &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.ClassRecordName(broker, id)},
		Spec:       v1alpha1.ServiceClassSpec{BrokerName: broker, Scope: scope, ID: id, ExternalName: name, Bindable: true},
	}
	for _, p := range plans {
		c.Spec.Plans = append(c.Spec.Plans, v1alpha1.ServicePlan{ID: id + "-" + p, ExternalName: p, Free: true})
	}
	return c
}

func seed(t *testing.T, st *store.Store, records ...v1alpha1.Record) {
	t.Helper()
	ctx := context.Background()
	for _, r := range records {
		var err error
		switch o := r.(type) {
		case *v1alpha1.ServiceClass:
			_, err = st.Classes().Create(ctx, o)
		case *v1alpha1.ServicePlanSchemas:
			_, err = st.PlanSchemas().Create(ctx, o)
		case *v1alpha1.CatalogAccess:
			_, err = st.Access().Create(ctx, o)
		}
		assert.NilError(t, err)
	}
}

func fixture(t *testing.T) (*storetest.Cluster, *store.Store) {
	cl := storetest.NewCluster()
	st := cl.Store()
	pg := class(catNS, "acme", v1alpha1.ScopeCluster, "pg", "postgres", "small", "large", "gone")
	pg.Status.Plans = []v1alpha1.ServicePlanStatus{{ID: "pg-gone", RemovedFromBroker: true}}
	old := class(catNS, "acme", v1alpha1.ScopeCluster, "old", "legacy", "basic")
	old.Status.RemovedFromBroker = true
	seed(t, st,
		pg, old,
		class(catNS, "acme", v1alpha1.ScopeCluster, "redis", "redis", "small"),
		class(catNS, "other", v1alpha1.ScopeCluster, "redis2", "redis", "tiny"),
		class(userNS, "mine", v1alpha1.ScopeNamespace, "mq", "rabbitmq", "dev"),
		class("elsewhere", "theirs", v1alpha1.ScopeNamespace, "kafka", "kafka", "dev"),
		&v1alpha1.ServicePlanSchemas{
			ObjectMeta: metav1.ObjectMeta{Namespace: catNS, Name: v1alpha1.ClassRecordName("acme", "pg")},
			Spec: v1alpha1.ServicePlanSchemasSpec{BrokerName: "acme", Scope: v1alpha1.ScopeCluster, ClassID: "pg",
				Plans: []v1alpha1.PlanSchemas{{PlanID: "pg-small", InstanceCreate: &runtime.RawExtension{Raw: []byte(`{"type":"object"}`)}}}},
		},
	)
	return cl, st
}

func TestResolve_FindsClassAndPlanByNameIDOrQualifiedName(t *testing.T) {
	_, st := fixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		class, plan         string
		wantBroker, wantPID string
	}{
		{"postgres", "small", "acme", "pg-small"},
		{"pg", "pg-large", "acme", "pg-large"},
		{"acme.pg", "small", "acme", "pg-small"},
		{"other/redis", "tiny", "other", "redis2-tiny"},
		{"rabbitmq", "dev", "mine", "mq-dev"},
	} {
		t.Run(tc.class+"/"+tc.plan, func(t *testing.T) {
			r, err := marketplace.Resolve(ctx, st, userNS, tc.class, tc.plan)
			assert.NilError(t, err)
			assert.Equal(t, r.Class.Spec.BrokerName, tc.wantBroker)
			assert.Equal(t, r.Plan.ID, tc.wantPID)
		})
	}
}

func TestResolve_ExplainsWhyAClassOrPlanCannotBeUsed(t *testing.T) {
	_, st := fixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, ns, class, plan string
		is                    func(error) bool
		wantMsg               string
	}{
		{"typo suggests", userNS, "postgress", "small", marketplace.IsNotFound, `did you mean "postgres"`},
		{"plan typo suggests", userNS, "postgres", "smal", marketplace.IsNotFound, `did you mean "small"`},
		{"ambiguous", userNS, "redis", "small", marketplace.IsAmbiguous, `"acme/redis" or "other/redis"`},
		{"removed class", userNS, "legacy", "basic", marketplace.IsRemoved, `no longer offered by broker "acme"`},
		{"removed plan", userNS, "postgres", "gone", marketplace.IsRemoved, `plan "gone" of class "postgres"`},
		{"other namespace's broker", userNS, "kafka", "dev", marketplace.IsNotFound, `class "kafka" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := marketplace.Resolve(ctx, st, tc.ns, tc.class, tc.plan)
			assert.Assert(t, tc.is(err), "%v", err)
			assert.ErrorContains(t, err, tc.wantMsg)
		})
	}
}

func TestResolve_LoadsOnlyTheChosenPlansSchemas(t *testing.T) {
	_, st := fixture(t)
	ctx := context.Background()
	r, err := marketplace.Resolve(ctx, st, userNS, "postgres", "small")
	assert.NilError(t, err)
	s, err := r.Schemas(ctx)
	assert.NilError(t, err)
	assert.Equal(t, string(s.InstanceCreate.Raw), `{"type":"object"}`)

	r, err = marketplace.Resolve(ctx, st, userNS, "postgres", "large")
	assert.NilError(t, err)
	s, err = r.Schemas(ctx)
	assert.NilError(t, err)
	assert.Assert(t, s == nil)
}

func TestAccessRules_MostSpecificRuleDecides(t *testing.T) {
	_, st := fixture(t)
	ctx := context.Background()
	pgRule := v1alpha1.AccessRule{BrokerName: "acme", ClassID: "pg", ClassExternalName: "postgres"}
	disableEverywhere := pgRule
	_, err := marketplace.SetRule(ctx, st, disableEverywhere)
	assert.NilError(t, err)
	enableSmallInDev := pgRule
	enableSmallInDev.Namespace, enableSmallInDev.PlanID, enableSmallInDev.Enabled = userNS, "pg-small", true
	_, err = marketplace.SetRule(ctx, st, enableSmallInDev)
	assert.NilError(t, err)

	_, err = marketplace.Resolve(ctx, st, "prod", "postgres", "small")
	assert.Assert(t, marketplace.IsDisabled(err), "%v", err)
	assert.ErrorContains(t, err, `kubectl catalog access enable postgres -n prod`)

	_, err = marketplace.Resolve(ctx, st, userNS, "postgres", "small")
	assert.NilError(t, err)
	_, err = marketplace.Resolve(ctx, st, userNS, "postgres", "large")
	assert.Assert(t, marketplace.IsDisabled(err), "%v", err)

	offers, err := marketplace.List(ctx, st, userNS, marketplace.Filter{Class: "postgres"})
	assert.NilError(t, err)
	assert.Equal(t, len(offers), 1)
	assert.Equal(t, len(offers[0].Plans), 1)
	assert.Equal(t, offers[0].Plans[0].ExternalName, "small")

	offers, err = marketplace.List(ctx, st, "prod", marketplace.Filter{Class: "postgres"})
	assert.NilError(t, err)
	assert.Equal(t, len(offers), 0)

	changed, err := marketplace.SetRule(ctx, st, enableSmallInDev)
	assert.NilError(t, err)
	assert.Assert(t, !changed)
}

func TestList_ShowsClusterAndOwnNamespaceClassesWithoutRemoved(t *testing.T) {
	_, st := fixture(t)
	offers, err := marketplace.List(context.Background(), st, userNS, marketplace.Filter{})
	assert.NilError(t, err)
	var names []string
	for _, o := range offers {
		names = append(names, o.Class.Spec.BrokerName+"/"+o.Class.Spec.ExternalName)
		if o.Class.Spec.ExternalName == "postgres" {
			assert.Equal(t, len(o.Plans), 2)
		}
	}
	assert.Check(t, is.DeepEqual(names, []string{"acme/postgres", "mine/rabbitmq", "acme/redis", "other/redis"}))
}

func TestSuggest_ClosestFirst(t *testing.T) {
	assert.DeepEqual(t, marketplace.Suggest("postgre", []string{"mysql", "postgres", "postgis", "pg"}), []string{"postgres", "postgis"})
	assert.Assert(t, marketplace.Suggest("zzz", []string{"mysql"}) == nil)
}
