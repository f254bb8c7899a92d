package catalogsync_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

const ns = "catalog-system"

type env struct {
	cluster *storetest.Cluster
	st      *store.Store
	tb      *broker.Broker
	syncer  *catalogsync.Syncer
	broker  *v1alpha1.Broker
}

func newEnv(t *testing.T, cat broker.Catalog, restr *v1alpha1.CatalogRestrictions) *env {
	t.Helper()
	tb := broker.NewTestBroker(t, broker.Options{Catalog: &cat})
	cl := storetest.NewCluster()
	st := cl.Store()
	b, err := st.Brokers().Create(context.Background(), &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme"},
		Spec:       v1alpha1.BrokerSpec{URL: tb.URL(), Scope: v1alpha1.ScopeCluster, CatalogRestrictions: restr},
	})
	assert.NilError(t, err)
	return &env{cluster: cl, st: st, tb: tb, broker: b,
		syncer: catalogsync.New(st, brokerclient.New(cl.Core, brokerclient.WithTimeout(2*time.Second), brokerclient.WithMaxCatalogBytes(1<<20)))}
}

func (e *env) sync(t *testing.T) (*catalogsync.Result, error) {
	t.Helper()
	b, err := e.st.Brokers().Get(context.Background(), ns, "acme")
	assert.NilError(t, err)
	return e.syncer.Sync(context.Background(), b)
}

func (e *env) classes(t *testing.T) map[string]*v1alpha1.ServiceClass {
	t.Helper()
	cs, err := e.st.Classes().List(context.Background(), ns, store.Filter{Broker: "acme"})
	assert.NilError(t, err)
	out := map[string]*v1alpha1.ServiceClass{}
	for _, c := range cs {
		out[c.Spec.ID] = c
	}
	return out
}

func planNames(c *v1alpha1.ServiceClass) []string {
	var names []string
	for _, p := range c.Spec.Plans {
		n := p.ExternalName
		if c.PlanRemoved(p.ID) {
			n += "(removed)"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestSync_FirstSyncRecordsClassesSchemasAndStatus(t *testing.T) {
	e := newEnv(t, broker.GenerateCatalog(3, 2), nil)
	res, err := e.sync(t)
	assert.NilError(t, err)
	assert.Equal(t, res.Classes, 3)
	assert.Equal(t, res.Plans, 6)
	assert.Equal(t, res.ClassesAdded, 3)
	cs := e.classes(t)
	assert.Equal(t, len(cs), 3)
	for _, c := range cs {
		sc, err := e.st.PlanSchemas().Get(context.Background(), ns, c.Name)
		assert.NilError(t, err)
		assert.Equal(t, len(sc.Spec.Plans), 2)
		assert.Assert(t, sc.Spec.Plans[0].InstanceCreate != nil)
	}
	b, err := e.st.Brokers().Get(context.Background(), ns, "acme")
	assert.NilError(t, err)
	assert.Equal(t, b.Status.ClassCount, int32(3))
	assert.Equal(t, b.Status.PlanCount, int32(6))
	assert.Assert(t, b.Status.LastCatalogFetch != nil)
	assert.Assert(t, !b.HasPendingWork())
}

func TestSync_UnchangedCatalogWritesNothing(t *testing.T) {
	e := newEnv(t, broker.GenerateCatalog(3, 2), nil)
	_, err := e.sync(t)
	assert.NilError(t, err)
	writes := 0
	e.cluster.Core.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			if n := a.GetVerb(); n == "update" || n == "create" || n == "delete" || n == "patch" {
				writes++
			}
		}
		return false, nil, nil
	})
	res, err := e.sync(t)
	assert.NilError(t, err)
	assert.Assert(t, res.Unchanged())
	assert.Assert(t, writes <= 1, "only the broker's status may be written, got %d writes", writes)
}

