// Package install builds, applies and removes what runs "kubectl catalog
// reconcile" in a cluster on a schedule: a ServiceAccount, a least-privilege
// ClusterRole and its ClusterRoleBinding, and a CronJob; and the records'
// trust policy (package trust): a ValidatingAdmissionPolicy, its binding and
// the token ConfigMap.
//
// The manifests are built here, in one place, so that "reconcile install",
// "reconcile uninstall", "doctor" (which checks the same permissions for the
// current user) and the tests agree on them.
package install

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// Defaults of "reconcile install".
const (
	// DefaultNamespace holds the ServiceAccount and the CronJob. It is the
	// default catalog namespace, which reconcile needs anyway.
	DefaultNamespace = "catalog-system"
	// DefaultName names the ServiceAccount and the CronJob.
	DefaultName = "catalog-reconcile"
	// DefaultSchedule runs reconcile every five minutes.
	DefaultSchedule = "*/5 * * * *"
	// DefaultMaxDuration bounds each run; it stays below the default
	// five-minute schedule so that runs do not queue up behind each other.
	DefaultMaxDuration = 4 * time.Minute
	// DefaultWorkers is how many records a run drives at once.
	DefaultWorkers = 8
	// FieldManager owns the fields "reconcile install" applies (server-side
	// apply).
	FieldManager = "kubectl-catalog"
	// ContainerName is the name of the CronJob's container.
	ContainerName = "reconcile"
	// Binary is the program the container runs; the image must have it on
	// its PATH.
	Binary = "kubectl-catalog"
)

// Timing of the CronJob, derived from the run's --max-duration.
const (
	// StartingDeadline is how late a run may still start after its scheduled
	// time (an API server or controller manager that was down); later runs
	// are skipped, the next schedule picks the work up.
	StartingDeadline = 2 * time.Minute
	// DeadlineMargin is added to --max-duration for the Job's
	// activeDeadlineSeconds: reconcile ends by itself at --max-duration (calls
	// under way finish, claims are released); the Job's deadline is only a
	// backstop, and must leave reconcile time to do so.
	DeadlineMargin = 30 * time.Second
	// HistoryLimit is how many finished Jobs of each outcome are kept, so
	// that "kubectl logs job/..." shows the last summaries.
	HistoryLimit = 3
)

// RunAsUser is the uid the container runs as (the conventional "nonroot"
// user of distroless images). It is set explicitly because runAsNonRoot
// alone refuses images whose USER is a name rather than a number.
const RunAsUser = 65532

// Labels on every object "reconcile install" writes.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// Labels returns the labels of every object "reconcile install" writes.
func Labels() map[string]string {
	return map[string]string{
		LabelName:      "kubectl-catalog",
		LabelComponent: "reconcile",
		LabelManagedBy: "kubectl-catalog",
	}
}

// Permission is one rule of the reconcile ClusterRole and why reconcile
// needs it.
type Permission struct {
	rbacv1.PolicyRule
	// Why says what reconcile does with the rule, and so what breaks without
	// it.
	Why string
}

// Permissions are exactly the API requests "kubectl catalog reconcile -A"
// makes, and nothing more: no wildcard, no resource it does not touch. The
// ClusterRole of "reconcile install" is made of them, and "doctor" checks
// them for the current user.
var Permissions = []Permission{
	{
		// Records are ConfigMaps in every namespace: a metadata-only list (and
		// watch while waiting) finds the pending ones, get reads them, update
		// and patch write claims, status and finalizers, create and delete
		// come with catalog syncs (classes) and bindings.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		Why: "records are ConfigMaps: without this reconcile cannot find, read or finish pending work",
	},
	{
		// Secrets: broker credentials and parameters taken from Secrets are
		// read at every broker call; a binding's credentials Secret is
		// created or updated when the bind completes and deleted on unbind.
		// Never listed: reconcile only reads Secrets records name.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
			Verbs: []string{"get", "create", "update", "delete"}},
		Why: "broker credentials and parameters come from Secrets, binding credentials go to Secrets",
	},
	{
		// The namespace's uid goes into the OSB context of every request.
		// Without it the namespace's name is sent instead.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"},
			Verbs: []string{"get"}},
		Why: "the namespace uid goes into the OSB context (the name is sent instead without it)",
	},
	{
		// Who is calling: the originating identity sent to brokers.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"},
			Verbs: []string{"create"}},
		Why: "the originating identity sent to brokers (none is sent without it)",
	},
	{
		// Unbind removes a binding's Secret projection from the workloads
		// it was projected into.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"},
			Verbs: []string{"get", "update"}},
		Why: "unbind removes the credentials projection from the workloads it was added to",
	},
	{
		// The same for CronJobs and Jobs.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"cronjobs", "jobs"},
			Verbs: []string{"get", "update"}},
		Why: "unbind removes the credentials projection from the workloads it was added to",
	},
	{
		// Before acting on a record in its author's name (reading a Secret
		// the record names, updating a workload it projects into), reconcile
		// asks the API server whether the author may do so themselves.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"},
			Verbs: []string{"create"}},
		Why: "reconcile asks whether a record's author may read a Secret or update a workload before doing it in their name; without it, it refuses",
	},
	{
		// Whether the records' trust policy is in force, and unchanged:
		// only the catalog's own policy and binding, by name.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"},
			Resources:     []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
			ResourceNames: []string{store.TrustPolicyName}, Verbs: []string{"get"}},
		Why: "reconcile checks that the records' trust policy is in force (without it, it trusts the token ConfigMap alone)",
	},
}

