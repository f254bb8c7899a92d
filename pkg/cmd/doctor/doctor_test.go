package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

const (
	catalogNS = storetest.CatalogNamespace
	userNS    = storetest.UserNamespace
)

// fixture is a fake cluster where the user may do everything but what
// denied lists ("verb resource" in a namespace, "*" for any namespace).
type fixture struct {
	cluster *storetest.Cluster
	denied  map[string]bool
	now     time.Time
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	fx := &fixture{cluster: storetest.NewCluster(objs...), denied: map[string]bool{}, now: time.Now()}
	fx.cluster.Core.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		attrs := sar.Spec.ResourceAttributes
		key := attrs.Verb + " " + attrs.Resource
		sar.Status.Allowed = !fx.denied[key+" "+attrs.Namespace] && !fx.denied[key+" *"]
		return true, sar, nil
	})
	fx.cluster.Core.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
			UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"developers", "system:authenticated"}}}}, nil
	})
	return fx
}

func (fx *fixture) options(t *testing.T) *Options {
	return &Options{
		BrokerTimeout: 5 * time.Second, ReconcileNamespace: install.DefaultNamespace,
		Namespace: userNS, CatalogNamespace: catalogNS, Server: "https://127.0.0.1:6443",
		Core: fx.cluster.Core, Store: fx.cluster.Store(), Clients: brokerclient.New(fx.cluster.Core, brokerclient.WithTimeout(5*time.Second)),
		Now:     func() time.Time { return fx.now },
		Streams: cmdutil.NewTestIOStreams(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}),
	}
}

func find(r Report, name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

func (fx *fixture) addBroker(t *testing.T, ns, name, url string, auth *v1alpha1.BrokerAuth) {
	t.Helper()
	scope := v1alpha1.ScopeCluster
	if ns != catalogNS {
		scope = v1alpha1.ScopeNamespace
	}
	_, err := fx.cluster.Store().Brokers().Create(context.Background(), &v1alpha1.Broker{
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

func TestDiagnose_AllWell(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	fx := newFixture(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: "auth"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}},
		installedCronJob(install.DefaultName, 0, &batchv1.CronJobStatus{LastScheduleTime: &metav1.Time{Time: time.Now().Add(-2 * time.Minute)},
			LastSuccessfulTime: &metav1.Time{Time: time.Now().Add(-time.Minute)}}),
		trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "3f1c2b5e-token"),
	)
	fx.addBroker(t, catalogNS, "acme", b.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "auth"}})
	o := fx.options(t)
	r := o.Diagnose(context.Background())
	for _, c := range r.Checks {
		// The broker just created has a catalog fetch pending: not stuck.
		assert.Equal(t, c.Status, OK, "%+v", c)
	}
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
	}
	assert.DeepEqual(t, names, []string{"cluster", "identity", "rbac dev", "rbac catalog-system", "broker catalog-system/acme", "records", "reconcile catalog-reconcile", "trust"})
	id, _ := find(r, "identity")
	assert.Assert(t, is.Contains(id.Detail, "alice"))
	bc, _ := find(r, "broker catalog-system/acme")
	assert.Assert(t, is.Contains(bc.Detail, "authenticated (Basic)"), bc.Detail)
	assert.NilError(t, o.Run(context.Background()))
	out := o.Streams.Out.(*bytes.Buffer).String()
	assert.Assert(t, is.Contains(out, "CHECK"))
	assert.Assert(t, !strings.Contains(out, "To fix:"), out)
}

