package graph

import (
	corev1 "k8s.io/api/core/v1"
)

// SecretRefs returns the Secrets a Pod spec references, each with the locations it is
// referenced from: "volume" (a secret volume or a projected volume's secret source),
// "envFrom" (envFrom secretRef) and "env" (env valueFrom secretKeyRef), in init,
// regular and ephemeral containers.
func SecretRefs(spec *corev1.PodSpec) map[string][]string {
	refs := map[string][]string{}
	add := func(name, via string) {
		if name == "" {
			return
		}
		for _, v := range refs[name] {
			if v == via {
				return
			}
		}
		refs[name] = append(refs[name], via)
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			add(v.Secret.SecretName, "volume")
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name, "volume")
				}
			}
		}
	}
	scan := func(envFrom []corev1.EnvFromSource, env []corev1.EnvVar) {
		for _, ef := range envFrom {
			if ef.SecretRef != nil {
				add(ef.SecretRef.Name, "envFrom")
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name, "env")
			}
		}
	}
	for _, c := range spec.InitContainers {
		scan(c.EnvFrom, c.Env)
	}
	for _, c := range spec.Containers {
		scan(c.EnvFrom, c.Env)
	}
	for _, c := range spec.EphemeralContainers {
		scan(c.EnvFrom, c.Env)
	}
	return refs
}