// Rules returns the rules of the reconcile ClusterRole (a copy of
// Permissions).
func Rules() []rbacv1.PolicyRule {
	rules := make([]rbacv1.PolicyRule, 0, len(Permissions))
	for _, p := range Permissions {
		rules = append(rules, *p.PolicyRule.DeepCopy())
	}
	return rules
}

// Options describe one installation.
type Options struct {
	// Namespace holds the ServiceAccount and the CronJob.
	Namespace string
	// Name names the ServiceAccount and the CronJob.
	Name string
	// Image holds kubectl-catalog on its PATH.
	Image string
	// Schedule is the CronJob's schedule, in the five-field cron format.
	Schedule string
	// MaxDuration bounds each run (reconcile --max-duration).
	MaxDuration time.Duration
	// Workers is reconcile --workers.
	Workers int
	// CatalogNamespace is passed as --catalog-namespace when it is not the
	// default one. The trust token ConfigMap lives there.
	CatalogNamespace string
	// NoTrustPolicy leaves out the records' trust policy, for clusters
	// without the ValidatingAdmissionPolicy API.
	NoTrustPolicy bool
}

// TrustNamespace is the catalog namespace, where the trust token lives.
func (o Options) TrustNamespace() string {
	if o.CatalogNamespace == "" {
		return DefaultNamespace
	}
	return o.CatalogNamespace
}

// Defaults returns the options with defaults, an image excepted.
func Defaults() Options {
	return Options{
		Namespace: DefaultNamespace, Name: DefaultName, Schedule: DefaultSchedule,
		MaxDuration: DefaultMaxDuration, Workers: DefaultWorkers,
	}
}

// Validate checks the options. Errors name the flag to fix.
func (o Options) Validate() error {
	if strings.TrimSpace(o.Image) == "" {
		return fmt.Errorf("--image is required: an image with %s on its PATH, such as registry.example/kubectl-catalog:v0.1.0", Binary)
	}
	if strings.ContainsAny(o.Image, " \t\n") {
		return fmt.Errorf("--image %q must not contain spaces", o.Image)
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q is not a valid namespace name: %s", o.Namespace, strings.Join(errs, "; "))
	}
	// A CronJob's name leaves 11 characters to the Jobs it creates.
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 || len(o.Name) > 52 {
		return fmt.Errorf("--name %q is not valid: use lowercase letters, digits and '-', at most 52 characters", o.Name)
	}
	if err := ValidateSchedule(o.Schedule); err != nil {
		return fmt.Errorf("--schedule %q: %w", o.Schedule, err)
	}
	if o.MaxDuration < time.Second {
		return fmt.Errorf("--max-duration must be at least 1s, not %s: a scheduled run must end", o.MaxDuration)
	}
	if o.Workers < 1 {
		return fmt.Errorf("--workers must be at least 1, not %d", o.Workers)
	}
	return nil
}

// ClusterName is the name of the ClusterRole and ClusterRoleBinding of an
// installation. Both are cluster-scoped, so the name carries the namespace:
// installations in several namespaces do not overwrite each other.
func ClusterName(namespace, name string) string {
	return "kubectl-catalog:" + namespace + ":" + name
}

