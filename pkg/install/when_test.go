package install

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestWhenReconcileRuns_SaysWhenTheInstalledReconcileTakesACallUp(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 21, 45, 0, time.UTC)
	labels := map[string]string{LabelManagedBy: "kubectl-catalog", LabelComponent: "reconcile"}
	cronJob := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "catalog-system", Name: DefaultName, Labels: labels},
		Spec:   batchv1.CronJobSpec{Schedule: "*/5 * * * *"},
		Status: batchv1.CronJobStatus{LastScheduleTime: &metav1.Time{Time: now.Add(-100 * time.Second)}}}
	serve := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "catalog-system", Name: DefaultName, Labels: labels},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}
	for _, tc := range []struct {
		name      string
		objs      []runtime.Object
		forbidden bool
		want      string
	}{
		{name: "a CronJob", objs: []runtime.Object{cronJob},
			want: `the installed reconcile (CronJob catalog-system/catalog-reconcile) takes it up at its next run, on schedule "*/5 * * * *", next at 12:25 UTC (in 3m15s); it last ran 1m40s ago`},
		{name: "a Deployment of --serve", objs: []runtime.Object{serve},
			want: "reconcile --serve (Deployment catalog-system/catalog-reconcile, 1 of 1 replicas ready) takes it up within seconds"},
		{name: "workloads the user may not read", forbidden: true,
			want: "to see when the installed reconcile runs: kubectl get cronjobs,deployments -n catalog-system -l app.kubernetes.io/component=reconcile (or ask an administrator)"},
		{name: "none installed", want: "no reconcile is installed in namespace catalog-system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := fake.NewClientset(tc.objs...)
			if tc.forbidden {
				core.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: a.GetResource().Resource}, "", errors.New("denied"))
				})
			}
			got := WhenReconcileRuns(context.Background(), core, now, "catalog-system", DefaultNamespace)
			assert.Assert(t, is.Contains(got, tc.want))
		})
	}
}
