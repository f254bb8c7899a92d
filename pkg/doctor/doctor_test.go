package doctor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
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
		Core: fx.cluster.Core, Records: records.NewReader(fx.st), Brokers: fx.eng,
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

// tarpitProber is a broker that answers no catalog: each probe waits until its time
// is up, unless every one of want probes is under way at once (they were made in
// parallel), which it counts.
type tarpitProber struct {
	want    int
	started atomic.Int32
	all     chan struct{}
}

func (p *tarpitProber) ProbeBroker(ctx context.Context, b *v1alpha1.Broker) engine.BrokerProbe {
	if int(p.started.Add(1)) == p.want {
		close(p.all)
	}
	select {
	case <-p.all:
		return engine.BrokerProbe{Services: 1}
	case <-ctx.Done():
		return engine.BrokerProbe{Err: ctx.Err()}
	}
}

func TestBrokers_TarpitsAreCheckedAtOnce_WithinTheBudget(t *testing.T) {
	fx := newFixture(t)
	const tarpits = 6
	for i := range tarpits {
		_, err := fx.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
			ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "tarpit-" + string(rune('a'+i))},
			Spec:       v1alpha1.BrokerSpec{URL: "https://tarpit.example", Scope: v1alpha1.ScopeNamespace},
		})
		assert.NilError(t, err)
	}
	c := fx.config()
	p := &tarpitProber{want: tarpits, all: make(chan struct{})}
	c.Brokers = p

	fs := Brokers(context.Background(), c)

	assert.Equal(t, len(fs), tarpits)
	for _, f := range fs {
		assert.Equal(t, f.Severity, OK, "%+v: the brokers were checked one after another", f)
	}
}

func TestBrokers_NotCheckedWithinTheBudget_SaysSo(t *testing.T) {
	fx := newFixture(t)
	for i := range brokerChecksAtOnce + 1 {
		_, err := fx.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
			ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "tarpit-" + string(rune('a'+i))},
			Spec:       v1alpha1.BrokerSpec{URL: "https://tarpit.example", Scope: v1alpha1.ScopeNamespace},
		})
		assert.NilError(t, err)
	}
	c := fx.config()
	c.BrokerTimeout = time.Millisecond
	c.Brokers = &tarpitProber{want: -1, all: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the budget is gone before any check starts

	fs := Brokers(ctx, c)

	for _, f := range fs {
		assert.Equal(t, f.Severity, Warn, "%+v", f)
		assert.Assert(t, is.Contains(f.Detail, "ran out of time"))
		assert.Assert(t, is.Contains(f.Fix, "kubectl catalog sync broker tarpit-"))
	}
}

// refusingProber refuses every broker, noting which it was asked about.
type refusingProber struct {
	err     error
	checked []string
}

func (p *refusingProber) ProbeBroker(_ context.Context, b *v1alpha1.Broker) engine.BrokerProbe {
	p.checked = append(p.checked, b.Namespace+"/"+b.Name)
	return engine.BrokerProbe{NotCalled: p.err}
}

// A broker record the engine refuses (written by someone who may not read the Secret it
// names, or pointing out of its namespace) is reported as not called, with what its owner
// does about it.
func TestBroker_TheEngineRefuses(t *testing.T) {
	b := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "forged"},
		Spec: v1alpha1.BrokerSpec{URL: "https://evil.example", Scope: v1alpha1.ScopeNamespace}}
	for _, tc := range []struct {
		name     string
		err      error
		severity Severity
		detail   string
		fix      string
	}{
		{name: "not authorized", err: &engine.RefusedError{Reason: engine.ReasonRefusedNotAuthorized,
			Message: `broker "forged": refused to get Secret "hidden": the record's author "alice" may not`},
			severity: Fail, detail: `refused: RefusedNotAuthorized: broker "forged": refused to get Secret "hidden": the record's author "alice" may not`,
			fix: "nothing is sent to this broker: its owner fixes what it names or registers it again with kubectl catalog, or it is deleted (kubectl catalog describe broker forged -n dev; docs/security.md)"},
		{name: "author unverified", err: &engine.RefusedError{Reason: engine.ReasonRefusedAuthorUnverified, Message: "no author\n  known"},
			severity: Warn, detail: "refused: RefusedAuthorUnverified: no author known",
			fix: `not called, since its author cannot be verified: install the trust policy ("kubectl catalog init"), or check it yourself with "kubectl catalog sync broker forged -n dev", which makes you its author: its credentials Secret then goes to its URL on your authority (it shows both and asks first)`},
		{name: "cannot check", err: errors.New("the API server is gone"), severity: Fail, detail: "not called: the API server is gone",
			fix: "nothing is sent to this broker: its owner fixes what it names or registers it again with kubectl catalog, or it is deleted (kubectl catalog describe broker forged -n dev; docs/security.md)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &refusingProber{err: tc.err}
			c := &Config{CatalogNamespace: catalogNS, BrokerTimeout: time.Second, Brokers: p}
			f := Broker(context.Background(), c, b)
			assert.DeepEqual(t, f, Finding{Object: "broker dev/forged", Severity: tc.severity, Detail: tc.detail, Fix: tc.fix})
			assert.DeepEqual(t, p.checked, []string{"dev/forged"})
		})
	}
}

