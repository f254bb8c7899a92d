package projection_test

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
)

const ns = "dev"

var objectMeta = metav1.ObjectMeta{Name: "web", Namespace: ns, Annotations: map[string]string{"team": "a"}}

// workloadCase is a kind of workload: how to make one and read its pod template back.
type workloadCase struct {
	kind     string
	resource string
	object   func() runtime.Object
	get      func(t *testing.T, c *fake.Clientset) (metav1.Object, *corev1.PodTemplateSpec)
}

func workloadCases() []workloadCase {
	ctx := context.Background()
	return []workloadCase{
		{kind: "Deployment", resource: "deployments",
			object: func() runtime.Object {
				return &appsv1.Deployment{ObjectMeta: *objectMeta.DeepCopy(), Spec: appsv1.DeploymentSpec{Template: *podTemplate()}}
			},
			get: func(t *testing.T, c *fake.Clientset) (metav1.Object, *corev1.PodTemplateSpec) {
				o, err := c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
				assert.NilError(t, err)
				return o, &o.Spec.Template
			}},
		{kind: "StatefulSet", resource: "statefulsets",
			object: func() runtime.Object {
				return &appsv1.StatefulSet{ObjectMeta: *objectMeta.DeepCopy(), Spec: appsv1.StatefulSetSpec{Template: *podTemplate()}}
			},
			get: func(t *testing.T, c *fake.Clientset) (metav1.Object, *corev1.PodTemplateSpec) {
				o, err := c.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				assert.NilError(t, err)
				return o, &o.Spec.Template
			}},
		{kind: "DaemonSet", resource: "daemonsets",
			object: func() runtime.Object {
				return &appsv1.DaemonSet{ObjectMeta: *objectMeta.DeepCopy(), Spec: appsv1.DaemonSetSpec{Template: *podTemplate()}}
			},
			get: func(t *testing.T, c *fake.Clientset) (metav1.Object, *corev1.PodTemplateSpec) {
				o, err := c.AppsV1().DaemonSets(ns).Get(ctx, "web", metav1.GetOptions{})
				assert.NilError(t, err)
				return o, &o.Spec.Template
			}},
		{kind: "CronJob", resource: "cronjobs",
			object: func() runtime.Object {
				return &batchv1.CronJob{ObjectMeta: *objectMeta.DeepCopy(), Spec: batchv1.CronJobSpec{
					Schedule:    "@hourly",
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: *podTemplate()}},
				}}
			},
			get: func(t *testing.T, c *fake.Clientset) (metav1.Object, *corev1.PodTemplateSpec) {
				o, err := c.BatchV1().CronJobs(ns).Get(ctx, "web", metav1.GetOptions{})
				assert.NilError(t, err)
				return o, &o.Spec.JobTemplate.Spec.Template
			}},
	}
}

func countActions(c *fake.Clientset, verb string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb {
			n++
		}
	}
	return n
}

func TestProjector_ProjectAndUnprojectEachKind(t *testing.T) {
	ctx := context.Background()
	for _, wc := range workloadCases() {
		t.Run(wc.kind, func(t *testing.T) {
			c := fake.NewClientset(wc.object())
			p := &projection.Projector{Client: c}
			w := v1alpha1.WorkloadProjection{Kind: wc.kind, Name: "web"}

			change, err := p.Project(ctx, ns, "db", "db-creds", w, projection.DryRunNone)
			assert.NilError(t, err)
			assert.Check(t, change.Changed)
			meta, tmpl := wc.get(t, c)
			assert.DeepEqual(t, projection.Projected(meta.GetAnnotations()), []string{"db"})
			assert.Equal(t, meta.GetAnnotations()["team"], "a")
			assert.Check(t, is.Len(tmpl.Annotations, 0), "the pod template's annotations are left alone")
			assert.DeepEqual(t, tmpl.Spec.Containers[0].VolumeMounts[1], corev1.VolumeMount{Name: "binding-db", MountPath: "/bindings/db", ReadOnly: true})

			// Before and After are typed and print with apiVersion and kind.
			assert.Check(t, change.Before.GetObjectKind().GroupVersionKind().Kind == wc.kind)
			out, err := yaml.Marshal(change.After)
			assert.NilError(t, err)
			assert.Check(t, is.Contains(string(out), "kind: "+wc.kind+"\n"))
			assert.Check(t, is.Contains(string(out), "apiVersion: "))
			assert.Check(t, !strings.Contains(mustYAML(t, change.Before), "binding-db"))

			c.ClearActions()
			change, err = p.Project(ctx, ns, "db", "db-creds", w, projection.DryRunNone)
			assert.NilError(t, err)
			assert.Check(t, !change.Changed)
			assert.Equal(t, countActions(c, "update"), 0, "projecting again writes nothing")

			change, err = p.Unproject(ctx, ns, "db", w, projection.DryRunNone)
			assert.NilError(t, err)
			assert.Check(t, change.Changed)
			meta, tmpl = wc.get(t, c)
			assert.DeepEqual(t, meta.GetAnnotations(), map[string]string{"team": "a"})
			assert.DeepEqual(t, tmpl, podTemplate())

			c.ClearActions()
			change, err = p.Unproject(ctx, ns, "db", w, projection.DryRunNone)
			assert.NilError(t, err)
			assert.Check(t, !change.Changed)
			assert.Equal(t, countActions(c, "update"), 0)
		})
	}
}

