// Package projection projects a binding's credentials Secret into the pod template of a
// workload (Deployment, StatefulSet, DaemonSet, CronJob, Job), following the
// servicebinding.io convention, and takes it out again.
//
// By default the Secret is mounted read-only as files under
// $SERVICE_BINDING_ROOT/<binding> in every container and init container, and
// SERVICE_BINDING_ROOT is set to /bindings where a container does not set it. With
// WorkloadProjection.Env the Secret's keys become environment variables instead (envFrom,
// with an optional prefix).
//
// What a projection added is recorded in an annotation on the workload's own metadata,
// AnnotationKey(binding), not on the pod template: writing it does not restart pods, and
// Remove takes away exactly what was added and nothing the workload had of its own.
//
// Apply, Remove and Projected work on a pod template and annotations and call no API;
// Projector reads and updates workloads with a typed clientset.
package projection

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Canonical kinds of the workloads a Secret can be projected into.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindCronJob     = "CronJob"
	KindJob         = "Job"
)

// kindInfo describes a workload kind: its canonical Kind, its API version and the names
// it is known by on the command line.
type kindInfo struct {
	kind    string
	gvk     schema.GroupVersionKind
	aliases []string // singular, plural, short names; lowercase
}

var kinds = []kindInfo{
	{kind: KindDeployment, gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: KindDeployment},
		aliases: []string{"deployment", "deployments", "deploy"}},
	{kind: KindStatefulSet, gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: KindStatefulSet},
		aliases: []string{"statefulset", "statefulsets", "sts"}},
	{kind: KindDaemonSet, gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: KindDaemonSet},
		aliases: []string{"daemonset", "daemonsets", "ds"}},
	{kind: KindCronJob, gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: KindCronJob},
		aliases: []string{"cronjob", "cronjobs", "cj"}},
	{kind: KindJob, gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: KindJob},
		aliases: []string{"job", "jobs"}},
}

// kindNames is the kinds as ParseWorkload's errors suggest them: those a Secret can be
// projected into (a Job is parsed, to be refused with its own reason, but not suggested).
const kindNames = "deployment, statefulset, daemonset, cronjob"

// lookupKind finds the kind named s: a canonical Kind, or any name ParseWorkload
// accepts, in any case.
func lookupKind(s string) (kindInfo, bool) {
	s = strings.ToLower(s)
	for _, k := range kinds {
		for _, a := range k.aliases {
			if s == a || s == a+"."+k.gvk.Group || s == a+"."+k.gvk.Version+"."+k.gvk.Group {
				return k, true
			}
		}
	}
	return kindInfo{}, false
}

// ParseWorkload parses the value of --to, KIND/NAME, into the workload's canonical Kind
// (one of the Kind constants) and name. KIND is a kind's singular, plural or short name,
// optionally qualified by its API group, as kubectl accepts them: "deployment/web",
// "deploy/web", "deployments.apps/web", "sts/db", "cj/report", "jobs.batch/migrate".
func ParseWorkload(s string) (kind, name string, err error) {
	k, name, ok := strings.Cut(s, "/")
	if !ok || k == "" || name == "" {
		return "", "", fmt.Errorf("--to %q: expected KIND/NAME, e.g. --to deployment/web", s)
	}
	info, ok := lookupKind(k)
	if !ok {
		return "", "", fmt.Errorf("--to %q: kind %q cannot be projected into; use one of %s", s, k, kindNames)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", "", fmt.Errorf("--to %q: %q is not a valid %s name: %s", s, name, strings.ToLower(info.kind), strings.Join(errs, "; "))
	}
	return info.kind, name, nil
}

// ProjectableKinds returns the canonical Kinds a Secret can be projected into: every
// kind but Job, whose pod template cannot change.
func ProjectableKinds() []string {
	var out []string
	for _, k := range kinds {
		if k.kind != KindJob {
			out = append(out, k.kind)
		}
	}
	return out
}

// Kinds returns the canonical Kinds a Secret can be projected into.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k.kind)
	}
	return out
}

// WorkloadResource is the API resource of the workload kind named s, as ParseWorkload
// accepts kinds ("deploy", "statefulsets.apps", "CronJob"), to list workloads of that
// kind; false for a kind a Secret cannot be projected into.
func WorkloadResource(s string) (schema.GroupVersionResource, bool) {
	k, ok := lookupKind(s)
	if !ok || k.kind == KindJob {
		return schema.GroupVersionResource{}, false
	}
	return k.gvk.GroupVersion().WithResource(k.aliases[1]), true
}