func TestDiagnose_FindsProblems(t *testing.T) {
	b := broker.NewTestBroker(t, broker.Options{Username: "u", Password: "p"})
	fx := newFixture(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "wrong"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("nope")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	)
	ctx := context.Background()
	fx.addBroker(t, catalogNS, "down", "http://127.0.0.1:1", nil)
	fx.addBroker(t, userNS, "locked", b.URL(), &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "wrong"}})
	st := fx.cluster.Store()

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

	o := fx.options(t)
	r := o.Diagnose(ctx)
	for _, tc := range []struct {
		name   string
		status Status
		detail []string
		fix    string
	}{
		{name: "rbac dev", status: Fail, detail: []string{"list configmaps", "create secrets", "records are ConfigMaps"}, fix: `namespace "dev"`},
		{name: "rbac catalog-system", status: Warn, detail: []string{"denied: create secrets;"}},
		{name: "broker catalog-system/down", status: Fail, detail: []string{"http://127.0.0.1:1"}, fix: "kubectl catalog sync broker down"},
		{name: "broker dev/locked", status: Fail, detail: []string{"401"}, fix: "sync broker locked --scope namespace -n dev"},
		{name: "record dev/instance/retried", status: Warn, detail: []string{"4 failed attempts", "503 Service Unavailable", "next retry at"}, fix: "describe instance retried -n dev"},
		{name: "record dev/instance/rejected", status: Fail, detail: []string{"failed for good: ProvisionRejected: plan not available"}, fix: "deprovision"},
		{name: "record dev/instance/forged", status: Fail, detail: []string{`refused: RefusedNotAuthorized: refused to get Secret "root"`}, fix: "nothing is sent to a broker for it"},
		{name: "record dev/instance/gone", status: Warn, detail: []string{"deleted 20m0s ago"}, fix: "--abandon"},
		{name: "namespace leaving", status: Warn, detail: []string{"Terminating, held by 1 catalog record that"}, fix: "run kubectl catalog reconcile -n leaving"},
		{name: "reconcile", status: Warn, detail: []string{"not installed"}, fix: "kubectl catalog reconcile install --image IMAGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := find(r, tc.name)
			assert.Assert(t, ok, "%+v", r.Checks)
			assert.Equal(t, c.Status, tc.status, c.Detail)
			for _, d := range tc.detail {
				assert.Assert(t, is.Contains(c.Detail, d))
			}
			assert.Assert(t, is.Contains(c.Fix, tc.fix))
		})
	}
	for _, healthy := range []string{"record dev/instance/fresh", "record leaving/instance/db", "records"} {
		_, ok := find(r, healthy)
		assert.Assert(t, !ok, "%s should not be reported", healthy)
	}

	// A failed check: exit 1, with the fixes after the table.
	err := o.Run(ctx)
	assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitError)
	assert.Assert(t, !cmdutil.ShouldPrint(err))
	out := o.Streams.Out.(*bytes.Buffer).String()
	assert.Assert(t, is.Contains(out, "To fix:\n"))
	assert.Assert(t, is.Contains(out, "FAIL     http://127.0.0.1:1: "))
}

// A broker record the engine refuses (written by someone who may not read the Secret it
// names, or pointing out of its namespace) is never called by doctor, whoever runs it:
// its credentials would go to a URL of the record's author's choosing.
func TestDiagnose_ABrokerTheEngineRefusesIsNotCalled(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = w.Write([]byte(`{"services":[]}`))
	}))
	t.Cleanup(srv.Close)
	fx := newFixture(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: userNS, Name: "hidden"}, Data: map[string][]byte{"token": []byte("s3cret")}})
	fx.addBroker(t, userNS, "forged", srv.URL, &v1alpha1.BrokerAuth{Type: v1alpha1.AuthBearer, SecretRef: v1alpha1.SecretReference{Name: "hidden"}})
	o := fx.options(t)
	var checked []string
	o.CheckBroker = func(_ context.Context, b *v1alpha1.Broker) error {
		checked = append(checked, b.Namespace+"/"+b.Name)
		return &catalog.RefusedError{Reason: catalog.ReasonRefusedNotAuthorized,
			Message: `broker "forged": refused to get Secret "hidden": the record's author "alice" may not`}
	}
	r := o.Diagnose(context.Background())
	c, ok := find(r, "broker dev/forged")
	assert.Assert(t, ok, "%+v", r.Checks)
	assert.Equal(t, c.Status, Fail)
	assert.Equal(t, c.Detail, `refused: RefusedNotAuthorized: broker "forged": refused to get Secret "hidden": the record's author "alice" may not`)
	assert.Assert(t, is.Contains(c.Fix, "nothing is sent to this broker"))
	assert.DeepEqual(t, checked, []string{"dev/forged"})
	assert.Equal(t, calls.Load(), int32(0), "the broker was called")
}

