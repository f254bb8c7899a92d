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
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

func shardLease(group, id string, renew time.Time, secs int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: shard.LeaseName(group, id), Namespace: catalogNS, Labels: map[string]string{shard.LabelShardGroup: group}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id), RenewTime: &metav1.MicroTime{Time: renew}, LeaseDurationSeconds: ptr.To(secs)},
	}
}

func TestShardGroups_ShowTheirMembers(t *testing.T) {
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
	fs := ShardGroups(context.Background(), fx.config())
	assert.DeepEqual(t, objects(fs), []string{"shard group busy", "shard group healthy"})

	f, _ := find(fs, "shard group healthy")
	assert.Equal(t, f.Severity, OK, "%+v", f)
	assert.Assert(t, is.Contains(f.Detail, "2 live members"))
	assert.Assert(t, is.Contains(f.Detail, "healthy-a (holder a, renewed 2s ago, live)"))

	f, _ = find(fs, "shard group busy")
	assert.Equal(t, f.Severity, Warn, "%+v", f)
	assert.Assert(t, is.Contains(f.Detail, "busy-gone (holder gone, renewed 1m0s ago, expired)"))
	assert.Assert(t, is.Contains(f.Detail, "asks for 3 replicas"))
	assert.Assert(t, is.Contains(f.Fix, "expired Leases"))
	assert.Assert(t, is.Contains(f.Fix, "only 1 live member"))
	assert.Assert(t, !Failed(fs), "warnings only")
}

func TestShardGroups_NoneNoFinding(t *testing.T) {
	assert.Equal(t, len(ShardGroups(context.Background(), newFixture(t).config())), 0)
}

