package graph

import (
	"testing"

	"gotest.tools/v3/assert"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func envFrom(secret string) corev1.EnvFromSource {
	return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}
}

func secretEnv(secret string) corev1.EnvVar {
	return corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "k",
	}}}
}

func secretVolume(secret string) corev1.Volume {
	return corev1.Volume{Name: secret, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

func TestSecretRefs_EachPodTemplateLocation(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want map[string][]string
	}{
		{name: "secret volume", spec: corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("a")}},
			want: map[string][]string{"a": {ViaVolume}}},
		{name: "projected volume", spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}},
			}},
		}}}}, want: map[string][]string{"a": {ViaVolume}, "b": {ViaVolume}}},
		{name: "envFrom of a container", spec: corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{
			envFrom("a"), {ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
		}}}}, want: map[string][]string{"a": {ViaEnvFrom}}},
		{name: "env secretKeyRef of a container", spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{
			{Name: "PLAIN", Value: "v"}, secretEnv("a"),
			{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		}}}}, want: map[string][]string{"a": {ViaEnv}}},
		{name: "init container", spec: corev1.PodSpec{InitContainers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{envFrom("a")}, Env: []corev1.EnvVar{secretEnv("b")}}}},
			want: map[string][]string{"a": {ViaEnvFrom}, "b": {ViaEnv}}},
		{name: "ephemeral container", spec: corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			EnvFrom: []corev1.EnvFromSource{envFrom("a")}, Env: []corev1.EnvVar{secretEnv("b")},
		}}}}, want: map[string][]string{"a": {ViaEnvFrom}, "b": {ViaEnv}}},
		{name: "one Secret three ways, in several containers, sorted once each", spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{secretVolume("a")},
			Containers: []corev1.Container{{Env: []corev1.EnvVar{secretEnv("a")}}, {EnvFrom: []corev1.EnvFromSource{envFrom("a")}, Env: []corev1.EnvVar{secretEnv("a")}}},
		}, want: map[string][]string{"a": {ViaEnv, ViaEnvFrom, ViaVolume}}},
		{name: "nothing, and empty names ignored", spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, secretVolume("")},
			Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{envFrom("")}}},
		}, want: map[string][]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, SecretRefs(&tc.spec), tc.want)
		})
	}
}

func TestWorkloadOf_EachKind(t *testing.T) {
	spec := corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("s")}}
	tmpl := corev1.PodTemplateSpec{Spec: spec}
	om := func(name string, owners ...metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: owners}
	}
	controller := func(kind string) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, Name: "owner", Controller: ptr.To(true)}
	}
	for _, tc := range []struct {
		name     string
		obj      runtime.Object
		wantKind string // "": not a workload of its own
	}{
		{"Deployment", &appsv1.Deployment{ObjectMeta: om("w"), Spec: appsv1.DeploymentSpec{Template: tmpl}}, "Deployment"},
		{"StatefulSet", &appsv1.StatefulSet{ObjectMeta: om("w"), Spec: appsv1.StatefulSetSpec{Template: tmpl}}, "StatefulSet"},
		{"DaemonSet", &appsv1.DaemonSet{ObjectMeta: om("w"), Spec: appsv1.DaemonSetSpec{Template: tmpl}}, "DaemonSet"},
		{"Job", &batchv1.Job{ObjectMeta: om("w"), Spec: batchv1.JobSpec{Template: tmpl}}, "Job"},
		{"CronJob", &batchv1.CronJob{ObjectMeta: om("w"), Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}, "CronJob"},
		{"bare Pod", &corev1.Pod{ObjectMeta: om("w"), Spec: spec}, "Pod"},
		{"Pod with an owner that is not its controller", &corev1.Pod{ObjectMeta: om("w", metav1.OwnerReference{Kind: "ReplicaSet", Name: "rs"}), Spec: spec}, "Pod"},
		{"Pod of an unscanned controller", &corev1.Pod{ObjectMeta: om("w", controller("Widget")), Spec: spec}, "Pod"},
		{"Job of a CronJob", &batchv1.Job{ObjectMeta: om("w", controller("CronJob")), Spec: batchv1.JobSpec{Template: tmpl}}, ""},
		{"Pod of a ReplicaSet", &corev1.Pod{ObjectMeta: om("w", controller("ReplicaSet")), Spec: spec}, ""},
		{"Pod of a StatefulSet", &corev1.Pod{ObjectMeta: om("w", controller("StatefulSet")), Spec: spec}, ""},
		{"Pod of a DaemonSet", &corev1.Pod{ObjectMeta: om("w", controller("DaemonSet")), Spec: spec}, ""},
		{"Pod of a Job", &corev1.Pod{ObjectMeta: om("w", controller("Job")), Spec: spec}, ""},
		{"ReplicaSet", &appsv1.ReplicaSet{ObjectMeta: om("w"), Spec: appsv1.ReplicaSetSpec{Template: tmpl}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := WorkloadOf(tc.obj)
			if tc.wantKind == "" {
				assert.Assert(t, !ok, "%+v", w)
				return
			}
			assert.Assert(t, ok)
			assert.DeepEqual(t, w, Workload{Kind: tc.wantKind, Namespace: "ns", Name: "w", Secrets: map[string][]string{"s": {ViaVolume}}})
		})
	}
}