func TestDiagnose_UnreachableClusterStopsThere(t *testing.T) {
	fx := newFixture(t)
	fx.cluster.Core.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	r := fx.options(t).Diagnose(context.Background())
	assert.Equal(t, len(r.Checks), 1)
	assert.Equal(t, r.Checks[0].Status, Fail)
	assert.Assert(t, is.Contains(r.Checks[0].Detail, "connection refused"))
	assert.Assert(t, r.Failed())
}

func TestDiagnose_ReconcileCronJob(t *testing.T) {
	now := time.Now()
	ago := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	for _, tc := range []struct {
		name   string
		cj     batchv1.CronJob
		status Status
		detail string
	}{
		{name: "never ran yet", cj: batchv1.CronJob{}, status: OK, detail: "last run never"},
		{name: "suspended", cj: batchv1.CronJob{Spec: batchv1.CronJobSpec{Suspend: ptr.To(true)}}, status: Warn, detail: "suspended"},
		{name: "no success", cj: batchv1.CronJob{Status: batchv1.CronJobStatus{LastScheduleTime: ago(time.Minute)}}, status: Warn, detail: "no run has succeeded"},
		{name: "failing since", cj: batchv1.CronJob{Status: batchv1.CronJobStatus{LastScheduleTime: ago(time.Minute), LastSuccessfulTime: ago(3 * time.Hour)}},
			status: Warn, detail: "have failed"},
		{name: "healthy", cj: batchv1.CronJob{Status: batchv1.CronJobStatus{LastScheduleTime: ago(5 * time.Minute), LastSuccessfulTime: ago(4 * time.Minute)}},
			status: OK, detail: "last success 4m0s ago"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cj.Namespace, tc.cj.Name, tc.cj.Spec.Schedule, tc.cj.Labels = "ops", "rec", "*/5 * * * *", install.Labels()
			fx := newFixture(t, &tc.cj)
			fx.now = now
			o := fx.options(t)
			o.ReconcileNamespace = "ops"
			var r Report
			o.checkReconcileInstalled(context.Background(), &r)
			assert.Equal(t, len(r.Checks), 1, "%+v", r.Checks)
			assert.Equal(t, r.Checks[0].Name, "reconcile rec")
			assert.Equal(t, r.Checks[0].Status, tc.status, r.Checks[0].Detail)
			assert.Assert(t, is.Contains(r.Checks[0].Detail, tc.detail))
		})
	}
}

// installedCronJob is the CronJob of shard i of an installation named name, as
// "reconcile install --shards shards" makes it (shards 0: not sharded), with status.
func installedCronJob(name string, shards int, status *batchv1.CronJobStatus) *batchv1.CronJob {
	return installedCronJobs(name, max(shards, 1), status)[0]
}

// installedCronJobs are the CronJobs of an installation with shards shards.
func installedCronJobs(name string, shards int, status *batchv1.CronJobStatus) []*batchv1.CronJob {
	o := install.Defaults()
	o.Image, o.Name, o.Shards = "example.invalid/kubectl-catalog:test", name, shards
	cjs := install.Build(o).CronJobs
	for _, cj := range cjs {
		if status != nil {
			cj.Status = *status
		}
	}
	return cjs
}

