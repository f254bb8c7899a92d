package sim

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Workloads (-sim.upshare, -sim.files). Each namespace holds Deployment web and
// StatefulSet api, objects of the simulated API server (storetest.Cluster.ServeWorkloads:
// resourceVersions, conflicts, dry runs). The engines project bindings into them with the
// real projector (pkg/projection through kube.WorkloadProjector), and its dry runs preview
// against them, through the process's view of the API server: each read and write of a
// workload is a point where the process pauses and may be killed, and where the seed
// may make it fail, as for ConfigMaps and Secrets. The namespace controller deletes them
// with their namespace.
//
// What a workload holds is read from the workload itself: each projection annotation
// the projector wrote, which must match its pod template (an envFrom of the Secret, with
// the annotation's prefix, in every container; or a volume of the Secret mounted in every
// container), and no Secret in the template that no annotation names. The checks of
// upshare_test.go and files_test.go then judge those projections.
//
// To see the checks fail, make projection.Remove leave an environment projection's
// envFrom in place: -sim.upshare seed 3 reports "Deployment dev/web holds Secret
// env-own, which no projection annotation names".

// workloadNames are the workloads of each namespace, by kind.
var workloadNames = map[string]string{projection.KindDeployment: "web", projection.KindStatefulSet: "api"}

var (
	deployments  = schema.GroupResource{Group: "apps", Resource: "deployments"}
	statefulSets = schema.GroupResource{Group: "apps", Resource: "statefulsets"}
)

// workloadsOn reports whether the world projects bindings into workloads.
func workloadsOn() bool { return *upShare || *fileProjections }

// projector is the engine's projector of process p over the API server cl.
func (p *proc) projector(cl *storetest.Cluster) kube.WorkloadProjector {
	return kube.WorkloadProjector{P: &projection.Projector{Client: simClient{Interface: cl.Core, p: p}}}
}

// dryRunProjector is the projector of the dry-run administrator: every workload write it
// makes must be a dry run (dryrun_test.go).
func (p *proc) dryRunProjector(cl *storetest.Cluster) engine.Projector {
	return kube.WorkloadProjector{P: &projection.Projector{Client: dryRunClient{simClient: simClient{Interface: cl.Core, p: p}}}}
}

// putWorkloads makes cl serve workloads and creates each namespace's.
func putWorkloads(cl *storetest.Cluster, namespaces ...string) {
	if !workloadsOn() {
		return
	}
	cl.ServeWorkloads()
	ctx := context.Background()
	tmpl := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: app, Image: "registry.invalid/" + app}}},
		}
	}
	for _, ns := range namespaces {
		name := workloadNames[projection.KindDeployment]
		if _, err := cl.Core.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{Template: tmpl(name)},
		}, metav1.CreateOptions{}); err != nil {
			panic(err)
		}
		name = workloadNames[projection.KindStatefulSet]
		if _, err := cl.Core.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.StatefulSetSpec{Template: tmpl(name)},
		}, metav1.CreateOptions{}); err != nil {
			panic(err)
		}
	}
}

// heldRecord is what the projector's annotation on a workload says it added.
type heldRecord struct {
	Binding   string `json:"binding"`
	Secret    string `json:"secret"`
	Mode      string `json:"mode"`
	EnvPrefix string `json:"envPrefix"`
	Volume    string `json:"volume"`
}

// heldWorkloads are the projections the workloads of the world's cluster hold, read from
// the workloads; a projection annotation its pod template does not carry out, or a Secret
// in a template that no annotation names, fails the seed.
func (w *world) heldWorkloads() workloads {
	out := workloads{}
	if !workloadsOn() {
		return out
	}
	ctx := context.Background()
	apps := w.cluster.Core.AppsV1()
	ds, err := apps.Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for i := range ds.Items {
		d := &ds.Items[i]
		w.readWorkload(out, projection.KindDeployment, d.Namespace, d.Name, d.Annotations, &d.Spec.Template)
	}
	ss, err := apps.StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for i := range ss.Items {
		s := &ss.Items[i]
		w.readWorkload(out, projection.KindStatefulSet, s.Namespace, s.Name, s.Annotations, &s.Spec.Template)
	}
	return out
}

func (w *world) readWorkload(out workloads, kind, ns, name string, annotations map[string]string, tmpl *corev1.PodTemplateSpec) {
	named := map[string]bool{} // the Secrets the annotations name
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if !strings.HasPrefix(k, projection.AnnotationPrefix) {
			continue
		}
		var r heldRecord
		if err := json.Unmarshal([]byte(annotations[k]), &r); err != nil || r.Binding == "" {
			w.fail("%s %s/%s carries the projection annotation %s, which cannot be read: %q", kind, ns, name, k, annotations[k])
			continue
		}
		p := v1alpha1.WorkloadProjection{Kind: kind, Name: name, Env: r.Mode == "env", EnvPrefix: r.EnvPrefix}
		named[r.Secret] = true
		for _, c := range tmpl.Spec.Containers {
			if !holds(c, tmpl.Spec.Volumes, r) {
				w.fail("%s %s/%s records a projection of binding %s (Secret %s, %s) that its container %s does not hold", kind, ns, name, r.Binding, r.Secret, r.Mode, c.Name)
			}
		}
		out[projectionKey(ns, r.Binding, p)] = heldProjection{namespace: ns, binding: r.Binding, secret: r.Secret, w: p}
	}
	for _, s := range templateSecrets(tmpl) {
		if !named[s] {
			w.fail("%s %s/%s holds Secret %s, which no projection annotation names", kind, ns, name, s)
		}
	}
}

