package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const (
	// BindingRootEnv is the environment variable of the servicebinding.io convention
	// naming the directory bindings are mounted under.
	BindingRootEnv = "SERVICE_BINDING_ROOT"
	// DefaultBindingRoot is the value BindingRootEnv is given in containers that do not
	// set it.
	DefaultBindingRoot = "/bindings"
	// AnnotationPrefix begins the key of every projection annotation on a workload; see
	// AnnotationKey.
	AnnotationPrefix = store.Prefix + "binding."
)

// Projection modes, as recorded in the annotation.
const (
	modeFiles = "files"
	modeEnv   = "env"
)

// record is the value of a projection annotation: what Apply added to the pod template,
// so that Remove can take exactly that away.
type record struct {
	// Binding is the binding's name; the annotation key may be a shortened form of it.
	Binding string `json:"binding"`
	// Secret is the projected Secret.
	Secret string `json:"secret"`
	// Mode is modeFiles or modeEnv.
	Mode string `json:"mode"`
	// EnvPrefix is the envFrom prefix, in modeEnv.
	EnvPrefix string `json:"envPrefix,omitempty"`
	// Volume is the name of the Secret volume, in modeFiles.
	Volume string `json:"volume,omitempty"`
	// Containers are the containers and init containers projected into.
	Containers []containerRecord `json:"containers,omitempty"`
}

// containerRecord is what was added to one container.
type containerRecord struct {
	Name string `json:"name"`
	// MountPath is where the volume is mounted, in modeFiles.
	MountPath string `json:"mountPath,omitempty"`
	// BindingRootAdded is true when BindingRootEnv was added to the container by this
	// projection (or handed over to it by one removed since), in modeFiles.
	BindingRootAdded bool `json:"bindingRootAdded,omitempty"`
	// EnvFrom is true when the envFrom entry was added by this projection, in modeEnv;
	// false when the container already had the same entry of its own.
	EnvFrom bool `json:"envFrom,omitempty"`
}

func (r *record) container(name string) *containerRecord {
	for i := range r.Containers {
		if r.Containers[i].Name == name {
			return &r.Containers[i]
		}
	}
	return nil
}

func (r *record) encode() string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings and booleans only
	}
	return string(b)
}

// AnnotationKey is the key of the annotation recording the projection of binding into a
// workload: AnnotationPrefix followed by the binding's name, e.g.
// "catalog.kubectl-catalog.io/binding.db". A name too long for an annotation key is
// shortened and suffixed with a hash of the whole name.
func AnnotationKey(binding string) string {
	name := "binding." + binding
	if len(validation.IsQualifiedName(store.Prefix+name)) == 0 {
		return store.Prefix + name
	}
	const maxName, hashLen = 63, 10 // the longest name part of an annotation key
	short := sanitize(binding, func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
	})
	short = truncate(short, maxName-len("binding.")-1-hashLen)
	return store.Prefix + "binding." + short + "-" + hash(binding, hashLen)
}

// volumeName is the name of the Secret volume of binding: "binding-<binding>" when that
// is a valid DNS-1123 label, else a shortened, lowercased form of it suffixed with a hash
// of the whole name, so that two bindings never share a volume.
func volumeName(binding string) string {
	name := "binding-" + binding
	if len(validation.IsDNS1123Label(name)) == 0 {
		return name
	}
	const hashLen = 8
	short := sanitize(strings.ToLower(binding), func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-'
	})
	short = truncate(short, validation.DNS1123LabelMaxLength-len("binding-")-1-hashLen)
	return "binding-" + short + "-" + hash(binding, hashLen)
}

// sanitize replaces every rune of s that is not ok with '-'.
func sanitize(s string, ok func(rune) bool) string {
	return strings.Map(func(r rune) rune {
		if ok(r) {
			return r
		}
		return '-'
	}, s)
}

// truncate shortens s to at most n bytes and trims non-alphanumerics from its end.
func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRightFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

func hash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// readRecord is the projection record of binding in annotations, nil when there is none.
func readRecord(annotations map[string]string, binding string) (*record, error) {
	key := AnnotationKey(binding)
	v, ok := annotations[key]
	if !ok {
		return nil, nil
	}
	r, err := parseRecord(v)
	if err != nil {
		return nil, fmt.Errorf("the annotation %s cannot be read (%v): remove what it describes and the annotation by hand", key, err)
	}
	if r.Binding != binding {
		return nil, fmt.Errorf("the annotation %s records the binding %q, not %q: remove it by hand", key, r.Binding, binding)
	}
	return r, nil
}

