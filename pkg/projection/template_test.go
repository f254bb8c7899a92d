package projection_test

import (
	"maps"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
)

const annoDB = "catalog.kubectl-catalog.io/binding.db"

// podTemplate is a pod template with an init container "migrate" and a container "app",
// changed by the options.
func podTemplate(opts ...func(*corev1.PodSpec)) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "migrate", Image: "migrate"}},
		Containers: []corev1.Container{{
			Name:         "app",
			Image:        "app",
			Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}},
		}},
		Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	for _, o := range opts {
		o(&t.Spec)
	}
	return t
}

func files() v1alpha1.WorkloadProjection {
	return v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web"}
}

func env(prefix string) v1alpha1.WorkloadProjection {
	return v1alpha1.WorkloadProjection{Kind: "Deployment", Name: "web", Env: true, EnvPrefix: prefix}
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

func rootEnv(v string) corev1.EnvVar { return corev1.EnvVar{Name: "SERVICE_BINDING_ROOT", Value: v} }

func secretEnvFrom(prefix, secret string) corev1.EnvFromSource {
	return corev1.EnvFromSource{Prefix: prefix, SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name       string
		tmpl       *corev1.PodTemplateSpec
		p          v1alpha1.WorkloadProjection
		want       *corev1.PodTemplateSpec
		wantRecord string
		wantErr    string
	}{
		{
			name: "files are mounted under a new SERVICE_BINDING_ROOT in every container",
			tmpl: podTemplate(),
			p:    files(),
			want: podTemplate(func(s *corev1.PodSpec) {
				s.Volumes = append(s.Volumes, secretVolume("binding-db", "db-creds"))
				s.InitContainers[0].Env = []corev1.EnvVar{rootEnv("/bindings")}
				s.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "binding-db", MountPath: "/bindings/db", ReadOnly: true}}
				s.Containers[0].Env = append(s.Containers[0].Env, rootEnv("/bindings"))
				s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "binding-db", MountPath: "/bindings/db", ReadOnly: true})
			}),
			wantRecord: `{"binding":"db","secret":"db-creds","mode":"files","volume":"binding-db","containers":[` +
				`{"name":"migrate","mountPath":"/bindings/db","bindingRootAdded":true},` +
				`{"name":"app","mountPath":"/bindings/db","bindingRootAdded":true}]}`,
		},
		{
			name: "a container's own SERVICE_BINDING_ROOT is used and kept",
			tmpl: podTemplate(func(s *corev1.PodSpec) {
				s.Containers[0].Env = append(s.Containers[0].Env, rootEnv("/var/run/bindings/"))
			}),
			p: files(),
			want: podTemplate(func(s *corev1.PodSpec) {
				s.Volumes = append(s.Volumes, secretVolume("binding-db", "db-creds"))
				s.InitContainers[0].Env = []corev1.EnvVar{rootEnv("/bindings")}
				s.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "binding-db", MountPath: "/bindings/db", ReadOnly: true}}
				s.Containers[0].Env = append(s.Containers[0].Env, rootEnv("/var/run/bindings/"))
				s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "binding-db", MountPath: "/var/run/bindings/db", ReadOnly: true})
			}),
			wantRecord: `{"binding":"db","secret":"db-creds","mode":"files","volume":"binding-db","containers":[` +
				`{"name":"migrate","mountPath":"/bindings/db","bindingRootAdded":true},` +
				`{"name":"app","mountPath":"/var/run/bindings/db"}]}`,
		},
		{
			name: "env mode adds an envFrom to every container",
			tmpl: podTemplate(),
			p:    env("DB_"),
			want: podTemplate(func(s *corev1.PodSpec) {
				s.InitContainers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("DB_", "db-creds")}
				s.Containers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("DB_", "db-creds")}
			}),
			wantRecord: `{"binding":"db","secret":"db-creds","mode":"env","envPrefix":"DB_","containers":[` +
				`{"name":"migrate","envFrom":true},{"name":"app","envFrom":true}]}`,
		},
		{
			name: "env mode leaves a container's own identical envFrom alone",
			tmpl: podTemplate(func(s *corev1.PodSpec) {
				s.Containers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("", "db-creds")}
			}),
			p: env(""),
			want: podTemplate(func(s *corev1.PodSpec) {
				s.InitContainers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("", "db-creds")}
				s.Containers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("", "db-creds")}
			}),
			wantRecord: `{"binding":"db","secret":"db-creds","mode":"env","containers":[{"name":"migrate","envFrom":true},{"name":"app"}]}`,
		},
		{
			name: "a SERVICE_BINDING_ROOT from valueFrom cannot be resolved",
			tmpl: podTemplate(func(s *corev1.PodSpec) {
				s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "SERVICE_BINDING_ROOT", ValueFrom: &corev1.EnvVarSource{
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "root"},
				}})
			}),
			p:       files(),
			wantErr: `container "app" sets SERVICE_BINDING_ROOT with valueFrom, which cannot be resolved to know where to mount the binding: set it to an absolute path, e.g. /bindings, or remove it`,
		},
		{
			name: "a relative SERVICE_BINDING_ROOT",
			tmpl: podTemplate(func(s *corev1.PodSpec) {
				s.InitContainers[0].Env = []corev1.EnvVar{rootEnv("bindings")}
			}),
			p:       files(),
			wantErr: `container "migrate" sets SERVICE_BINDING_ROOT to "bindings", which is not an absolute path`,
		},
		{
			name: "a mount at the same path is a collision",
			tmpl: podTemplate(func(s *corev1.PodSpec) {
				s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "cache", MountPath: "/bindings/db/"})
			}),
			p: files(),
			wantErr: `container "app" already mounts the volume "cache" at "/bindings/db", where binding "db" is to be mounted: ` +
				`move that mount, or set SERVICE_BINDING_ROOT in the container to another directory`,
		},
		{
			name: "a volume of the same name is a collision",
			tmpl: podTemplate(func(s *corev1.PodSpec) {
				s.Volumes = append(s.Volumes, secretVolume("binding-db", "other"))
			}),
			p:       files(),
			wantErr: `the pod template already has a volume named "binding-db", which kubectl-catalog did not add: rename it`,
		},
		{
			name: "a mount of a volume of the same name is a collision",
			tmpl: podTemplate(func(s *corev1.PodSpec) {
				s.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "binding-db", MountPath: "/x"}}
			}),
			p:       files(),
			wantErr: `container "migrate" already mounts a volume named "binding-db", which kubectl-catalog did not add: rename it`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := tc.tmpl.DeepCopy()
			annotations := map[string]string{"deployment.kubernetes.io/revision": "3"}
			changed, got, err := projection.Apply(tmpl, annotations, "db", "db-creds", tc.p)
			assert.DeepEqual(t, annotations, map[string]string{"deployment.kubernetes.io/revision": "3"})
			if tc.wantErr != "" {
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				assert.Check(t, !changed)
				assert.DeepEqual(t, tmpl, tc.tmpl) // untouched
				return
			}
			assert.NilError(t, err)
			assert.Check(t, changed)
			assert.DeepEqual(t, tmpl, tc.want)
			assert.DeepEqual(t, got, map[string]string{"deployment.kubernetes.io/revision": "3", annoDB: tc.wantRecord})
			assert.DeepEqual(t, projection.Projected(got), []string{"db"})

			t.Run("applying it again changes nothing", func(t *testing.T) {
				again := tmpl.DeepCopy()
				changed, got2, err := projection.Apply(again, got, "db", "db-creds", tc.p)
				assert.NilError(t, err)
				assert.Check(t, !changed)
				assert.DeepEqual(t, again, tmpl)
				assert.DeepEqual(t, got2, got)
			})
			t.Run("removing it restores the template", func(t *testing.T) {
				removed := tmpl.DeepCopy()
				changed, got2, err := projection.Remove(removed, got, "db")
				assert.NilError(t, err)
				assert.Check(t, changed)
				assert.DeepEqual(t, removed, tc.tmpl)
				assert.DeepEqual(t, got2, annotations)
			})
		})
	}
}

