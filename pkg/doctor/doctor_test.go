package doctor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

const (
	catalogNS = storetest.CatalogNamespace
	userNS    = storetest.UserNamespace
)

// fixture is a fake cluster where the user may do everything but what denied lists
// ("verb resource" in a namespace, "*" for any namespace), with an engine over its
// store that calls brokers with real clients.
type fixture struct {
	cluster *storetest.Cluster
	st      *store.Store
	eng     *engine.Engine
	denied  map[string]bool
	// grants, when set, are all the user may do, by namespace: the rules of the roles
	// bound there (and "" for cluster-scoped requests, which every user may make).
	grants map[string][]rbacv1.PolicyRule
	now    time.Time
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	fx := &fixture{cluster: storetest.NewCluster(objs...), denied: map[string]bool{}, now: time.Now()}
	fx.st = fx.cluster.Store()
	fx.eng = engine.New(engine.Config{Store: fx.st, CatalogNamespace: catalogNS,
		Brokers: brokerclient.New(fx.cluster.Core, brokerclient.WithTimeout(5*time.Second))})
	fx.cluster.Core.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		attrs := sar.Spec.ResourceAttributes
		key := attrs.Verb + " " + attrs.Resource
		sar.Status.Allowed = !fx.denied[key+" "+attrs.Namespace] && !fx.denied[key+" *"]
		if fx.grants != nil {
			sar.Status.Allowed = attrs.Namespace == "" && attrs.Resource == "selfsubjectreviews" || slices.ContainsFunc(fx.grants[attrs.Namespace], func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.APIGroups, attrs.Group) && slices.Contains(r.Resources, attrs.Resource) && slices.Contains(r.Verbs, attrs.Verb)
			})
		}
		return true, sar, nil
	})
	fx.cluster.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
			UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"developers", "system:authenticated"}}}}, nil
	})
	return fx
}

func (fx *fixture) config() *Config {
	return &Config{
		BrokerTimeout: 5 * time.Second, ReconcileNamespace: install.DefaultNamespace,
		Namespace: userNS, CatalogNamespace: catalogNS, Server: "https://127.0.0.1:6443",
		Core: fx.cluster.Core, Records: engine.NewReader(fx.st), Brokers: fx.eng,
		Now: func() time.Time { return fx.now },
	}
}

// stampedStore writes records as alice under the trust policy of token.
func (fx *fixture) stampedStore(token string) *store.Store {
	return fx.cluster.Store(store.WithIdentity(func(context.Context) (*store.Identity, error) { return &store.Identity{Username: "alice"}, nil }),
		store.WithTrustToken(func(context.Context) (string, error) { return token, nil }))
}

func (fx *fixture) run() []Finding { return Run(context.Background(), *fx.config()) }

func find(fs []Finding, object string) (Finding, bool) {
	for _, f := range fs {
		if f.Object == object {
			return f, true
		}
	}
	return Finding{}, false
}

func objects(fs []Finding) []string {
	var names []string
	for _, f := range fs {
		names = append(names, f.Object)
	}
	return names
}

// addBroker registers a broker as the user running doctor would: the engine calls it.
func (fx *fixture) addBroker(t *testing.T, ns, name, url string, auth *v1alpha1.BrokerAuth) {
	t.Helper()
	scope := v1alpha1.ScopeCluster
	if ns != catalogNS {
		scope = v1alpha1.ScopeNamespace
	}
	_, err := fx.st.Brokers().Create(store.WithIntent(context.Background()), &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.BrokerSpec{URL: url, Scope: scope, Auth: auth},
	})
	assert.NilError(t, err)
}

func instance(ns, name string) *v1alpha1.ServiceInstance {
	inst := storetest.SampleInstance()
	inst.Namespace, inst.Name, inst.ResourceVersion, inst.UID = ns, name, "", ""
	inst.Status = v1alpha1.ServiceInstanceStatus{}
	return inst
}

func TestRun_AllWell(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	fx := newFixture(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: "auth"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}},
		installedCronJob(install.DefaultName, 0, &batchv1.CronJobStatus{LastScheduleTime: &metav1.Time{Time: time.Now().Add(-2 * time.Minute)},
			LastSuccessfulTime: &metav1.Time{Time: time.Now().Add(-time.Minute)}}),
		trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "3f1c2b5e-token"),
	)
	fx.st = fx.stampedStore("3f1c2b5e-token")
	fx.addBroker(t, catalogNS, "acme", b.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "auth"}})
	fs := fx.run()
	for _, f := range fs {
		// The broker just created has a catalog fetch pending: not stuck.
		assert.Equal(t, f.Severity, OK, "%+v", f)
	}
	assert.DeepEqual(t, objects(fs), []string{"cluster", "identity", "rbac dev", "rbac catalog-system", "broker catalog-system/acme", "records", "reconcile catalog-reconcile", "trust"})
	id, _ := find(fs, "identity")
	assert.Equal(t, id.Detail, "user alice (groups developers, system:authenticated)")
	bf, _ := find(fs, "broker catalog-system/acme")
	assert.Equal(t, bf.Detail, b.URL()+" answers: 4 services, authenticated (Basic)")
	assert.Assert(t, !Failed(fs))
}