func parseRecord(v string) (*record, error) {
	var r record
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, err
	}
	if r.Binding == "" || (r.Mode != modeFiles && r.Mode != modeEnv) {
		return nil, errors.New("not a projection record")
	}
	return &r, nil
}

// Projected returns the names of the bindings projected into a workload with the
// annotations annotations, sorted.
func Projected(annotations map[string]string) []string {
	var out []string
	for k, v := range annotations {
		if !strings.HasPrefix(k, AnnotationPrefix) {
			continue
		}
		if r, err := parseRecord(v); err == nil {
			out = append(out, r.Binding)
		} else {
			out = append(out, strings.TrimPrefix(k, AnnotationPrefix))
		}
	}
	slices.Sort(out)
	return out
}

// Apply projects the Secret secretName of binding into the pod template tmpl of a
// workload whose annotations are annotations, as p says (p.Kind and p.Name are not used).
//
// In file mode (p.Env false) it adds a volume of the Secret to the pod and mounts it
// read-only at $SERVICE_BINDING_ROOT/<binding> in every container and init container.
// A container that does not set SERVICE_BINDING_ROOT gets it set to DefaultBindingRoot;
// one that sets it to an absolute path keeps it and the mount goes there. A
// SERVICE_BINDING_ROOT set with valueFrom, or to a relative path, is an error: where the
// files would appear cannot be known.
//
// In env mode it adds an envFrom of the Secret, with p.EnvPrefix, to every container and
// init container; a container with the same envFrom of its own is left as it is.
//
// What was added is recorded in the annotation AnnotationKey(binding) of newAnnotations,
// which is meant for the workload's metadata, not the pod template's. Applying the
// projection again changes nothing and returns changed false; applying it with another
// Secret, prefix or mode changes what the earlier projection added, in place, and
// projects into containers added since.
//
// A volume of the same name, or a mount at the same path, that this projection did not
// add is an error naming it and the container.
//
// tmpl is changed in place only when changed is true, and is left untouched on error.
// annotations is never modified: newAnnotations is a new map when changed is true, and
// annotations itself otherwise.
func Apply(tmpl *corev1.PodTemplateSpec, annotations map[string]string, binding, secretName string, p v1alpha1.WorkloadProjection) (changed bool, newAnnotations map[string]string, err error) {
	if binding == "" {
		return false, annotations, errors.New("the binding's name is empty")
	}
	if secretName == "" {
		return false, annotations, fmt.Errorf("binding %q has no Secret to project", binding)
	}
	prev, err := readRecord(annotations, binding)
	if err != nil {
		return false, annotations, err
	}
	work := tmpl.DeepCopy()
	annos := maps.Clone(annotations)
	if annos == nil {
		annos = map[string]string{}
	}
	rec := &record{Binding: binding, Secret: secretName}
	if p.Env {
		rec.Mode, rec.EnvPrefix = modeEnv, p.EnvPrefix
		projectEnv(&work.Spec, prev, rec)
	} else {
		rec.Mode = modeFiles
		if err := projectFiles(&work.Spec, prev, rec); err != nil {
			return false, annotations, err
		}
	}
	if prev != nil {
		undoStale(&work.Spec, annos, prev, rec)
	}
	annos[AnnotationKey(binding)] = rec.encode()

	if apiequality.Semantic.DeepEqual(work, tmpl) && maps.Equal(annos, annotations) {
		return false, annotations, nil
	}
	*tmpl = *work
	return true, annos, nil
}

// Remove takes the projection of binding out of the pod template tmpl of a workload whose
// annotations are annotations: the volume and its mounts, or the envFrom entries, that
// Apply added, and SERVICE_BINDING_ROOT where Apply added it, unless another file-mode
// projection into the same container still needs it (that projection then owns it and
// removes it in turn). Without the projection's annotation Remove changes nothing and is
// not an error.
//
// tmpl is changed in place only when changed is true; annotations is never modified:
// newAnnotations is a new map without the projection's annotation when changed is true,
// and annotations itself otherwise.
func Remove(tmpl *corev1.PodTemplateSpec, annotations map[string]string, binding string) (changed bool, newAnnotations map[string]string, err error) {
	prev, err := readRecord(annotations, binding)
	if err != nil || prev == nil {
		return false, annotations, err
	}
	work := tmpl.DeepCopy()
	annos := maps.Clone(annotations)
	switch prev.Mode {
	case modeFiles:
		removeVolume(&work.Spec, prev.Volume)
	case modeEnv:
		removeEnvFrom(&work.Spec, prev)
	}
	for _, c := range prev.Containers {
		if c.BindingRootAdded {
			releaseBindingRoot(&work.Spec, annos, binding, c.Name)
		}
	}
	delete(annos, AnnotationKey(binding))
	*tmpl = *work
	return true, annos, nil
}