func TestApply_AgainAfterChanges(t *testing.T) {
	tests := []struct {
		name   string
		first  v1alpha1.WorkloadProjection
		secret string // of the second Apply
		second v1alpha1.WorkloadProjection
		edit   func(*corev1.PodSpec) // between the two
		want   *corev1.PodTemplateSpec
	}{
		{
			name: "another Secret is mounted in place", first: files(), secret: "db-creds-2", second: files(),
			edit: func(s *corev1.PodSpec) { // a volume added after ours stays after it
				s.Volumes = append(s.Volumes, corev1.Volume{Name: "tmp"})
			},
			want: podTemplate(func(s *corev1.PodSpec) {
				s.Volumes = append(s.Volumes, secretVolume("binding-db", "db-creds-2"), corev1.Volume{Name: "tmp"})
				s.InitContainers[0].Env = []corev1.EnvVar{rootEnv("/bindings")}
				s.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "binding-db", MountPath: "/bindings/db", ReadOnly: true}}
				s.Containers[0].Env = append(s.Containers[0].Env, rootEnv("/bindings"))
				s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "binding-db", MountPath: "/bindings/db", ReadOnly: true})
			}),
		},
		{
			name: "a container added since is projected into", first: env("DB_"), secret: "db-creds", second: env("DB_"),
			edit: func(s *corev1.PodSpec) { s.Containers = append(s.Containers, corev1.Container{Name: "sidecar"}) },
			want: podTemplate(func(s *corev1.PodSpec) {
				s.InitContainers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("DB_", "db-creds")}
				s.Containers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("DB_", "db-creds")}
				s.Containers = append(s.Containers, corev1.Container{Name: "sidecar", EnvFrom: []corev1.EnvFromSource{secretEnvFrom("DB_", "db-creds")}})
			}),
		},
		{
			name: "another prefix replaces the envFrom in place", first: env("DB_"), secret: "db-creds", second: env("PG_"),
			edit: func(s *corev1.PodSpec) {
				s.Containers[0].EnvFrom = append(s.Containers[0].EnvFrom, corev1.EnvFromSource{Prefix: "X_", SecretRef: &corev1.SecretEnvSource{}})
			},
			want: podTemplate(func(s *corev1.PodSpec) {
				s.InitContainers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("PG_", "db-creds")}
				s.Containers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("PG_", "db-creds"), {Prefix: "X_", SecretRef: &corev1.SecretEnvSource{}}}
			}),
		},
		{
			name: "switching to env mode takes the files away", first: files(), secret: "db-creds", second: env(""),
			want: podTemplate(func(s *corev1.PodSpec) {
				s.InitContainers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("", "db-creds")}
				s.Containers[0].EnvFrom = []corev1.EnvFromSource{secretEnvFrom("", "db-creds")}
			}),
		},
		{
			name: "switching to file mode takes the envFrom away", first: env(""), secret: "db-creds", second: files(),
			want: podTemplate(func(s *corev1.PodSpec) {
				s.Volumes = append(s.Volumes, secretVolume("binding-db", "db-creds"))
				s.InitContainers[0].Env = []corev1.EnvVar{rootEnv("/bindings")}
				s.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "binding-db", MountPath: "/bindings/db", ReadOnly: true}}
				s.Containers[0].Env = append(s.Containers[0].Env, rootEnv("/bindings"))
				s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "binding-db", MountPath: "/bindings/db", ReadOnly: true})
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := podTemplate()
			_, annotations, err := projection.Apply(tmpl, nil, "db", "db-creds", tc.first)
			assert.NilError(t, err)
			if tc.edit != nil {
				tc.edit(&tmpl.Spec)
			}
			changed, annotations, err := projection.Apply(tmpl, annotations, "db", tc.secret, tc.second)
			assert.NilError(t, err)
			assert.Check(t, changed)
			assert.DeepEqual(t, tmpl, tc.want)

			changed, annotations, err = projection.Remove(tmpl, annotations, "db")
			assert.NilError(t, err)
			assert.Check(t, changed)
			assert.Check(t, is.Len(annotations, 0))
			want := podTemplate()
			if tc.edit != nil {
				tc.edit(&want.Spec)
			}
			assert.DeepEqual(t, tmpl, want)
		})
	}
}