func TestDoctor_ReconcileReportsEveryCronJobAndDeploymentInstalled(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ok := &batchv1.CronJobStatus{LastScheduleTime: &metav1.Time{Time: now.Add(-2 * time.Minute)}, LastSuccessfulTime: &metav1.Time{Time: now.Add(-time.Minute)}}
	shards := installedCronJobs("sharded", 2, ok)
	shards[1].Spec.Suspend = ptr.To(true)
	o := install.Defaults()
	o.Image, o.Serve, o.Replicas, o.Name = "example.invalid/kubectl-catalog:test", true, 2, "served"
	served := install.Build(o).Deployments[0]
	served.Status.ReadyReplicas = 1
	notOurs := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: install.DefaultNamespace, Name: "backup"}}
	fx := newFixture(t, shards[0], shards[1], installedCronJob(install.DefaultName, 0, ok), served, notOurs)
	fx.now = now

	var r Report
	fx.options(t).checkReconcileInstalled(context.Background(), &r)
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
	}
	assert.DeepEqual(t, names, []string{"reconcile catalog-reconcile", "reconcile sharded-0", "reconcile sharded-1", "reconcile served"})
	c, _ := find(r, "reconcile sharded-0")
	assert.Equal(t, c.Status, OK, "%+v", c)
	assert.Assert(t, is.Contains(c.Detail, "CronJob catalog-system/sharded-0"))
	c, _ = find(r, "reconcile sharded-1")
	assert.Equal(t, c.Status, Warn, "%+v", c)
	assert.Assert(t, is.Contains(c.Detail, "suspended"))
	assert.Assert(t, is.Contains(c.Fix, "kubectl patch cronjob sharded-1 -n catalog-system"))
	c, _ = find(r, "reconcile served")
	assert.Equal(t, c.Status, Warn, "%+v", c)
	assert.Assert(t, is.Contains(c.Detail, "Deployment catalog-system/served (reconcile --serve), 1 of 2 replicas ready"))
	assert.Assert(t, is.Contains(c.Fix, "kubectl get pods -n catalog-system -l app.kubernetes.io/instance=served"))

	// --reconcile-name narrows to one installation (every shard of it), or one workload.
	for name, want := range map[string][]string{
		"sharded":   {"reconcile sharded-0", "reconcile sharded-1"},
		"sharded-1": {"reconcile sharded-1"},
		"served":    {"reconcile served"},
	} {
		opts := fx.options(t)
		opts.ReconcileName = name
		var r Report
		opts.checkReconcileInstalled(context.Background(), &r)
		var names []string
		for _, c := range r.Checks {
			names = append(names, c.Name)
		}
		assert.DeepEqual(t, names, want)
	}
}

func TestDoctor_ReconcileNotInstalledSaysWhereItLooked(t *testing.T) {
	notOurs := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: install.DefaultNamespace, Name: "backup"}}
	fx := newFixture(t, installedCronJob("other", 0, nil), notOurs)
	o := fx.options(t)
	o.ReconcileName = "mine"
	var r Report
	o.checkReconcileInstalled(context.Background(), &r)
	assert.Equal(t, len(r.Checks), 1, "%+v", r.Checks)
	assert.Equal(t, r.Checks[0].Name, "reconcile")
	assert.Equal(t, r.Checks[0].Status, Warn)
	assert.Equal(t, r.Checks[0].Detail, "not installed (no CronJob or Deployment of reconcile install named mine in namespace catalog-system)")

	fx = newFixture(t, notOurs)
	r = Report{}
	fx.options(t).checkReconcileInstalled(context.Background(), &r)
	assert.Equal(t, r.Checks[0].Detail, "not installed (no CronJob or Deployment of reconcile install in namespace catalog-system)")
	assert.Assert(t, is.Contains(r.Checks[0].Fix, "reconcile install --image IMAGE"))
}

func TestDoctor_ReconcileCannotListSaysSo(t *testing.T) {
	fx := newFixture(t)
	fx.cluster.Core.PrependReactor("list", "cronjobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("cronjobs"), "", errors.New("no"))
	})
	var r Report
	fx.options(t).checkReconcileInstalled(context.Background(), &r)
	assert.Equal(t, len(r.Checks), 1, "%+v", r.Checks)
	assert.Equal(t, r.Checks[0].Status, Warn)
	assert.Assert(t, is.Contains(r.Checks[0].Detail, "cannot list the CronJobs in namespace catalog-system"))
	assert.Assert(t, is.Contains(r.Checks[0].Fix, "ask an administrator"))
}

