package doctor

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
)

func shardLease(group, id string, renew time.Time, secs int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: reconcile.LeaseName(group, id), Namespace: catalogNS, Labels: map[string]string{reconcile.LabelShardGroup: group}},
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