func TestTwoBindings_RemovingOneKeepsTheBindingRootTheOtherNeeds(t *testing.T) {
	original := podTemplate()
	for _, removeFirst := range []string{"db", "cache"} {
		t.Run("remove "+removeFirst+" first", func(t *testing.T) {
			tmpl := original.DeepCopy()
			_, annotations, err := projection.Apply(tmpl, nil, "db", "db-creds", files())
			assert.NilError(t, err)
			_, annotations, err = projection.Apply(tmpl, annotations, "cache", "cache-creds", files())
			assert.NilError(t, err)
			assert.DeepEqual(t, projection.Projected(annotations), []string{"cache", "db"})
			assert.Check(t, is.Len(tmpl.Spec.Volumes, 3))
			assert.DeepEqual(t, tmpl.Spec.Containers[0].Env, []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, rootEnv("/bindings")})

			other := map[string]string{"db": "cache", "cache": "db"}[removeFirst]
			changed, annotations, err := projection.Remove(tmpl, annotations, removeFirst)
			assert.NilError(t, err)
			assert.Check(t, changed)
			assert.DeepEqual(t, projection.Projected(annotations), []string{other})
			assert.DeepEqual(t, tmpl.Spec.Containers[0].Env, []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, rootEnv("/bindings")})
			assert.DeepEqual(t, tmpl.Spec.InitContainers[0].Env, []corev1.EnvVar{rootEnv("/bindings")})
			assert.DeepEqual(t, tmpl.Spec.Containers[0].VolumeMounts, []corev1.VolumeMount{
				{Name: "cache", MountPath: "/cache"},
				{Name: "binding-" + other, MountPath: "/bindings/" + other, ReadOnly: true},
			})

			t.Run("applying the other again changes nothing", func(t *testing.T) {
				again := tmpl.DeepCopy()
				changed, _, err := projection.Apply(again, annotations, other, other+"-creds", files())
				assert.NilError(t, err)
				assert.Check(t, !changed)
			})

			changed, annotations, err = projection.Remove(tmpl, annotations, other)
			assert.NilError(t, err)
			assert.Check(t, changed)
			assert.Check(t, is.Len(annotations, 0))
			assert.DeepEqual(t, tmpl, original)
		})
	}
}

