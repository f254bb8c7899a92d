package install

import (
	"maps"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// Objects are the objects of one installation, in the order they are
// applied.
type Objects struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// LeaseRole and LeaseRoleBinding let the replicas of a shard group keep their
	// Leases in the catalog namespace (nil without a group).
	LeaseRole        *rbacv1.Role
	LeaseRoleBinding *rbacv1.RoleBinding
	// NetworkPolicy keeps reconcile's pods from the cloud metadata service.
	NetworkPolicy *networkingv1.NetworkPolicy
	// One CronJob per shard, or with Serve one Deployment per shard and, with
	// several replicas, a PodDisruptionBudget for each.
	CronJobs             []*batchv1.CronJob
	Deployments          []*appsv1.Deployment
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// The trust policy, its binding and the token ConfigMap (with a fresh
	// token, kept only when they must be created anew); nil with
	// NoTrustPolicy.
	Policy        *admissionv1.ValidatingAdmissionPolicy
	PolicyBinding *admissionv1.ValidatingAdmissionPolicyBinding
	TrustToken    *corev1.ConfigMap

	// catalogNamespace is where a shard group's Leases (and Role) are.
	catalogNamespace string
}

// List returns the objects in the order they are applied: the namespace
// first, the workloads, which need the rest of reconcile's objects, then the
// trust policy and its binding, and the token last, once they are in force.
func (objs Objects) List() []runtime.Object {
	list := []runtime.Object{objs.Namespace, objs.ServiceAccount, objs.ClusterRole, objs.ClusterRoleBinding}
	list = append(list, objs.Roles()...)
	list = append(list, objs.NetworkPolicy)
	list = append(list, objs.Workloads()...)
	if objs.Policy != nil {
		list = append(list, objs.Policy, objs.PolicyBinding, objs.TrustToken)
	}
	return list
}

// Roles are the Role and RoleBinding of a shard group's Leases, if any.
func (objs Objects) Roles() []runtime.Object {
	if objs.LeaseRole == nil {
		return nil
	}
	return []runtime.Object{objs.LeaseRole, objs.LeaseRoleBinding}
}

// LeaseRules are the rules of the Role a shard group's replicas get in the
// catalog namespace: their own Leases, nothing else, nowhere else.
func LeaseRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
		Verbs: []string{"get", "list", "watch", "create", "update", "delete"}}}
}

// Workloads are the CronJobs, Deployments and PodDisruptionBudgets.
func (objs Objects) Workloads() []runtime.Object {
	var list []runtime.Object
	for _, cj := range objs.CronJobs {
		list = append(list, cj)
	}
	for _, d := range objs.Deployments {
		list = append(list, d)
	}
	for _, pdb := range objs.PodDisruptionBudgets {
		list = append(list, pdb)
	}
	return list
}

// Build returns the objects of the installation o describes. It does not
// validate o.
func Build(o Options) Objects {
	cluster := ClusterName(o.Namespace, o.Name)
	objs := Objects{
		Namespace: &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: map[string]string{LabelManagedBy: "kubectl-catalog"}},
		},
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: objectMeta(o.Namespace, o.Name),
		},
		ClusterRole: &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: objectMeta("", cluster),
			Rules:      Rules(),
		},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: objectMeta("", cluster),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: o.Name, Namespace: o.Namespace}},
		},
	}
	objs.NetworkPolicy = networkPolicy(o)
	objs.catalogNamespace = o.TrustNamespace()
	if o.ShardGroup() {
		objs.LeaseRole, objs.LeaseRoleBinding = leaseRole(o, cluster)
	}
	shards := max(o.Shards, 1)
	for i := range shards {
		if !o.Serve {
			objs.CronJobs = append(objs.CronJobs, cronJob(o, i))
			continue
		}
		d := deployment(o, i)
		objs.Deployments = append(objs.Deployments, d)
		if o.Replicas > 1 {
			objs.PodDisruptionBudgets = append(objs.PodDisruptionBudgets, podDisruptionBudget(o, i, d.Spec.Selector))
		}
	}
	if !o.NoTrustPolicy {
		objs.Policy, objs.PolicyBinding = trust.Policy(), trust.Binding()
		objs.TrustToken = trust.TokenConfigMap(o.TrustNamespace(), uuid.NewString())
	}
	return objs
}