// containers are the init containers and containers of spec.
func containers(spec *corev1.PodSpec) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(spec.InitContainers)+len(spec.Containers))
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

func findContainer(spec *corev1.PodSpec, name string) *corev1.Container {
	for _, c := range containers(spec) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// projectFiles mounts the Secret rec.Secret in every container of spec, keeping in place
// what the earlier projection prev added, and records it in rec.
func projectFiles(spec *corev1.PodSpec, prev, rec *record) error {
	prevFiles := prev != nil && prev.Mode == modeFiles
	rec.Volume = volumeName(rec.Binding)
	if prevFiles && prev.Volume != "" {
		rec.Volume = prev.Volume
	}

	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == rec.Volume })
	switch {
	case i >= 0 && !prevFiles:
		return fmt.Errorf("the pod template already has a volume named %q, which kubectl-catalog did not add: rename it", rec.Volume)
	case i >= 0:
		// Compare the Secret's name only: the API server defaults the rest (defaultMode).
		if s := spec.Volumes[i].Secret; s == nil || s.SecretName != rec.Secret {
			spec.Volumes[i].VolumeSource = secretVolume(rec.Secret)
		}
	default:
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: rec.Volume, VolumeSource: secretVolume(rec.Secret)})
	}

	for _, c := range containers(spec) {
		owned := false
		if prevFiles {
			if pc := prev.container(c.Name); pc != nil {
				owned = pc.BindingRootAdded
			}
		}
		root, added, err := bindingRoot(c, owned)
		if err != nil {
			return err
		}
		mountPath := path.Join(root, rec.Binding)
		ours := -1
		for j, m := range c.VolumeMounts {
			switch {
			case m.Name == rec.Volume && prevFiles && ours < 0:
				ours = j
			case m.Name == rec.Volume:
				return fmt.Errorf("container %q already mounts a volume named %q, which kubectl-catalog did not add: rename it", c.Name, rec.Volume)
			case path.Clean(m.MountPath) == mountPath:
				return fmt.Errorf("container %q already mounts the volume %q at %q, where binding %q is to be mounted: "+
					"move that mount, or set %s in the container to another directory", c.Name, m.Name, mountPath, rec.Binding, BindingRootEnv)
			}
		}
		if ours >= 0 {
			c.VolumeMounts[ours].MountPath = mountPath
			c.VolumeMounts[ours].ReadOnly = true
		} else {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: rec.Volume, MountPath: mountPath, ReadOnly: true})
		}
		rec.Containers = append(rec.Containers, containerRecord{Name: c.Name, MountPath: mountPath, BindingRootAdded: added})
	}
	return nil
}

func secretVolume(secret string) corev1.VolumeSource {
	return corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}
}

// bindingRoot is the value of SERVICE_BINDING_ROOT in c, setting it to
// DefaultBindingRoot when c does not set it. added is true when it was set now, or when
// owned (set by a projection) and still there.
func bindingRoot(c *corev1.Container, owned bool) (root string, added bool, err error) {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == BindingRootEnv })
	if i < 0 {
		c.Env = append(c.Env, corev1.EnvVar{Name: BindingRootEnv, Value: DefaultBindingRoot})
		return DefaultBindingRoot, true, nil
	}
	e := c.Env[i]
	if e.ValueFrom != nil {
		return "", false, fmt.Errorf("container %q sets %s with valueFrom, which cannot be resolved to know where to mount the binding: "+
			"set it to an absolute path, e.g. %s, or remove it", c.Name, BindingRootEnv, DefaultBindingRoot)
	}
	if !path.IsAbs(e.Value) {
		return "", false, fmt.Errorf("container %q sets %s to %q, which is not an absolute path: set it to one, e.g. %s, or remove it",
			c.Name, BindingRootEnv, e.Value, DefaultBindingRoot)
	}
	return path.Clean(e.Value), owned, nil
}

