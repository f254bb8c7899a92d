// Package install builds, applies and removes what runs "kubectl catalog
// reconcile" in a cluster: a ServiceAccount, a least-privilege ClusterRole
// and its ClusterRoleBinding, and a CronJob per shard (or, with --serve, a
// Deployment per shard; with several replicas, a PodDisruptionBudget, and
// a Role and RoleBinding on Leases in the catalog namespace for their shard
// group); and the records' trust policy (package trust): a
// ValidatingAdmissionPolicy, its binding and the token ConfigMap.
//
// Build makes the objects (build.go, install.go, schedule.go); Apply applies them with
// server-side apply and prunes the workloads an installation no longer has
// (apply.go); Uninstall and UninstallTrust delete them (uninstall.go). Result
// is what is reported of each object (result.go), Clean, CleanServed and
// WriteYAML/WriteJSON print them as manifests (print.go), and client.go holds
// the typed clients they go through.
//
// The manifests are built here, in one place, so that "reconcile install",
// "reconcile uninstall", "rbac" (which prints and applies ClusterRoles the
// same way), "doctor" (which checks the same permissions for the current
// user) and the tests agree on them.
package install

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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
	// MaxShards bounds --shards.
	MaxShards = 64
	// MaxNameLength is the longest workload name: a CronJob's name leaves 11
	// characters to the Jobs it creates.
	MaxNameLength = 52
)

// Timing of the Deployment (--serve).
const (
	// ServePort is the port reconcile --serve listens on for /healthz and
	// /metrics (its default --listen).
	ServePort = 8080
	// ServePortName names it in the pod, for the probes and for scraping.
	ServePortName = "http"
	// TerminationGrace is the pod's terminationGracePeriodSeconds: above
	// reconcile --serve's default --shutdown-grace (20s), so that the run
	// under way can finish and release its claims.
	TerminationGrace = 30 * time.Second
	// LivenessFailureThreshold times LivenessPeriod is how long /healthz may
	// fail before the container is restarted: minutes, since it also fails
	// while the API server is away, which a restart does not cure.
	LivenessFailureThreshold = 10
	LivenessPeriod           = 30 * time.Second
	ReadinessPeriod          = 10 * time.Second
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
	// LabelInstance is on each workload (CronJob, Deployment,
	// PodDisruptionBudget) and its pods: the workload's own name, which
	// tells the pods of one shard's Deployment from another's.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelInstallation is on each workload: the installation's --name.
	// Uninstall, and an install that no longer wants a workload (fewer
	// shards, a CronJob replaced by a Deployment), find them by it.
	LabelInstallation = "catalog.kubectl-catalog.io/installation"
)

// WorkloadSelector selects the workloads of every installation of "reconcile install"
// (CronJobs, Deployments, PodDisruptionBudgets) in a namespace; LabelInstallation tells
// one installation's from another's.
const WorkloadSelector = LabelManagedBy + "=kubectl-catalog," + LabelComponent + "=reconcile"

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
		// come with catalog syncs (classes) and bindings, create with the id
		// claims of records whose spec names an OSB id bound to nothing.
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
		// Without it the namespace's name is sent instead. Listed: the runs
		// between two full passes find the namespaces being deleted, whose
		// records they list (store.ListWork).
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"},
			Verbs: []string{"get", "list"}},
		Why: "the namespace uid goes into the OSB context (the name is sent instead without it); the namespaces being deleted hold records to finish",
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
	{
		// The egress rule of namespace-scoped brokers denies the cluster's own
		// ranges with no setting: the Service ranges (ServiceCIDRs), the nodes'
		// Pod ranges and addresses, the API server's endpoints.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"servicecidrs"},
			Verbs: []string{"list"}},
		Why: "reconcile keeps namespace-scoped brokers from the cluster's Service ranges; without it, they are denied only if --namespace-broker-deny-cidr names them",
	},
	{
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"},
			Verbs: []string{"list"}},
		Why: "reconcile keeps namespace-scoped brokers from the nodes' Pod ranges and addresses; without it, they are denied only if --namespace-broker-deny-cidr names them",
	},
	{
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"},
			ResourceNames: []string{"kubernetes"}, Verbs: []string{"get"}},
		Why: "reconcile keeps namespace-scoped brokers from the API server's endpoints; without it, only from the address it connects to",
	},
	{
		// What reconcile did to a record shows where kubectl users look for it:
		// Events about the record's ConfigMap; a repeat patches the Event's series.
		PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"},
			Verbs: []string{"create", "patch"}},
		Why: "reconcile records Events about the records it drives (kubectl get events, describe); without it, it records none",
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
	// Serve runs "reconcile --serve" from a Deployment instead of running
	// reconcile from a CronJob. MaxDuration 0 then leaves each run's bound
	// to reconcile (its --serve-interval).
	Serve bool
	// Replicas is the number of pods of each Deployment (Serve only). With
	// more than one, a PodDisruptionBudget keeps one of them running.
	Replicas int
	// Shards splits the records between this many CronJobs (or
	// Deployments), the i-th running reconcile --shard i/Shards. 1: no
	// split.
	Shards int
	// NamespaceBrokerAllowCIDRs and NamespaceBrokerDenyCIDRs are reconcile's
	// --namespace-broker-allow-cidr and --namespace-broker-deny-cidr.
	NamespaceBrokerAllowCIDRs, NamespaceBrokerDenyCIDRs []string
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
		MaxDuration: DefaultMaxDuration, Workers: DefaultWorkers, Replicas: 1, Shards: 1,
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
	if o.Shards < 1 || o.Shards > MaxShards {
		return fmt.Errorf("--shards must be between 1 and %d, not %d", MaxShards, o.Shards)
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 || len(o.Name) > MaxNameLength {
		return fmt.Errorf("--name %q is not valid: use lowercase letters, digits and '-', at most %d characters", o.Name, MaxNameLength)
	}
	if last := o.WorkloadName(o.Shards - 1); len(last) > MaxNameLength {
		return fmt.Errorf("--name %q is too long for %d shards: the workloads are named like %q, at most %d characters", o.Name, o.Shards, last, MaxNameLength)
	}
	if o.Serve {
		if o.Replicas < 1 {
			return fmt.Errorf("--replicas must be at least 1, not %d", o.Replicas)
		}
		if o.Replicas > 1 && o.Shards > 1 {
			return fmt.Errorf("--shards %d and --replicas %d cannot go together: the replicas of a Deployment split the records among themselves (a shard group); drop --shards and set --replicas to the number of reconcilers you want", o.Shards, o.Replicas)
		}
		if o.MaxDuration != 0 && o.MaxDuration < time.Second {
			return fmt.Errorf("--max-duration must be at least 1s, not %s", o.MaxDuration)
		}
	} else {
		if o.Replicas != 1 {
			return fmt.Errorf("--replicas %d needs --serve: a CronJob runs one reconcile at a time", o.Replicas)
		}
		if err := ValidateSchedule(o.Schedule); err != nil {
			return fmt.Errorf("--schedule %q: %w", o.Schedule, err)
		}
		if o.MaxDuration < time.Second {
			return fmt.Errorf("--max-duration must be at least 1s, not %s: a scheduled run must end", o.MaxDuration)
		}
	}
	if o.Workers < 1 {
		return fmt.Errorf("--workers must be at least 1, not %d", o.Workers)
	}
	if err := validateCIDRs("--namespace-broker-allow-cidr", o.NamespaceBrokerAllowCIDRs); err != nil {
		return err
	}
	return validateCIDRs("--namespace-broker-deny-cidr", o.NamespaceBrokerDenyCIDRs)
}