// holds reports whether container c holds the projection r: an envFrom of its Secret
// with its prefix, or a mount of a volume of its Secret.
func holds(c corev1.Container, volumes []corev1.Volume, r heldRecord) bool {
	if r.Mode == "env" {
		return slices.ContainsFunc(c.EnvFrom, func(e corev1.EnvFromSource) bool {
			return e.SecretRef != nil && e.SecretRef.Name == r.Secret && e.Prefix == r.EnvPrefix
		})
	}
	i := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == r.Volume })
	if i < 0 || volumes[i].Secret == nil || volumes[i].Secret.SecretName != r.Secret {
		return false
	}
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == r.Volume })
}

// templateSecrets are the Secrets a pod template's containers and volumes use.
func templateSecrets(tmpl *corev1.PodTemplateSpec) []string {
	var out []string
	for _, c := range tmpl.Spec.Containers {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				out = append(out, e.SecretRef.Name)
			}
		}
	}
	for _, v := range tmpl.Spec.Volumes {
		if v.Secret != nil {
			out = append(out, v.Secret.SecretName)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// deleteWorkloads is the namespace controller deleting the workloads of namespace ns; it
// returns how many were left.
func (w *world) deleteWorkloads(ns string) int {
	if !workloadsOn() {
		return 0
	}
	ctx := context.Background()
	apps := w.cluster.Core.AppsV1()
	left := 0
	ds, err := apps.Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, d := range ds.Items {
		left++
		if err := apps.Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
			panic(err)
		}
	}
	ss, err := apps.StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, s := range ss.Items {
		left++
		if err := apps.StatefulSets(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			panic(err)
		}
	}
	if left > 0 {
		w.wrote = true
		w.logf("kube           delete the workloads of namespace %s", ns)
	}
	return left
}

// noteWorkloadWrite counts the workload writes that landed (not dry runs): a world that
// projects into workloads must reach them (TestSim_ModelWorlds).
func (w *world) noteWorkloadWrite(err error, dryRun []string) {
	if err == nil && len(dryRun) == 0 {
		w.workloadWrites++
	}
}

// The process's view of the workloads (simClient): a read or write is a request.

func (c simClient) AppsV1() appsv1client.AppsV1Interface {
	return simAppsV1{AppsV1Interface: c.Interface.AppsV1(), p: c.p}
}

type simAppsV1 struct {
	appsv1client.AppsV1Interface
	p *proc
	// dry: every write must be a dry run (the dry-run administrator's).
	dry bool
}

func (c simAppsV1) Deployments(ns string) appsv1client.DeploymentInterface {
	return simDeployments{DeploymentInterface: c.AppsV1Interface.Deployments(ns), p: c.p, ns: ns, dry: c.dry}
}

func (c simAppsV1) StatefulSets(ns string) appsv1client.StatefulSetInterface {
	return simStatefulSets{StatefulSetInterface: c.AppsV1Interface.StatefulSets(ns), p: c.p, ns: ns, dry: c.dry}
}

type simDeployments struct {
	appsv1client.DeploymentInterface
	p   *proc
	ns  string
	dry bool
}

func (c simDeployments) Get(ctx context.Context, name string, o metav1.GetOptions) (*appsv1.Deployment, error) {
	if err := c.p.request(ctx, "get", deployments, c.ns, name); err != nil {
		return nil, err
	}
	return c.DeploymentInterface.Get(ctx, name, o)
}

func (c simDeployments) Update(ctx context.Context, d *appsv1.Deployment, o metav1.UpdateOptions) (*appsv1.Deployment, error) {
	if c.dry {
		c.p.wroteInDryRun("update", "deployments", c.ns, d.Name, o.DryRun)
	}
	if err := c.p.request(ctx, "update", deployments, c.ns, d.Name); err != nil {
		return nil, err
	}
	out, err := c.DeploymentInterface.Update(ctx, d, o)
	c.p.w.noteWorkloadWrite(err, o.DryRun)
	return landed(c.p, out, err, "update", deployments, c.ns, d.Name)
}

type simStatefulSets struct {
	appsv1client.StatefulSetInterface
	p   *proc
	ns  string
	dry bool
}

func (c simStatefulSets) Get(ctx context.Context, name string, o metav1.GetOptions) (*appsv1.StatefulSet, error) {
	if err := c.p.request(ctx, "get", statefulSets, c.ns, name); err != nil {
		return nil, err
	}
	return c.StatefulSetInterface.Get(ctx, name, o)
}

func (c simStatefulSets) Update(ctx context.Context, s *appsv1.StatefulSet, o metav1.UpdateOptions) (*appsv1.StatefulSet, error) {
	if c.dry {
		c.p.wroteInDryRun("update", "statefulsets", c.ns, s.Name, o.DryRun)
	}
	if err := c.p.request(ctx, "update", statefulSets, c.ns, s.Name); err != nil {
		return nil, err
	}
	out, err := c.StatefulSetInterface.Update(ctx, s, o)
	c.p.w.noteWorkloadWrite(err, o.DryRun)
	return landed(c.p, out, err, "update", statefulSets, c.ns, s.Name)
}

func (c dryRunClient) AppsV1() appsv1client.AppsV1Interface {
	return simAppsV1{AppsV1Interface: c.simClient.Interface.AppsV1(), p: c.p, dry: true}
}