// Each person is judged against the role docs/security.md gives them; what only reconcile
// may do is reconcile's, an INFO line, not a failure of theirs.
func TestRBAC_JudgesEachPersonByTheirDocumentedRole(t *testing.T) {
	user, viewer, admin := install.CatalogRoles()[1].Rules, install.CatalogRoles()[0].Rules, install.CatalogRoles()[2].Rules
	without := func(rules []rbacv1.PolicyRule, resource string) []rbacv1.PolicyRule {
		return slices.DeleteFunc(slices.Clone(rules), func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, resource) })
	}
	for _, tc := range []struct {
		name                  string
		grants                map[string][]rbacv1.PolicyRule
		inUser, inCatalog     Severity
		userDetail, userFix   string
		catalogDetail, broker string
		failed, reconcileInfo bool
	}{
		{name: "a user set up as documented", grants: map[string][]rbacv1.PolicyRule{userNS: user, catalogNS: viewer},
			inUser: OK, userDetail: "you hold kubectl-catalog-user here", inCatalog: OK, catalogDetail: "you hold kubectl-catalog-viewer here",
			broker: "not checked with your rights", reconcileInfo: true},
		{name: "a reader", grants: map[string][]rbacv1.PolicyRule{userNS: viewer, catalogNS: viewer},
			inUser: Warn, userDetail: "you hold kubectl-catalog-viewer here", userFix: "kubectl create rolebinding kubectl-catalog-user-alice",
			inCatalog: OK, broker: "not checked with your rights", reconcileInfo: true},
		{name: "a user without the user role here", grants: map[string][]rbacv1.PolicyRule{catalogNS: viewer},
			inUser: Fail, userDetail: "denied get configmaps", userFix: "kubectl create rolebinding kubectl-catalog-user-alice --clusterrole kubectl-catalog-user --user alice -n dev",
			inCatalog: OK, broker: "not checked with your rights", failed: true, reconcileInfo: true},
		{name: "a user missing one rule of the role", grants: map[string][]rbacv1.PolicyRule{userNS: without(user, "pods"), catalogNS: viewer},
			inUser: Fail, userDetail: "denied get pods, list pods, watch pods", userFix: "kubectl-catalog-user-alice",
			inCatalog: OK, broker: "not checked with your rights", failed: true, reconcileInfo: true},
		{name: "a user without the marketplace", grants: map[string][]rbacv1.PolicyRule{userNS: user},
			inUser: OK, inCatalog: Fail, catalogDetail: "denied get configmaps", failed: true, reconcileInfo: true},
		{name: "an administrator", grants: map[string][]rbacv1.PolicyRule{userNS: user, catalogNS: admin},
			inUser: OK, inCatalog: OK, catalogDetail: "you hold kubectl-catalog-admin here", broker: "answers", reconcileInfo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
			fx := newFixture(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: "auth"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}})
			fx.addBroker(t, catalogNS, "acme", b.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "auth"}})
			fx.grants = tc.grants
			fx.cluster.Core.PrependReactor("get", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if !slices.ContainsFunc(tc.grants[a.GetNamespace()], func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "secrets") }) {
					return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "auth", errors.New("denied"))
				}
				return false, nil, nil
			})
			fs := RBAC(context.Background(), &Config{Namespace: userNS, CatalogNamespace: catalogNS, User: "alice", Core: fx.cluster.Core})
			u, _ := find(fs, "rbac "+userNS)
			assert.Equal(t, u.Severity, tc.inUser, "%+v", u)
			assert.Assert(t, is.Contains(u.Detail, tc.userDetail))
			assert.Assert(t, is.Contains(u.Fix, tc.userFix))
			c, _ := find(fs, "rbac "+catalogNS)
			assert.Equal(t, c.Severity, tc.inCatalog, "%+v", c)
			assert.Assert(t, is.Contains(c.Detail, tc.catalogDetail))
			info, ok := find(fs, "rbac reconcile")
			assert.Equal(t, ok, tc.reconcileInfo, "%+v", fs)
			if ok {
				assert.Equal(t, info.Severity, Info)
				assert.Assert(t, is.Contains(info.Detail, "reconcile (the installed ServiceAccount"))
			}
			assert.Equal(t, Failed(fs), tc.failed, "%+v", fs)
			if tc.broker != "" {
				cfg := fx.config()
				bs := Brokers(context.Background(), cfg)
				bf, _ := find(bs, "broker "+catalogNS+"/acme")
				assert.Assert(t, is.Contains(bf.Detail, tc.broker), "%+v", bf)
				assert.Assert(t, bf.Severity != Fail, "%+v", bf)
			}
		})
	}
}