// Command is the command line of the CronJob's container.
func (o Options) Command() []string {
	cmd := []string{Binary, "reconcile", "-A",
		"--max-duration", shortDuration(o.MaxDuration), "--workers", strconv.Itoa(o.Workers), "-o", "json"}
	if o.CatalogNamespace != "" && o.CatalogNamespace != DefaultNamespace {
		cmd = append(cmd, "--catalog-namespace", o.CatalogNamespace)
	}
	return cmd
}

// shortDuration formats d without trailing zero units: 4m rather than 4m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ActiveDeadline is the Job's activeDeadlineSeconds for the options.
func (o Options) ActiveDeadline() time.Duration {
	return (o.MaxDuration + DeadlineMargin).Round(time.Second)
}

// Objects are the objects of one installation, in the order they are
// applied.
type Objects struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	CronJob            *batchv1.CronJob
	// The trust policy, its binding and the token ConfigMap (with a fresh
	// token, kept only when they must be created anew); nil with
	// NoTrustPolicy.
	Policy        *admissionv1.ValidatingAdmissionPolicy
	PolicyBinding *admissionv1.ValidatingAdmissionPolicyBinding
	TrustToken    *corev1.ConfigMap
}

// List returns the objects in the order they are applied: the namespace
// first, the CronJob, which needs the rest of reconcile's objects, then the
// trust policy and its binding, and the token last, once they are in force.
func (objs Objects) List() []runtime.Object {
	list := []runtime.Object{objs.Namespace, objs.ServiceAccount, objs.ClusterRole, objs.ClusterRoleBinding, objs.CronJob}
	if objs.Policy != nil {
		list = append(list, objs.Policy, objs.PolicyBinding, objs.TrustToken)
	}
	return list
}

// Build returns the objects of the installation o describes. It does not
// validate o.
func Build(o Options) Objects {
	labels := Labels
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels()}
	}
	cluster := ClusterName(o.Namespace, o.Name)
	deadline := int64(o.ActiveDeadline() / time.Second)
	objs := Objects{
		Namespace: &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: map[string]string{LabelManagedBy: "kubectl-catalog"}},
		},
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(o.Namespace, o.Name),
		},
		ClusterRole: &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: meta("", cluster),
			Rules:      Rules(),
		},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: meta("", cluster),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: o.Name, Namespace: o.Namespace}},
		},
		CronJob: &batchv1.CronJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "CronJob"},
			ObjectMeta: meta(o.Namespace, o.Name),
			Spec: batchv1.CronJobSpec{
				Schedule: o.Schedule,
				// Claims make overlapping runs safe; Forbid makes them rare.
				ConcurrencyPolicy:          batchv1.ForbidConcurrent,
				StartingDeadlineSeconds:    ptr.To(int64(StartingDeadline / time.Second)),
				SuccessfulJobsHistoryLimit: ptr.To(int32(HistoryLimit)),
				FailedJobsHistoryLimit:     ptr.To(int32(HistoryLimit)),
				JobTemplate: batchv1.JobTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels()},
					Spec: batchv1.JobSpec{
						// A failed run is not retried at once: the next
						// schedule retries, with the records' own backoff.
						BackoffLimit:          ptr.To(int32(0)),
						ActiveDeadlineSeconds: ptr.To(deadline),
						Template:              podTemplate(o, labels()),
					},
				},
			},
		},
	}
	if !o.NoTrustPolicy {
		objs.Policy, objs.PolicyBinding = trust.Policy(), trust.Binding()
		objs.TrustToken = trust.TokenConfigMap(o.TrustNamespace(), uuid.NewString())
	}
	return objs
}

func podTemplate(o Options, labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			ServiceAccountName: o.Name,
			RestartPolicy:      corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(int64(RunAsUser)),
				RunAsGroup:     ptr.To(int64(RunAsUser)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    ContainerName,
				Image:   o.Image,
				Command: o.Command(),
				// The root filesystem is read-only: client-go's caches go
				// to an emptyDir.
				Env: []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("50m"),
						corev1.ResourceMemory: resource.MustParse("64Mi"),
					},
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ptr.To(true),
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
			}},
			Volumes: []corev1.Volume{{
				Name:         "tmp",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}},
			}},
		},
	}
}