func TestPrint_JSONAndYAML(t *testing.T) {
	r := Report{Checks: []Check{{Name: "cluster", Status: OK, Detail: "Kubernetes v1.37.2"}, {Name: "reconcile", Status: Warn, Detail: "not installed", Fix: "install it"}}}
	var out bytes.Buffer
	streams := cmdutil.NewTestIOStreams(strings.NewReader(""), &out, &bytes.Buffer{})
	assert.NilError(t, Print(streams, "json", r))
	var back Report
	assert.NilError(t, json.Unmarshal(out.Bytes(), &back))
	assert.DeepEqual(t, back, r)
	out.Reset()
	assert.NilError(t, Print(streams, "yaml", r))
	assert.Assert(t, is.Contains(out.String(), "status: WARN"))
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		err  string
	}{
		{name: "ok", o: Options{BrokerTimeout: time.Second, ReconcileNamespace: "a", ReconcileName: "b"}},
		{name: "every installation", o: Options{BrokerTimeout: time.Second, ReconcileNamespace: "a"}},
		{name: "timeout", o: Options{ReconcileNamespace: "a", ReconcileName: "b"}, err: "--broker-timeout"},
		{name: "output", o: Options{BrokerTimeout: time.Second, Output: "wide", ReconcileNamespace: "a", ReconcileName: "b"}, err: "--output"},
		{name: "empty namespace", o: Options{BrokerTimeout: time.Second, ReconcileName: "b"}, err: "--reconcile-namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.err == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.err)
			assert.Equal(t, cmdutil.ExitCode(err), cmdutil.ExitUsage)
		})
	}
}

func TestDiagnose_TrustPolicyMissingOrStale_WarnsWithWhatToRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		objs       []runtime.Object
		wantStatus Status
		wantDetail string
	}{
		{name: "in force", objs: []runtime.Object{trust.Policy(), trust.Binding(), trust.TokenConfigMap(catalogNS, "t")},
			wantStatus: OK, wantDetail: "in force"},
		{name: "not installed", wantStatus: Warn, wantDetail: "is not installed"},
		{name: "token missing", objs: []runtime.Object{trust.Policy(), trust.Binding()},
			wantStatus: Warn, wantDetail: "token ConfigMap catalog-system/catalog-trust is missing"},
		{name: "stale token", objs: []runtime.Object{trust.Policy(), newer(trust.Binding()), trust.TokenConfigMap(catalogNS, "t")},
			wantStatus: Warn, wantDetail: "older than the policy or its binding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.objs...)
			r := fx.options(t).Diagnose(context.Background())
			c, ok := find(r, "trust")
			assert.Assert(t, ok, "%+v", r.Checks)
			assert.Equal(t, c.Status, tc.wantStatus, "%+v", c)
			assert.Assert(t, is.Contains(c.Detail, tc.wantDetail))
			if tc.wantStatus != OK {
				assert.Assert(t, is.Contains(c.Fix, "kubectl catalog reconcile install"))
			}
		})
	}
}

func newer(b *admissionv1.ValidatingAdmissionPolicyBinding) *admissionv1.ValidatingAdmissionPolicyBinding {
	b.CreationTimestamp = metav1.Now()
	return b
}