func TestRemove_EnvModeDoesNotTakeTheBindingRootFromFileMode(t *testing.T) {
	tmpl := podTemplate()
	_, annotations, err := projection.Apply(tmpl, nil, "db", "db-creds", files())
	assert.NilError(t, err)
	withDB := tmpl.DeepCopy()
	dbAnnotations := maps.Clone(annotations)
	_, annotations, err = projection.Apply(tmpl, annotations, "queue", "queue-creds", env("MQ_"))
	assert.NilError(t, err)
	_, annotations, err = projection.Remove(tmpl, annotations, "queue")
	assert.NilError(t, err)
	assert.DeepEqual(t, tmpl, withDB)
	assert.DeepEqual(t, annotations, dbAnnotations)
}

func TestRemove_KeepsABindingRootChangedSince(t *testing.T) {
	tmpl := podTemplate()
	_, annotations, err := projection.Apply(tmpl, nil, "db", "db-creds", files())
	assert.NilError(t, err)
	tmpl.Spec.Containers[0].Env[1].Value = "/etc/bindings"
	_, _, err = projection.Remove(tmpl, annotations, "db")
	assert.NilError(t, err)
	assert.DeepEqual(t, tmpl.Spec.Containers[0].Env, []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, rootEnv("/etc/bindings")})
	assert.Check(t, is.Len(tmpl.Spec.InitContainers[0].Env, 0))
}

func TestRemove_WithoutAnnotationChangesNothing(t *testing.T) {
	for _, annotations := range []map[string]string{nil, {"a": "b"}, {"catalog.kubectl-catalog.io/binding.cache": `{"binding":"cache","secret":"s","mode":"env"}`}} {
		tmpl := podTemplate(func(s *corev1.PodSpec) { s.Volumes = append(s.Volumes, secretVolume("binding-db", "db-creds")) })
		want := tmpl.DeepCopy()
		changed, got, err := projection.Remove(tmpl, annotations, "db")
		assert.NilError(t, err)
		assert.Check(t, !changed)
		assert.DeepEqual(t, got, annotations)
		assert.DeepEqual(t, tmpl, want)
	}
}

func TestUnreadableAnnotation(t *testing.T) {
	annotations := map[string]string{annoDB: "files"}
	_, _, err := projection.Remove(podTemplate(), annotations, "db")
	assert.Check(t, is.ErrorContains(err, `the annotation catalog.kubectl-catalog.io/binding.db cannot be read`))
	_, _, err = projection.Apply(podTemplate(), annotations, "db", "db-creds", files())
	assert.Check(t, is.ErrorContains(err, `remove what it describes and the annotation by hand`))
	assert.DeepEqual(t, projection.Projected(annotations), []string{"db"})
}

func TestApply_RefusesEmptyNames(t *testing.T) {
	_, _, err := projection.Apply(podTemplate(), nil, "", "s", files())
	assert.Check(t, is.Error(err, "the binding's name is empty"))
	_, _, err = projection.Apply(podTemplate(), nil, "db", "", files())
	assert.Check(t, is.Error(err, `binding "db" has no Secret to project`))
}

