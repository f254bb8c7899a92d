package graph

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Where a Pod template references a Secret.
const (
	// ViaVolume: a secret volume, or a projected volume's secret source.
	ViaVolume = "volume"
	// ViaEnvFrom: a container's envFrom secretRef.
	ViaEnvFrom = "envFrom"
	// ViaEnv: a container's env valueFrom secretKeyRef.
	ViaEnv = "env"
)

// Workload is an object with a Pod template and the Secrets that template references.
type Workload struct {
	Kind, Namespace, Name string
	// Secrets maps each Secret's name to where the template references it (ViaVolume,
	// ViaEnvFrom, ViaEnv), sorted.
	Secrets map[string][]string
}

// SecretRefs returns the Secrets spec references, each with the places it is referenced
// from (sorted): secret volumes and the secret sources of projected volumes; envFrom and
// env valueFrom secretKeyRef of init, regular and ephemeral containers. Optional
// references count: a workload that may use a Secret is shown as its consumer.
func SecretRefs(spec *corev1.PodSpec) map[string][]string {
	refs := map[string][]string{}
	add := func(name, via string) {
		if name != "" && !slices.Contains(refs[name], via) {
			refs[name] = append(refs[name], via)
			slices.Sort(refs[name])
		}
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			add(v.Secret.SecretName, ViaVolume)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name, ViaVolume)
				}
			}
		}
	}
	env := func(envFrom []corev1.EnvFromSource, env []corev1.EnvVar) {
		for _, ef := range envFrom {
			if ef.SecretRef != nil {
				add(ef.SecretRef.Name, ViaEnvFrom)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name, ViaEnv)
			}
		}
	}
	for _, c := range spec.InitContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range spec.Containers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	return refs
}

// WorkloadOf returns the workload obj is (a Deployment, StatefulSet, DaemonSet, Job,
// CronJob or Pod) with the Secrets its Pod template references. It returns false for
// other objects, for a Job a CronJob controls and for a Pod a ReplicaSet, StatefulSet,
// DaemonSet or Job controls: their controller's template says the same, and the graph
// shows the controller (a ReplicaSet's Pods by its Deployment's template).
func WorkloadOf(obj runtime.Object) (Workload, bool) {
	var m metav1.ObjectMeta
	var spec *corev1.PodSpec
	var kind string
	switch o := obj.(type) {
	case *appsv1.Deployment:
		kind, m, spec = "Deployment", o.ObjectMeta, &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		kind, m, spec = "StatefulSet", o.ObjectMeta, &o.Spec.Template.Spec
	case *appsv1.DaemonSet:
		kind, m, spec = "DaemonSet", o.ObjectMeta, &o.Spec.Template.Spec
	case *batchv1.CronJob:
		kind, m, spec = "CronJob", o.ObjectMeta, &o.Spec.JobTemplate.Spec.Template.Spec
	case *batchv1.Job:
		if controlledBy(o.OwnerReferences, "CronJob") {
			return Workload{}, false
		}
		kind, m, spec = "Job", o.ObjectMeta, &o.Spec.Template.Spec
	case *corev1.Pod:
		if controlledBy(o.OwnerReferences, "ReplicaSet", "StatefulSet", "DaemonSet", "Job") {
			return Workload{}, false
		}
		kind, m, spec = "Pod", o.ObjectMeta, &o.Spec
	default:
		return Workload{}, false
	}
	return Workload{Kind: kind, Namespace: m.Namespace, Name: m.Name, Secrets: SecretRefs(spec)}, true
}

func controlledBy(refs []metav1.OwnerReference, kinds ...string) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller && slices.Contains(kinds, r.Kind) {
			return true
		}
	}
	return false
}