// WorkloadName is the name of the CronJob (or Deployment) of shard i: the
// installation's name, followed by "-i" when there are several shards.
func (o Options) WorkloadName(i int) string {
	if o.Shards <= 1 {
		return o.Name
	}
	return o.Name + "-" + strconv.Itoa(i)
}

// shardArgs is the --shard flag of shard i, if the work is split.
func (o Options) shardArgs(i int) []string {
	if o.Shards <= 1 {
		return nil
	}
	return []string{"--shard", strconv.Itoa(i) + "/" + strconv.Itoa(o.Shards)}
}

// catalogNamespaceArgs is the --catalog-namespace flag, if not the default.
func (o Options) catalogNamespaceArgs() []string {
	if o.CatalogNamespace != "" && o.CatalogNamespace != DefaultNamespace {
		return []string{"--catalog-namespace", o.CatalogNamespace}
	}
	return nil
}

// ShardGroup reports whether the installation runs a shard group: --serve with
// more than one replica.
func (o Options) ShardGroup() bool { return o.Serve && o.Replicas > 1 }

// ClusterName is the name of the ClusterRole and ClusterRoleBinding of an
// installation. Both are cluster-scoped, so the name carries the namespace:
// installations in several namespaces do not overwrite each other.
func ClusterName(namespace, name string) string {
	return "kubectl-catalog:" + namespace + ":" + name
}

// Command is the command line of the container of shard i's CronJob. A scheduled run
// goes on retrying for as long as --max-duration allows (--retry-horizon 0), unlike a
// run by hand, which ends when nothing can progress soon.
func (o Options) Command(i int) []string {
	cmd := []string{Binary, "reconcile", "-A",
		"--max-duration", shortDuration(o.MaxDuration), "--retry-horizon", "0", "--workers", strconv.Itoa(o.Workers), "-o", "json"}
	cmd = append(cmd, o.shardArgs(i)...)
	cmd = append(cmd, o.egressArgs()...)
	return append(cmd, o.catalogNamespaceArgs()...)
}

// ServeCommand is the command line of the container of shard i's
// Deployment (--serve). With several replicas, they are a shard group named
// after the Deployment.
func (o Options) ServeCommand(i int) []string {
	cmd := []string{Binary, "reconcile", "-A", "--serve", "--listen", ":" + strconv.Itoa(ServePort), "--workers", strconv.Itoa(o.Workers)}
	if o.MaxDuration > 0 {
		cmd = append(cmd, "--max-duration", shortDuration(o.MaxDuration))
	}
	if o.ShardGroup() {
		cmd = append(cmd, "--shard-group", o.WorkloadName(i))
	}
	cmd = append(cmd, o.shardArgs(i)...)
	cmd = append(cmd, o.egressArgs()...)
	return append(cmd, o.catalogNamespaceArgs()...)
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