func TestRun_FindsProblems(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	fx := newFixture(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "wrong"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("nope")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	)
	ctx := context.Background()
	fx.addBroker(t, catalogNS, "down", "http://127.0.0.1:1", nil)
	fx.addBroker(t, userNS, "locked", b.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "wrong"}})
	st := fx.st

	retried := instance(userNS, "retried")
	retried.Status.Retry = &v1alpha1.RetryState{Attempts: 4, LastError: "503 Service Unavailable", NextRetryAt: &metav1.Time{Time: fx.now.Add(time.Minute)}}
	failed := instance(userNS, "rejected")
	failed.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionFailed, Status: metav1.ConditionTrue, Reason: "ProvisionRejected",
		Message: "plan not available", LastTransitionTime: metav1.Now()}}
	refused := instance(userNS, "forged")
	refused.Status.Retry = &v1alpha1.RetryState{Attempts: 1, Reason: "RefusedNotAuthorized", NextRetryAt: &metav1.Time{Time: fx.now.Add(time.Minute)}}
	refused.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRefused, Status: metav1.ConditionTrue, Reason: "RefusedNotAuthorized",
		Message: `refused to get Secret "root": the record's author "alice" may not`, LastTransitionTime: metav1.Now()}}
	for _, inst := range []*v1alpha1.ServiceInstance{retried, failed, refused, instance(userNS, "fresh"), instance(userNS, "gone"), instance("leaving", "db")} {
		_, err := st.Instances().Create(ctx, inst)
		assert.NilError(t, err)
	}
	fx.cluster.SetClock(func() time.Time { return fx.now.Add(-20 * time.Minute) })
	assert.NilError(t, st.Instances().Delete(ctx, userNS, "gone"))
	fx.cluster.SetClock(func() time.Time { return fx.now.Add(-time.Minute) })
	assert.NilError(t, st.Instances().Delete(ctx, "leaving", "db"))

	fx.denied["list configmaps dev"] = true
	fx.denied["create secrets *"] = true

	fs := fx.run()
	for _, tc := range []struct {
		object   string
		severity Severity
		detail   []string
		fix      string
	}{
		{object: "rbac dev", severity: Fail, detail: []string{"list configmaps", "create secrets", "kubectl-catalog-user"},
			fix: "kubectl create rolebinding kubectl-catalog-user-alice --clusterrole kubectl-catalog-user --user alice -n dev"},
		// An administrator: kubectl-catalog-admin needs no create on Secrets.
		{object: "rbac catalog-system", severity: OK, detail: []string{"you hold kubectl-catalog-admin here"}},
		{object: "broker catalog-system/down", severity: Fail, detail: []string{"http://127.0.0.1:1"}, fix: "kubectl catalog sync broker down"},
		{object: "broker dev/locked", severity: Fail, detail: []string{"401"}, fix: "sync broker locked --scope namespace -n dev"},
		{object: "record dev/instance/retried", severity: Warn, detail: []string{"4 failed attempts", "503 Service Unavailable", "next retry at"}, fix: "describe instance retried -n dev"},
		{object: "record dev/instance/rejected", severity: Fail, detail: []string{"failed for good: ProvisionRejected: plan not available"}, fix: "deprovision"},
		{object: "record dev/instance/forged", severity: Fail, detail: []string{`refused: RefusedNotAuthorized: refused to get Secret "root"`}, fix: "nothing is sent to a broker for it"},
		{object: "record dev/instance/gone", severity: Warn, detail: []string{"deleted 20m0s ago"}, fix: "--abandon"},
		{object: "namespace leaving", severity: Warn, detail: []string{"Terminating, held by 1 catalog record that"}, fix: "run kubectl catalog reconcile -n leaving"},
		{object: "reconcile", severity: Warn, detail: []string{"not installed"}, fix: "kubectl catalog reconcile install --image IMAGE"},
	} {
		t.Run(tc.object, func(t *testing.T) {
			f, ok := find(fs, tc.object)
			assert.Assert(t, ok, "%+v", fs)
			assert.Equal(t, f.Severity, tc.severity, f.Detail)
			for _, d := range tc.detail {
				assert.Assert(t, is.Contains(f.Detail, d))
			}
			assert.Assert(t, is.Contains(f.Fix, tc.fix))
		})
	}
	for _, healthy := range []string{"record dev/instance/fresh", "record leaving/instance/db", "records"} {
		_, ok := find(fs, healthy)
		assert.Assert(t, !ok, "%s should not be reported", healthy)
	}
	assert.Assert(t, Failed(fs))
}