func TestSync_FollowsCatalogChangesByID(t *testing.T) {
	cat := broker.GenerateCatalog(4, 2)
	e := newEnv(t, cat, nil)
	_, err := e.sync(t)
	assert.NilError(t, err)
	s0, s1, s2, s3 := cat.Services[0], cat.Services[1], cat.Services[2], cat.Services[3]

	// An instance uses s2 and plan 1 of s1.
	_, err = e.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "db"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "acme", ClassID: s2.ID,
			ClassExternalName: s2.Name, PlanID: s2.Plans[0].ID, PlanExternalName: s2.Plans[0].Name, ExternalID: "i1"},
	})
	assert.NilError(t, err)
	_, err = e.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "db2"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: "acme", ClassID: s1.ID,
			ClassExternalName: s1.Name, PlanID: s1.Plans[1].ID, PlanExternalName: s1.Plans[1].Name, ExternalID: "i2"},
	})
	assert.NilError(t, err)

	// s0 renamed with a new plan; s1 loses both plans' ... only plan 1; s2 and s3 vanish; s4 is new.
	renamed := s0
	renamed.Name = "renamed"
	renamed.Plans = append(append([]osb.Plan{}, s0.Plans...), osb.Plan{ID: "new-plan", Name: "new", Description: "n"})
	shrunk := s1
	shrunk.Plans = s1.Plans[:1]
	fresh := broker.GenerateCatalog(5, 1).Services[4]
	next := broker.Catalog{Services: []osb.Service{renamed, shrunk, fresh}, Behaviours: cat.Behaviours}
	assert.NilError(t, e.tb.ReplaceCatalog(next))

	res, err := e.sync(t)
	assert.NilError(t, err)
	assert.Equal(t, res.ClassesAdded, 1)
	assert.Equal(t, res.ClassesUpdated, 1)
	assert.Equal(t, res.ClassesRemoved, 1)
	assert.Equal(t, res.ClassesDeleted, 1)
	assert.Equal(t, res.PlansAdded, 2)
	assert.Equal(t, res.PlansRemoved, 1)
	assert.Check(t, is.DeepEqual(res.Kept, []string{s1.Name + "/" + s1.Plans[1].Name, s2.Name}))

	cs := e.classes(t)
	assert.Equal(t, len(cs), 4)
	assert.Equal(t, cs[s0.ID].Spec.ExternalName, "renamed")
	assert.Check(t, is.DeepEqual(planNames(cs[s0.ID]), []string{"new", s0.Plans[0].Name, s0.Plans[1].Name}))
	assert.Check(t, is.DeepEqual(planNames(cs[s1.ID]), []string{s1.Plans[0].Name, s1.Plans[1].Name + "(removed)"}))
	assert.Assert(t, cs[s2.ID].Status.RemovedFromBroker)
	assert.Assert(t, cs[s3.ID] == nil)
	_, err = e.st.PlanSchemas().Get(context.Background(), ns, v1alpha1.ClassRecordName("acme", s3.ID))
	assert.Assert(t, store.IsNotFound(err))

	// The class comes back: it is no longer marked.
	assert.NilError(t, e.tb.ReplaceCatalog(broker.Catalog{Services: []osb.Service{renamed, shrunk, fresh, s2}, Behaviours: cat.Behaviours}))
	_, err = e.sync(t)
	assert.NilError(t, err)
	assert.Assert(t, !e.classes(t)[s2.ID].Status.RemovedFromBroker)
}

func TestSync_FailedFetchKeepsClassesAndRecordsError(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fault      broker.Fault
		catalog    *broker.Catalog
		wantReason string
		wantMsg    string
	}{
		{name: "5xx", fault: broker.Fault{Op: broker.OpCatalog, Action: broker.ActionRespond, Status: 503, Description: "down for maintenance"},
			wantReason: catalogsync.ReasonBrokerError, wantMsg: "down for maintenance"},
		{name: "401", fault: broker.Fault{Op: broker.OpCatalog, Action: broker.ActionRespond, Status: 401},
			wantReason: catalogsync.ReasonUnauthorized, wantMsg: "check the credentials"},
		{name: "malformed", fault: broker.Fault{Op: broker.OpCatalog, Action: broker.ActionMalformed},
			wantReason: catalogsync.ReasonMalformed, wantMsg: "not valid JSON"},
		{name: "oversized", fault: broker.Fault{Op: broker.OpCatalog, Action: broker.ActionOversized, Size: 2 << 20},
			wantReason: catalogsync.ReasonTooLarge, wantMsg: "size limit"},
		{name: "timeout", fault: broker.Fault{Op: broker.OpCatalog, Action: broker.ActionHang},
			wantReason: catalogsync.ReasonTimeout, wantMsg: "did not answer in time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, broker.GenerateCatalog(2, 2), nil)
			_, err := e.sync(t)
			assert.NilError(t, err)
			before := e.classes(t)
			_, err = e.tb.InjectFault(tc.fault)
			assert.NilError(t, err)

			_, err = e.sync(t)
			assert.ErrorContains(t, err, `broker "acme"`)
			assert.ErrorContains(t, err, tc.wantMsg)
			after := e.classes(t)
			assert.Equal(t, len(after), len(before))
			for id, c := range before {
				assert.Equal(t, after[id].ResourceVersion, c.ResourceVersion)
			}
			b, err := e.st.Brokers().Get(context.Background(), ns, "acme")
			assert.NilError(t, err)
			assert.Equal(t, b.Status.Retry.Reason, tc.wantReason)
			assert.ErrorContains(t, err2(b.Status.LastCatalogError), tc.wantMsg)
			assert.Equal(t, b.Status.ClassCount, int32(2), "counts of the last good fetch stay")

			// The next good sync clears the error.
			_, err = e.sync(t)
			assert.NilError(t, err)
			b, err = e.st.Brokers().Get(context.Background(), ns, "acme")
			assert.NilError(t, err)
			assert.Assert(t, b.Status.Retry == nil)
			assert.Equal(t, b.Status.LastCatalogError, "")
		})
	}
}

type strErr string

func (s strErr) Error() string { return string(s) }
func err2(s string) error      { return strErr(s) }