// doctor never calls a broker the engine would not call in its author's name: a broker
// record someone else wrote, naming credentials, is not called, whoever runs doctor.
func TestBrokers_ARecordTheEngineRefusesIsNotCalled(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = w.Write([]byte(`{"services":[]}`))
	}))
	t.Cleanup(srv.Close)
	fx := newFixture(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "hidden"}, Data: map[string][]byte{"token": []byte("s3cret")}})
	_, err := fx.st.Brokers().Create(context.Background(), &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "forged"},
		Spec: v1alpha1.BrokerSpec{URL: srv.URL, Scope: v1alpha1.ScopeNamespace,
			Auth: &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "hidden"}}},
	})
	assert.NilError(t, err)
	fs := Brokers(context.Background(), fx.config())
	assert.Equal(t, len(fs), 1, "%+v", fs)
	assert.Equal(t, fs[0].Object, "broker dev/forged")
	assert.Equal(t, fs[0].Severity, Warn, "%+v", fs[0])
	assert.Assert(t, is.Contains(fs[0].Detail, "refused: RefusedAuthorUnverified: "))
	assert.Assert(t, is.Contains(fs[0].Fix, "not called, since its author cannot be verified"))
	assert.Equal(t, calls.Load(), int32(0), "the broker was called")
}

// A broker ConfigMap that does not hold a readable record is a finding of its own; the
// other brokers of its namespace are checked all the same.
func TestBrokers_AnUnreadableRecordIsAFindingOfItsOwn(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{})
	fx := newFixture(t)
	fx.addBroker(t, userNS, "good", b.URL(), nil)
	fx.addBroker(t, userNS, "bad", b.URL(), nil)
	ctx := context.Background()
	cms, err := fx.cluster.Core.CoreV1().ConfigMaps(userNS).List(ctx, metav1.ListOptions{})
	assert.NilError(t, err)
	for _, cm := range cms.Items {
		if strings.HasSuffix(cm.Name, "bad") {
			for k := range cm.Data {
				cm.Data[k] = "{not json"
			}
			for k := range cm.BinaryData {
				cm.BinaryData[k] = []byte("{not json")
			}
			_, err := fx.cluster.Core.CoreV1().ConfigMaps(userNS).Update(ctx, &cm, metav1.UpdateOptions{})
			assert.NilError(t, err)
		}
	}

	fs := Brokers(ctx, fx.config())

	assert.DeepEqual(t, objects(fs), []string{"record dev/broker/bad", "broker dev/good"})
	assert.Equal(t, fs[0].Severity, Warn)
	assert.Assert(t, is.Contains(fs[0].Detail, "cannot read it: "))
	assert.Assert(t, is.Contains(fs[0].Detail, "does not hold a readable broker"))
	assert.Assert(t, is.Contains(fs[0].Fix, "fix or delete the ConfigMap"))
	assert.Equal(t, fs[1].Severity, OK, "%+v", fs[1])
}

func TestBrokers_ARecordOfANewerFormatIsAFindingOfItsOwn(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{})
	fx := newFixture(t)
	fx.addBroker(t, userNS, "good", b.URL(), nil)
	_, err := fx.cluster.Core.CoreV1().ConfigMaps(userNS).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: store.ConfigMapName(v1alpha1.KindBroker, "newer"),
			Labels: map[string]string{store.LabelKind: v1alpha1.KindBroker}, Annotations: map[string]string{store.AnnotationFormat: "99"}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)

	fs := Brokers(context.Background(), fx.config())

	assert.DeepEqual(t, objects(fs), []string{"record dev/broker/newer", "broker dev/good"})
	assert.Assert(t, is.Contains(fs[0].Detail, "cannot read it: "))
	assert.Equal(t, fs[1].Severity, OK, "%+v", fs[1])
}

func TestBrokers_NoneRegistered(t *testing.T) {
	fs := Brokers(context.Background(), newFixture(t).config())
	assert.DeepEqual(t, fs, []Finding{{Object: "brokers", Severity: Warn, Detail: "no broker registered in namespace dev or catalog-system",
		Fix: "register one: kubectl catalog register NAME --url URL"}})
}