// A namespace-scoped broker in a namespace being deleted is kept until its instances
// are deprovisioned: doctor says which instances it waits for.
func TestDiagnose_TerminatingNamespace_SaysTheBrokerWaitsForItsInstances(t *testing.T) {
	fx := newFixture(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
	ctx := context.Background()
	fx.addBroker(t, "leaving", "team", "http://127.0.0.1:1", nil)
	st := fx.cluster.Store()
	inst := instance("leaving", "db")
	inst.Spec.BrokerName, inst.Spec.Scope = "team", v1alpha1.ScopeNamespace
	_, err := st.Instances().Create(ctx, inst)
	assert.NilError(t, err)
	fx.cluster.SetClock(func() time.Time { return fx.now.Add(-20 * time.Minute) })
	assert.NilError(t, st.Brokers().Delete(ctx, "leaving", "team"))
	assert.NilError(t, st.Instances().Delete(ctx, "leaving", "db"))

	r := fx.options(t).Diagnose(ctx)

	c, ok := find(r, "namespace leaving")
	assert.Assert(t, ok, "%+v", r.Checks)
	assert.Equal(t, c.Status, Warn)
	assert.Assert(t, is.Contains(c.Detail, `held by 2 catalog records`))
	assert.Assert(t, is.Contains(c.Detail, `broker "team" is kept until its instance db is deprovisioned`))
	c, ok = find(r, "record leaving/broker/team")
	assert.Assert(t, ok, "%+v", r.Checks)
	assert.Assert(t, is.Contains(c.Detail, "deleted 20m0s ago and still waiting for its instances: kept until its instance db is deprovisioned"))
}

func shardLease(group, id string, renew time.Time, secs int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: reconcile.LeaseName(group, id), Namespace: catalogNS, Labels: map[string]string{reconcile.LabelShardGroup: group}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id), RenewTime: &metav1.MicroTime{Time: renew}, LeaseDurationSeconds: ptr.To(secs)},
	}
}

func TestDoctor_ShardGroupsShowTheirMembers(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	o := install.Defaults()
	o.Image, o.Serve, o.Replicas, o.Name = "example.invalid/kubectl-catalog:test", true, 3, "busy"
	busy := install.Build(o).Deployments[0]
	fx := newFixture(t,
		shardLease("healthy", "a", now.Add(-2*time.Second), 15), shardLease("healthy", "b", now.Add(-4*time.Second), 15),
		shardLease("busy", "a", now.Add(-time.Second), 15), shardLease("busy", "gone", now.Add(-time.Minute), 15),
		busy,
	)
	fx.now = now
	r := fx.options(t).Diagnose(context.Background())

	c, ok := find(r, "shard group healthy")
	assert.Assert(t, ok, "%+v", r.Checks)
	assert.Equal(t, c.Status, OK, "%+v", c)
	assert.Assert(t, is.Contains(c.Detail, "2 live members"))
	assert.Assert(t, is.Contains(c.Detail, "healthy-a (holder a, renewed 2s ago, live)"))

	c, ok = find(r, "shard group busy")
	assert.Assert(t, ok, "%+v", r.Checks)
	assert.Equal(t, c.Status, Warn, "%+v", c)
	assert.Assert(t, is.Contains(c.Detail, "busy-gone (holder gone, renewed 1m0s ago, expired)"))
	assert.Assert(t, is.Contains(c.Detail, "asks for 3 replicas"))
	assert.Assert(t, is.Contains(c.Fix, "expired Leases"))
	assert.Assert(t, is.Contains(c.Fix, "only 1 live member"))
	assert.Assert(t, !r.Failed() || !strings.HasPrefix(c.Name, "shard"), "warnings only")
}

func TestDoctor_NoShardGroupNoLine(t *testing.T) {
	fx := newFixture(t)
	r := fx.options(t).Diagnose(context.Background())
	for _, c := range r.Checks {
		assert.Assert(t, !strings.HasPrefix(c.Name, "shard group"), "%+v", c)
	}
}

func TestDiagnose_BrokenKubeconfig_IsTheFailingCheck(t *testing.T) {
	o := Options{ConfigErr: errors.New(`cannot determine the namespace: context "nope" does not exist`)}
	r := o.Diagnose(context.Background())
	assert.Equal(t, len(r.Checks), 1)
	assert.Equal(t, r.Checks[0].Name, "kubeconfig")
	assert.Equal(t, r.Checks[0].Status, Fail)
	assert.Assert(t, strings.Contains(r.Checks[0].Detail, `context "nope" does not exist`))
	assert.Assert(t, r.Failed())
}