func TestLongBindingNames(t *testing.T) {
	long := strings.Repeat("a", 60) + ".example.com" // a valid record name
	other := strings.Repeat("a", 60) + "-example-com"
	tmpl := podTemplate()
	_, annotations, err := projection.Apply(tmpl, nil, long, "s1", files())
	assert.NilError(t, err)
	_, annotations, err = projection.Apply(tmpl, annotations, other, "s2", files())
	assert.NilError(t, err)

	assert.DeepEqual(t, projection.Projected(annotations), []string{other, long})
	for k := range annotations {
		assert.Check(t, is.Len(validation.IsQualifiedName(k), 0), k)
	}
	assert.Check(t, projection.AnnotationKey(long) != projection.AnnotationKey(other))
	assert.Check(t, is.Len(tmpl.Spec.Volumes, 3))
	for _, v := range tmpl.Spec.Volumes {
		assert.Check(t, is.Len(validation.IsDNS1123Label(v.Name), 0), v.Name)
	}
	assert.Equal(t, tmpl.Spec.Containers[0].VolumeMounts[1].MountPath, "/bindings/"+long)

	_, annotations, err = projection.Remove(tmpl, annotations, long)
	assert.NilError(t, err)
	_, annotations, err = projection.Remove(tmpl, annotations, other)
	assert.NilError(t, err)
	assert.Check(t, is.Len(annotations, 0))
	assert.DeepEqual(t, tmpl, podTemplate())
}

func TestAnnotationKey(t *testing.T) {
	assert.Equal(t, projection.AnnotationKey("db"), annoDB)
	assert.Equal(t, projection.AnnotationKey("my.db-1"), "catalog.kubectl-catalog.io/binding.my.db-1")
}

func TestProjected(t *testing.T) {
	assert.Check(t, is.Len(projection.Projected(nil), 0))
	assert.DeepEqual(t, projection.Projected(map[string]string{
		"catalog.kubectl-catalog.io/binding.b": `{"binding":"b","secret":"s","mode":"env"}`,
		"catalog.kubectl-catalog.io/binding.a": `{"binding":"a","secret":"s","mode":"files"}`,
		"catalog.kubectl-catalog.io/binding":   "x",
		"other.io/binding.c":                   "x",
	}), []string{"a", "b"})
}

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		in       string
		wantKind string
		wantErr  string
	}{
		{in: "deployment/web", wantKind: "Deployment"},
		{in: "deploy/web", wantKind: "Deployment"},
		{in: "deployments/web", wantKind: "Deployment"},
		{in: "deployments.apps/web", wantKind: "Deployment"},
		{in: "deployment.v1.apps/web", wantKind: "Deployment"},
		{in: "Deployment/web", wantKind: "Deployment"},
		{in: "statefulset/web", wantKind: "StatefulSet"},
		{in: "statefulsets.apps/web", wantKind: "StatefulSet"},
		{in: "sts/web", wantKind: "StatefulSet"},
		{in: "daemonset/web", wantKind: "DaemonSet"},
		{in: "daemonsets/web", wantKind: "DaemonSet"},
		{in: "ds/web", wantKind: "DaemonSet"},
		{in: "cronjob/web", wantKind: "CronJob"},
		{in: "cronjobs.batch/web", wantKind: "CronJob"},
		{in: "cj/web", wantKind: "CronJob"},
		{in: "job/web", wantKind: "Job"},
		{in: "jobs.batch/web", wantKind: "Job"},
		{in: "pod/x", wantErr: `--to "pod/x": kind "pod" cannot be projected into; use one of deployment, statefulset, daemonset, cronjob`},
		{in: "deployments.batch/x", wantErr: `kind "deployments.batch" cannot be projected into`},
		{in: "web", wantErr: `--to "web": expected KIND/NAME, e.g. --to deployment/web`},
		{in: "deployment/", wantErr: `--to "deployment/": expected KIND/NAME`},
		{in: "/web", wantErr: `--to "/web": expected KIND/NAME`},
		{in: "deployment/Web", wantErr: `--to "deployment/Web": "Web" is not a valid deployment name: a lowercase RFC 1123 subdomain`},
		{in: "deployment/a/b", wantErr: `"a/b" is not a valid deployment name`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			kind, name, err := projection.ParseWorkload(tc.in)
			if tc.wantErr != "" {
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, kind, tc.wantKind)
			assert.Equal(t, name, "web")
		})
	}
}