func TestRun_UnreachableClusterStopsThere(t *testing.T) {
	fx := newFixture(t)
	fx.cluster.Core.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	fs := fx.run()
	assert.Equal(t, len(fs), 1)
	assert.Equal(t, fs[0].Severity, Fail)
	assert.Equal(t, fs[0].Detail, "cannot reach the API server https://127.0.0.1:6443: connection refused")
	assert.Assert(t, Failed(fs))

	c := fx.config()
	c.Unreachable = func(err error) string { return "explained: " + err.Error() }
	fs, reachable := Cluster(context.Background(), c)
	assert.Assert(t, !reachable)
	assert.Equal(t, fs[0].Detail, "explained: connection refused")
}

func TestKubeconfig(t *testing.T) {
	f := Kubeconfig(`cannot determine the namespace: context "nope" does not exist`)
	assert.Equal(t, f.Object, "kubeconfig")
	assert.Equal(t, f.Severity, Fail)
	assert.Assert(t, Failed([]Finding{f}))
}

func TestRun_WithoutTheTrustPolicyItsFixComesFirst(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	fx := newFixture(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: "auth"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}},
	)
	fx.addBroker(t, catalogNS, "acme", b.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "auth"}})
	fs := fx.run()
	objs := objects(fs)
	assert.Equal(t, objs[2], "trust", "right after the cluster answered: %v", objs)
	assert.Assert(t, strings.HasPrefix(fs[2].Fix, "kubectl catalog init "), fs[2].Fix)
	assert.Equal(t, slices.Index(objs[3:], "trust"), -1, "once: %v", objs)
}

func TestTrust_MissingOrStale_WarnsWithWhatToRun(t *testing.T) {
	for _, tc := range []struct {
		name         string
		objs         []runtime.Object
		wantSeverity Severity
		wantDetail   string
	}{
		{name: "in force", objs: []runtime.Object{trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "t")},
			wantSeverity: OK, wantDetail: "in force"},
		{name: "not installed", wantSeverity: Warn, wantDetail: "is not installed"},
		{name: "token missing", objs: []runtime.Object{trust.Policy(), trust.Binding()},
			wantSeverity: Warn, wantDetail: "token ConfigMap catalog-system/catalog-trust is missing"},
		{name: "stale token", objs: []runtime.Object{trust.Policy(), newer(trust.Binding()), trust.TokenConfigMap(catalogNS, "t")},
			wantSeverity: Warn, wantDetail: "older than the policy or its binding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Trust(context.Background(), newFixture(t, tc.objs...).config())
			assert.Equal(t, len(fs), 1, "%+v", fs)
			f := fs[0]
			assert.Equal(t, f.Object, "trust")
			assert.Equal(t, f.Severity, tc.wantSeverity, "%+v", f)
			assert.Assert(t, is.Contains(f.Detail, tc.wantDetail))
			if tc.wantSeverity != OK {
				assert.Assert(t, is.Contains(f.Fix, "kubectl catalog init"))
			}
		})
	}
}

func newer(b *admissionv1.ValidatingAdmissionPolicyBinding) *admissionv1.ValidatingAdmissionPolicyBinding {
	b.CreationTimestamp = metav1.Now()
	return b
}

// With the trust policy in force, the namespaces holding records written before it are
// listed, each with its count and the command that adopts them.
func TestTrust_InForce_ListsTheNamespacesHoldingUnverifiedRecords(t *testing.T) {
	fx := newFixture(t, trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "t"))
	ctx := store.WithIntent(context.Background())
	for _, in := range []struct{ ns, name, token string }{
		{userNS, "old-1", ""}, {userNS, "old-2", "before"}, {userNS, "new", "t"}, {"team-b", "old", ""}, {"team-c", "new", "t"},
	} {
		_, err := fx.stampedStore(in.token).Instances().Create(ctx, instance(in.ns, in.name))
		assert.NilError(t, err)
	}
	fs := Trust(context.Background(), fx.config())
	assert.DeepEqual(t, objects(fs), []string{"trust", "namespace " + userNS, "namespace team-b"})
	dev, _ := find(fs, "namespace "+userNS)
	assert.Equal(t, dev.Severity, Warn)
	assert.Assert(t, is.Contains(dev.Detail, "2 records written before the trust policy now in force"))
	assert.Assert(t, strings.HasPrefix(dev.Fix, "kubectl catalog adopt -n "+userNS+" "), dev.Fix)
	b, _ := find(fs, "namespace team-b")
	assert.Assert(t, is.Contains(b.Detail, "1 record written before"))
}