func TestCronJob(t *testing.T) {
	now := time.Now()
	ago := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	for _, tc := range []struct {
		name     string
		cj       batchv1.CronJob
		severity Severity
		detail   string
	}{
		{name: "never ran yet", cj: batchv1.CronJob{}, severity: OK, detail: "last run never"},
		{name: "suspended", cj: batchv1.CronJob{Spec: batchv1.CronJobSpec{Suspend: ptr.To(true)}}, severity: Warn, detail: "suspended"},
		{name: "no success", cj: batchv1.CronJob{Status: batchv1.CronJobStatus{LastScheduleTime: ago(time.Minute)}}, severity: Warn, detail: "no run has succeeded"},
		{name: "failing since", cj: batchv1.CronJob{Status: batchv1.CronJobStatus{LastScheduleTime: ago(time.Minute), LastSuccessfulTime: ago(3 * time.Hour)}},
			severity: Warn, detail: "have failed"},
		{name: "healthy", cj: batchv1.CronJob{Status: batchv1.CronJobStatus{LastScheduleTime: ago(5 * time.Minute), LastSuccessfulTime: ago(4 * time.Minute)}},
			severity: OK, detail: "last success 4m0s ago"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cj.Namespace, tc.cj.Name, tc.cj.Spec.Schedule, tc.cj.Labels = "ops", "rec", "*/5 * * * *", install.Labels()
			fx := newFixture(t, &tc.cj)
			fx.now = now
			c := fx.config()
			c.ReconcileNamespace = "ops"
			fs := Reconcile(context.Background(), c)
			assert.Equal(t, len(fs), 1, "%+v", fs)
			assert.Equal(t, fs[0].Object, "reconcile rec")
			assert.Equal(t, fs[0].Severity, tc.severity, fs[0].Detail)
			assert.Assert(t, is.Contains(fs[0].Detail, tc.detail))
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

func TestReconcile_ReportsEveryCronJobAndDeploymentInstalled(t *testing.T) {
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

	fs := Reconcile(context.Background(), fx.config())
	assert.DeepEqual(t, objects(fs), []string{"reconcile catalog-reconcile", "reconcile sharded-0", "reconcile sharded-1", "reconcile served"})
	f, _ := find(fs, "reconcile sharded-0")
	assert.Equal(t, f.Severity, OK, "%+v", f)
	assert.Assert(t, is.Contains(f.Detail, "CronJob catalog-system/sharded-0"))
	f, _ = find(fs, "reconcile sharded-1")
	assert.Equal(t, f.Severity, Warn, "%+v", f)
	assert.Assert(t, is.Contains(f.Detail, "suspended"))
	assert.Assert(t, is.Contains(f.Fix, "kubectl patch cronjob sharded-1 -n catalog-system"))
	f, _ = find(fs, "reconcile served")
	assert.Equal(t, f.Severity, Warn, "%+v", f)
	assert.Assert(t, is.Contains(f.Detail, "Deployment catalog-system/served (reconcile --serve), 1 of 2 replicas ready"))
	assert.Assert(t, is.Contains(f.Fix, "kubectl get pods -n catalog-system -l app.kubernetes.io/instance=served"))

	// ReconcileName narrows to one installation (every shard of it), or one workload.
	for name, want := range map[string][]string{
		"sharded":   {"reconcile sharded-0", "reconcile sharded-1"},
		"sharded-1": {"reconcile sharded-1"},
		"served":    {"reconcile served"},
	} {
		c := fx.config()
		c.ReconcileName = name
		assert.DeepEqual(t, objects(Reconcile(context.Background(), c)), want)
	}
}

func TestDeployment_ScaledToZero(t *testing.T) {
	o := install.Defaults()
	o.Image, o.Serve, o.Replicas, o.Name = "example.invalid/kubectl-catalog:test", true, 1, "served"
	d := install.Build(o).Deployments[0]
	d.Spec.Replicas = ptr.To(int32(0))
	f := Deployment(d)
	assert.Equal(t, f.Severity, Warn)
	assert.Equal(t, f.Detail, "scaled to zero: Deployment catalog-system/served (reconcile --serve), 0 of 0 replicas ready")
	assert.Assert(t, is.Contains(f.Fix, "kubectl scale deployment served -n catalog-system --replicas 1"))
}

func TestReconcile_NotInstalledSaysWhereItLooked(t *testing.T) {
	notOurs := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: install.DefaultNamespace, Name: "backup"}}
	fx := newFixture(t, installedCronJob("other", 0, nil), notOurs)
	c := fx.config()
	c.ReconcileName = "mine"
	fs := Reconcile(context.Background(), c)
	assert.Equal(t, len(fs), 1, "%+v", fs)
	assert.Equal(t, fs[0].Object, "reconcile")
	assert.Equal(t, fs[0].Severity, Warn)
	assert.Equal(t, fs[0].Detail, "not installed (no CronJob or Deployment of reconcile install named mine in namespace catalog-system)")

	fx = newFixture(t, notOurs)
	fs = Reconcile(context.Background(), fx.config())
	assert.Equal(t, fs[0].Detail, "not installed (no CronJob or Deployment of reconcile install in namespace catalog-system)")
	assert.Assert(t, is.Contains(fs[0].Fix, "reconcile install --image IMAGE"))
}

func TestReconcile_CannotListSaysSo(t *testing.T) {
	fx := newFixture(t)
	fx.cluster.Core.PrependReactor("list", "cronjobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("cronjobs"), "", errors.New("no"))
	})
	fs := Reconcile(context.Background(), fx.config())
	assert.Equal(t, len(fs), 1, "%+v", fs)
	assert.Equal(t, fs[0].Severity, Warn)
	assert.Assert(t, is.Contains(fs[0].Detail, "cannot list the CronJobs in namespace catalog-system"))
	assert.Assert(t, is.Contains(fs[0].Fix, "ask an administrator"))
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
	c.Records = records.NewReader(store.New(fx.cluster.Core, forbidAllNamespaces{fx.cluster.Metadata}))
	fs := Records(context.Background(), c)
	assert.DeepEqual(t, fs, []Finding{{Object: "records", Severity: OK, Detail: "none stuck in namespace dev (0 with pending work)"}})
}

// A record reconcile does not read for the size of its labels and annotations is a
// finding naming the ConfigMap and how to trim it, not a record silently left out.
func TestRecords_AnOversizedRecordIsAFinding(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	annotations := map[string]string{"junk": strings.Repeat("x", store.MaxRecordMetadataBytes+1)}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: store.ConfigMapName(v1alpha1.KindServiceInstance, "big"),
		Labels: map[string]string{store.LabelKind: v1alpha1.KindServiceInstance}, Annotations: annotations}}
	_, err := fx.cluster.Core.CoreV1().ConfigMaps("dev").Create(ctx, cm, metav1.CreateOptions{})
	assert.NilError(t, err)

	fs := Records(ctx, fx.config())

	f, ok := find(fs, "record dev/instance/big")
	assert.Assert(t, ok, "%+v", fs)
	assert.Equal(t, f.Severity, Warn)
	assert.Assert(t, is.Contains(f.Detail, "over the 64 KiB the catalog reads"))
	assert.Assert(t, is.Contains(f.Fix, "kubectl get configmap "+cm.Name+" -n dev -o yaml"))
	_, ok = find(fs, "records")
	assert.Assert(t, !ok, "an oversized record counts as stuck: %+v", fs)
}