// projectEnv adds the envFrom of rec.Secret to every container of spec, keeping in place
// what the earlier projection prev added, and records it in rec.
func projectEnv(spec *corev1.PodSpec, prev, rec *record) {
	prevEnv := prev != nil && prev.Mode == modeEnv
	want := corev1.EnvFromSource{Prefix: rec.EnvPrefix, SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: rec.Secret},
	}}
	for _, c := range containers(spec) {
		ours := -1
		if prevEnv {
			if pc := prev.container(c.Name); pc != nil && pc.EnvFrom {
				ours = indexEnvFrom(c.EnvFrom, prev.EnvPrefix, prev.Secret)
			}
		}
		added := true
		switch {
		case ours >= 0:
			if !isEnvFrom(c.EnvFrom[ours], rec.EnvPrefix, rec.Secret) {
				c.EnvFrom[ours] = want
			}
		case indexEnvFrom(c.EnvFrom, rec.EnvPrefix, rec.Secret) >= 0:
			added = false // the container's own
		default:
			c.EnvFrom = append(c.EnvFrom, want)
		}
		rec.Containers = append(rec.Containers, containerRecord{Name: c.Name, EnvFrom: added})
	}
}

func isEnvFrom(e corev1.EnvFromSource, prefix, secret string) bool {
	return e.Prefix == prefix && e.ConfigMapRef == nil && e.SecretRef != nil && e.SecretRef.Name == secret
}

func indexEnvFrom(list []corev1.EnvFromSource, prefix, secret string) int {
	return slices.IndexFunc(list, func(e corev1.EnvFromSource) bool { return isEnvFrom(e, prefix, secret) })
}

// undoStale takes away what the earlier projection prev added and the new one rec no
// longer has: the other mode's additions, and SERVICE_BINDING_ROOT it no longer needs.
func undoStale(spec *corev1.PodSpec, annotations map[string]string, prev, rec *record) {
	if prev.Mode == modeFiles && rec.Mode != modeFiles {
		removeVolume(spec, prev.Volume)
	}
	if prev.Mode == modeEnv && rec.Mode != modeEnv {
		removeEnvFrom(spec, prev)
	}
	for _, pc := range prev.Containers {
		if !pc.BindingRootAdded {
			continue
		}
		if c := rec.container(pc.Name); c != nil && c.BindingRootAdded {
			continue
		}
		releaseBindingRoot(spec, annotations, rec.Binding, pc.Name)
	}
}

// removeVolume removes the volume named name from spec and every mount of it.
func removeVolume(spec *corev1.PodSpec, name string) {
	if name == "" {
		return
	}
	spec.Volumes = nilIfEmpty(slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == name }))
	for _, c := range containers(spec) {
		c.VolumeMounts = nilIfEmpty(slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name }))
	}
}

// removeEnvFrom removes the envFrom entries the env-mode projection r added.
func removeEnvFrom(spec *corev1.PodSpec, r *record) {
	for _, pc := range r.Containers {
		if !pc.EnvFrom {
			continue
		}
		c := findContainer(spec, pc.Name)
		if c == nil {
			continue
		}
		if i := indexEnvFrom(c.EnvFrom, r.EnvPrefix, r.Secret); i >= 0 {
			c.EnvFrom = nilIfEmpty(slices.Delete(c.EnvFrom, i, i+1))
		}
	}
}

// releaseBindingRoot gives up the SERVICE_BINDING_ROOT that the projection of binding
// added to the container name. When another file-mode projection mounts into that
// container, it takes the variable over (its annotation in annotations is updated);
// otherwise the variable is removed, if it still has the value it was given.
func releaseBindingRoot(spec *corev1.PodSpec, annotations map[string]string, binding, name string) {
	c := findContainer(spec, name)
	if c == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if !strings.HasPrefix(k, AnnotationPrefix) {
			continue
		}
		other, err := parseRecord(annotations[k])
		if err != nil || other.Binding == binding || other.Mode != modeFiles {
			continue
		}
		if oc := other.container(name); oc != nil {
			if !oc.BindingRootAdded {
				oc.BindingRootAdded = true
				annotations[k] = other.encode()
			}
			return
		}
	}
	c.Env = nilIfEmpty(slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == BindingRootEnv && e.ValueFrom == nil && e.Value == DefaultBindingRoot
	}))
}

func nilIfEmpty[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}