// forbidAllNamespaces is a metadata client that may not list across namespaces.
type forbidAllNamespaces struct{ metadata.Interface }

func (m forbidAllNamespaces) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return forbidAllNamespacesGetter{m.Interface.Resource(gvr)}
}

type forbidAllNamespacesGetter struct{ metadata.Getter }

func (g forbidAllNamespacesGetter) Namespace(ns string) metadata.ResourceInterface {
	if ns == "" {
		return forbiddenList{g.Getter.Namespace(ns)}
	}
	return g.Getter.Namespace(ns)
}

type forbiddenList struct{ metadata.ResourceInterface }

func (forbiddenList) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "", errors.New("no"))
}

// A namespace-scoped broker in a namespace being deleted is kept until its instances
// are deprovisioned: doctor says which instances it waits for.
func TestRecords_TerminatingNamespace_SaysTheBrokerWaitsForItsInstances(t *testing.T) {
	fx := newFixture(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
	ctx := context.Background()
	fx.addBroker(t, "leaving", "team", "http://127.0.0.1:1", nil)
	st := fx.st
	inst := instance("leaving", "db")
	inst.Spec.BrokerName, inst.Spec.Scope = "team", v1alpha1.ScopeNamespace
	_, err := st.Instances().Create(ctx, inst)
	assert.NilError(t, err)
	fx.cluster.SetClock(func() time.Time { return fx.now.Add(-20 * time.Minute) })
	assert.NilError(t, st.Brokers().Delete(ctx, "leaving", "team"))
	assert.NilError(t, st.Instances().Delete(ctx, "leaving", "db"))

	fs := Records(ctx, fx.config())

	f, ok := find(fs, "namespace leaving")
	assert.Assert(t, ok, "%+v", fs)
	assert.Equal(t, f.Severity, Warn)
	assert.Assert(t, is.Contains(f.Detail, `held by 2 catalog records`))
	assert.Assert(t, is.Contains(f.Detail, `broker "team" is kept until its instance db is deprovisioned`))
	f, ok = find(fs, "record leaving/broker/team")
	assert.Assert(t, ok, "%+v", fs)
	assert.Assert(t, is.Contains(f.Detail, "deleted 20m0s ago and still waiting for its instances: kept until its instance db is deprovisioned"))
}

// A namespace being deleted for a minute is reported as held by its records, with the
// brokers kept for their instances, before any record is stuck.
func TestRecords_TerminatingNamespace_NamesTheKeptBrokerAtOnce(t *testing.T) {
	fx := newFixture(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
	ctx := context.Background()
	fx.addBroker(t, "leaving", "team", "http://127.0.0.1:1", nil)
	inst := instance("leaving", "db")
	inst.Spec.BrokerName, inst.Spec.Scope = "team", v1alpha1.ScopeNamespace
	_, err := fx.st.Instances().Create(ctx, inst)
	assert.NilError(t, err)
	fx.cluster.SetClock(func() time.Time { return fx.now.Add(-time.Minute) })
	assert.NilError(t, fx.st.Brokers().Delete(ctx, "leaving", "team"))
	assert.NilError(t, fx.st.Instances().Delete(ctx, "leaving", "db"))

	fs := Records(ctx, fx.config())

	assert.DeepEqual(t, objects(fs), []string{"namespace leaving", "records"})
	assert.Assert(t, is.Contains(fs[0].Detail, `broker "team" is kept until its instance db is deprovisioned`))
	assert.Equal(t, fs[1].Detail, "none stuck in all namespaces (2 with pending work)")
}

func TestRecords_ListsTheCurrentNamespaceWhenNotAllowedAll(t *testing.T) {
	fx := newFixture(t)
	c := fx.config()
	c.Records = engine.NewReader(store.New(fx.cluster.Core, forbidAllNamespaces{fx.cluster.Metadata}))
	fs := Records(context.Background(), c)
	assert.DeepEqual(t, fs, []Finding{{Object: "records", Severity: OK, Detail: "none stuck in namespace dev (0 with pending work)"}})
}