func mustYAML(t *testing.T, o runtime.Object) string {
	t.Helper()
	out, err := yaml.Marshal(o)
	assert.NilError(t, err)
	return string(out)
}

func TestProjector_DryRun(t *testing.T) {
	ctx := context.Background()
	for _, wc := range workloadCases() {
		w := v1alpha1.WorkloadProjection{Kind: wc.kind, Name: "web"}
		t.Run(wc.kind+"/client", func(t *testing.T) {
			c := fake.NewClientset(wc.object())
			p := &projection.Projector{Client: c}
			change, err := p.Project(ctx, ns, "db", "db-creds", w, projection.DryRunClient)
			assert.NilError(t, err)
			assert.Check(t, change.Changed)
			assert.Check(t, is.Contains(mustYAML(t, change.After), "binding-db"))
			assert.Check(t, is.Contains(mustYAML(t, change.After), "kind: "+wc.kind+"\n"))
			assert.Equal(t, countActions(c, "update"), 0)
			meta, _ := wc.get(t, c)
			assert.Check(t, is.Len(projection.Projected(meta.GetAnnotations()), 0))
		})
		t.Run(wc.kind+"/server", func(t *testing.T) {
			c := fake.NewClientset(wc.object())
			var dryRuns [][]string
			// The API server validates a dry-run update and persists nothing.
			c.PrependReactor("update", wc.resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
				u := a.(k8stesting.UpdateActionImpl)
				dryRuns = append(dryRuns, u.UpdateOptions.DryRun)
				return true, u.GetObject(), nil
			})
			p := &projection.Projector{Client: c}
			change, err := p.Project(ctx, ns, "db", "db-creds", w, projection.DryRunServer)
			assert.NilError(t, err)
			assert.Check(t, change.Changed)
			assert.DeepEqual(t, dryRuns, [][]string{{metav1.DryRunAll}})
			assert.Check(t, is.Contains(mustYAML(t, change.After), "binding-db"))
			assert.Check(t, is.Contains(mustYAML(t, change.After), "kind: "+wc.kind+"\n"))
			meta, _ := wc.get(t, c)
			assert.Check(t, is.Len(projection.Projected(meta.GetAnnotations()), 0))
		})
	}
}

func TestProjector_NoDryRunSendsNoDryRun(t *testing.T) {
	c := fake.NewClientset(workloadCases()[0].object())
	var dryRuns [][]string
	c.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		dryRuns = append(dryRuns, a.(k8stesting.UpdateActionImpl).UpdateOptions.DryRun)
		return false, nil, nil
	})
	p := &projection.Projector{Client: c}
	_, err := p.Project(context.Background(), ns, "db", "db-creds", v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web"}, projection.DryRunNone)
	assert.NilError(t, err)
	assert.DeepEqual(t, dryRuns, [][]string{nil})
}

func TestProjector_UpdatesTheVersionReadAndRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	dep := workloadCases()[0].object().(*appsv1.Deployment)
	dep.ResourceVersion = "7"
	c := fake.NewClientset(dep)
	var versions []string
	c.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateActionImpl).GetObject().(*appsv1.Deployment)
		versions = append(versions, obj.ResourceVersion)
		if len(versions) == 1 { // someone else wrote it meanwhile
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", nil)
		}
		return false, nil, nil
	})
	p := &projection.Projector{Client: c}
	change, err := p.Project(ctx, ns, "db", "db-creds", v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web"}, projection.DryRunNone)
	assert.NilError(t, err)
	assert.Check(t, change.Changed)
	assert.DeepEqual(t, versions, []string{"7", "7"})
	assert.Equal(t, countActions(c, "get"), 2, "the workload is read again after a conflict")
}

func TestProjector_MissingWorkload(t *testing.T) {
	ctx := context.Background()
	for _, wc := range workloadCases() {
		t.Run(wc.kind, func(t *testing.T) {
			p := &projection.Projector{Client: fake.NewClientset()}
			w := v1alpha1.WorkloadProjection{Kind: wc.kind, Name: "web"}
			_, err := p.Project(ctx, ns, "db", "db-creds", w, projection.DryRunNone)
			assert.Check(t, is.Error(err, strings.ToLower(wc.kind)+` "web" not found in namespace "dev": create it first or check --to`))

			change, err := p.Unproject(ctx, ns, "db", w, projection.DryRunNone)
			assert.NilError(t, err)
			assert.DeepEqual(t, change, &projection.Change{})
		})
	}
}

func TestProjector_Job(t *testing.T) {
	ctx := context.Background()
	job := &batchv1.Job{ObjectMeta: *objectMeta.DeepCopy(), Spec: batchv1.JobSpec{Template: *podTemplate()}}
	c := fake.NewClientset(job)
	p := &projection.Projector{Client: c}
	w := v1alpha1.WorkloadProjection{Kind: "Job", Name: "web"}

	_, err := p.Project(ctx, ns, "db", "db-creds", w, projection.DryRunNone)
	assert.Check(t, is.Error(err, `job "web" in namespace "dev": a Job's pod template cannot be changed once it is created, `+
		`so binding "db" cannot be projected into it: project into a CronJob, or recreate the Job with the Secret "db-creds" mounted`))

	change, err := p.Unproject(ctx, ns, "db", w, projection.DryRunNone)
	assert.NilError(t, err)
	assert.Check(t, !change.Changed)
	assert.Equal(t, countActions(c, "update"), 0)
}

func TestProjector_Errors(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(workloadCases()[0].object())
	p := &projection.Projector{Client: c}

	_, err := p.Project(ctx, ns, "db", "db-creds", v1alpha1.WorkloadProjection{Kind: "Pod", Name: "web"}, projection.DryRunNone)
	assert.Check(t, is.Error(err, `kind "Pod" cannot be projected into; use one of Deployment, StatefulSet, DaemonSet, CronJob, Job`))
	_, err = p.Unproject(ctx, ns, "db", v1alpha1.WorkloadProjection{Kind: "Deployment"}, projection.DryRunNone)
	assert.Check(t, is.Error(err, `the deployment to project into has no name`))

	c.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", nil)
	})
	_, err = p.Project(ctx, ns, "db", "db-creds", v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web"}, projection.DryRunNone)
	assert.Check(t, is.ErrorContains(err, `read deployment "web" in namespace "dev": deployments.apps "web" is forbidden`))
	assert.Check(t, apierrors.IsForbidden(err))
}

func TestProjector_TemplateErrorNamesTheWorkload(t *testing.T) {
	dep := workloadCases()[0].object().(*appsv1.Deployment)
	dep.Spec.Template.Spec.Volumes = append(dep.Spec.Template.Spec.Volumes, corev1.Volume{Name: "binding-db"})
	c := fake.NewClientset(dep)
	p := &projection.Projector{Client: c}
	_, err := p.Project(context.Background(), ns, "db", "db-creds", v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web"}, projection.DryRunNone)
	assert.Check(t, is.Error(err, `deployment "web" in namespace "dev": the pod template already has a volume named "binding-db", which kubectl-catalog did not add: rename it`))
	assert.Equal(t, countActions(c, "update"), 0)
}