// objectMeta names an object of the installation and gives it its labels.
func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: Labels()}
}

// workloadMeta is the metadata of shard i's workload, and of its
// PodDisruptionBudget.
func workloadMeta(o Options, i int) metav1.ObjectMeta {
	name := o.WorkloadName(i)
	m := objectMeta(o.Namespace, name)
	m.Labels[LabelInstance] = name
	m.Labels[LabelInstallation] = o.Name
	return m
}

// podLabels are the labels of shard i's pods.
func podLabels(o Options, i int) map[string]string {
	return map[string]string{LabelName: "kubectl-catalog", LabelComponent: "reconcile", LabelManagedBy: "kubectl-catalog", LabelInstance: o.WorkloadName(i)}
}

// leaseRole is the Role and RoleBinding of a shard group's Leases.
func leaseRole(o Options, cluster string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	roleMeta := objectMeta(o.TrustNamespace(), cluster)
	roleMeta.Labels[LabelInstallation] = o.Name
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: roleMeta,
		Rules:      LeaseRules(),
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: *roleMeta.DeepCopy(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: cluster},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: o.Name, Namespace: o.Namespace}},
	}
	return role, binding
}

// cronJob is shard i's CronJob, without Serve.
func cronJob(o Options, i int) *batchv1.CronJob {
	labels := podLabels(o, i)
	return &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "CronJob"},
		ObjectMeta: workloadMeta(o, i),
		Spec: batchv1.CronJobSpec{
			Schedule: o.Schedule,
			// Claims make overlapping runs safe; Forbid makes them rare.
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    ptr.To(int64(StartingDeadline / time.Second)),
			SuccessfulJobsHistoryLimit: ptr.To(int32(HistoryLimit)),
			FailedJobsHistoryLimit:     ptr.To(int32(HistoryLimit)),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: batchv1.JobSpec{
					// A failed run is not retried at once: the next
					// schedule retries, with the records' own backoff.
					BackoffLimit:          ptr.To(int32(0)),
					ActiveDeadlineSeconds: ptr.To(int64(o.ActiveDeadline() / time.Second)),
					Template:              podTemplate(o, labels, o.Command(i)),
				},
			},
		},
	}
}

// deployment is shard i's Deployment, with Serve.
func deployment(o Options, i int) *appsv1.Deployment {
	labels := podLabels(o, i)
	template := podTemplate(o, labels, o.ServeCommand(i))
	serveContainer(&template.Spec)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: workloadMeta(o, i),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(max(o.Replicas, 1))),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template,
		},
	}
}

// podDisruptionBudget keeps one of shard i's replicas running.
func podDisruptionBudget(o Options, i int, selector *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		ObjectMeta: workloadMeta(o, i),
		Spec: policyv1.PodDisruptionBudgetSpec{
			// One reconciler is enough to keep work going: a drain
			// may take the others, never the last one.
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     selector.DeepCopy(),
		},
	}
}

// podTemplate is the pod of a CronJob's Job; serveContainer turns it into a
// Deployment's. Both share the ServiceAccount, the security context and the
// resources.
func podTemplate(o Options, labels map[string]string, command []string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
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
				Command: command,
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

// serveContainer adapts a pod spec of podTemplate to a Deployment running
// reconcile --serve: restarted when it exits, its port named for the probes
// and for scraping, /healthz as the readiness probe and, with a high failure
// threshold, as the liveness probe, and time to finish the run under way on
// SIGTERM.
func serveContainer(spec *corev1.PodSpec) {
	spec.RestartPolicy = corev1.RestartPolicyAlways
	spec.TerminationGracePeriodSeconds = ptr.To(int64(TerminationGrace / time.Second))
	c := &spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: ServePortName, ContainerPort: ServePort, Protocol: corev1.ProtocolTCP}}
	probe := func(period time.Duration, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/healthz", Port: intstr.FromString(ServePortName), Scheme: corev1.URISchemeHTTP,
			}},
			PeriodSeconds:    int32(period / time.Second),
			TimeoutSeconds:   5,
			FailureThreshold: failures,
		}
	}
	c.ReadinessProbe = probe(ReadinessPeriod, 3)
	c.LivenessProbe = probe(LivenessPeriod, LivenessFailureThreshold)
}