func TestSync_DuplicateIDsAreRefusedWithoutChanges(t *testing.T) {
	cat := broker.GenerateCatalog(2, 2)
	e := newEnv(t, cat, nil)
	_, err := e.sync(t)
	assert.NilError(t, err)
	before := e.classes(t)

	e.tb.InjectFault(broker.Fault{Op: broker.OpCatalog, Action: broker.ActionRespond, Status: 200,
		Body: `{"services":[{"id":"x","name":"a","description":"d","bindable":true,"plans":[{"id":"p","name":"p","description":"d"}]},` +
			`{"id":"x","name":"b","description":"d","bindable":true,"plans":[{"id":"q","name":"q","description":"d"}]}]}`})
	_, err = e.sync(t)
	assert.ErrorContains(t, err, `repeats id "x"`)
	assert.ErrorContains(t, err, "fix the broker's catalog")
	assert.Equal(t, len(e.classes(t)), len(before))

	e.tb.InjectFault(broker.Fault{Op: broker.OpCatalog, Action: broker.ActionRespond, Status: 200,
		Body: `{"services":[{"id":"x","name":"a","description":"d","bindable":true,"plans":[{"id":"p","name":"p","description":"d"}]},` +
			`{"id":"y","name":"b","description":"d","bindable":true,"plans":[{"id":"p","name":"q","description":"d"}]}]}`})
	_, err = e.sync(t)
	assert.ErrorContains(t, err, `plan id "p" is used by services "x" and "y"`)
}

func TestSync_RestrictionsLimitClassesAndPlans(t *testing.T) {
	cat := broker.GenerateCatalog(3, 3)
	restr := &v1alpha1.CatalogRestrictions{
		ServiceClass: []string{"name in (" + cat.Services[0].Name + "," + cat.Services[1].Name + ")"},
		ServicePlan:  []string{"name!=" + cat.Services[0].Plans[0].Name},
	}
	e := newEnv(t, cat, restr)
	res, err := e.sync(t)
	assert.NilError(t, err)
	assert.Equal(t, res.Classes, 2)
	cs := e.classes(t)
	assert.Equal(t, len(cs), 2)
	assert.Equal(t, len(cs[cat.Services[0].ID].Spec.Plans), 2)
}

func TestParseRestrictions_RejectsBadRules(t *testing.T) {
	for _, tc := range []struct {
		rules   v1alpha1.CatalogRestrictions
		wantErr string
	}{
		{v1alpha1.CatalogRestrictions{ServiceClass: []string{"name in (a,b"}}, `class restriction "name in (a,b" is not valid`},
		{v1alpha1.CatalogRestrictions{ServicePlan: []string{"color==red"}}, `tests "color", which is not a plan property`},
		{v1alpha1.CatalogRestrictions{ServiceClass: []string{"free==true"}}, `not a class property`},
	} {
		_, err := catalogsync.ParseRestrictions(&tc.rules)
		assert.ErrorContains(t, err, tc.wantErr)
	}
	_, err := catalogsync.ParseRestrictions(&v1alpha1.CatalogRestrictions{ServicePlan: []string{"free==true", "spec.externalName notin (big)"}})
	assert.NilError(t, err)
}

type refusal struct{ reason, msg string }

func (r refusal) Error() string         { return r.msg }
func (r refusal) RefusalReason() string { return r.reason }

// A broker the check refuses is not fetched; its Refused and Ready conditions carry the
// refusal's own reason, also when an earlier fetch had made it Ready.
func TestSync_ARefusedBrokerIsNotFetched_ReadyCarriesTheRefusalsReason(t *testing.T) {
	e := newEnv(t, broker.GenerateCatalog(1, 1), nil)
	_, err := e.sync(t)
	assert.NilError(t, err)
	fetches := len(e.tb.Requests())
	e.syncer = catalogsync.New(e.st, brokerclient.New(e.cluster.Core, brokerclient.WithTimeout(2*time.Second)),
		catalogsync.WithBrokerCheck(func(context.Context, *v1alpha1.Broker) error {
			return refusal{reason: "RefusedNotAuthorized", msg: `refused to get Secret "root"`}
		}))

	_, err = e.sync(t)
	assert.ErrorContains(t, err, `refused to get Secret "root"`)

	assert.Equal(t, len(e.tb.Requests()), fetches, "nothing is sent to a refused broker")
	b, err := e.st.Brokers().Get(context.Background(), ns, "acme")
	assert.NilError(t, err)
	for _, typ := range []string{v1alpha1.ConditionRefused, v1alpha1.ConditionReady} {
		c := meta.FindStatusCondition(b.Status.Conditions, typ)
		assert.Assert(t, c != nil, "%s: %+v", typ, b.Status.Conditions)
		assert.Equal(t, c.Reason, "RefusedNotAuthorized", typ)
		assert.Assert(t, is.Contains(c.Message, `refused to get Secret "root"`), typ)
	}
	assert.Equal(t, meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady).Status, metav1.ConditionFalse)
}
