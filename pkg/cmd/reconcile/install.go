package reconcile

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/version"
)

var installLong = cmdutil.LongDesc(`
	Run "kubectl catalog reconcile -A" in the cluster: on a schedule from a
	CronJob, or with --serve continuously from a Deployment.

	This creates or updates, with server-side apply (field manager
	"kubectl-catalog"):

	  - the namespace (--namespace), if it does not exist;
	  - a ServiceAccount (--name);
	  - a ClusterRole and a ClusterRoleBinding named
	    "kubectl-catalog:NAMESPACE:NAME" that grant the ServiceAccount exactly
	    what reconcile uses, and nothing more: ConfigMaps (the records) in
	    every namespace; get, create, update and delete of Secrets (broker
	    credentials, parameters from Secrets, binding credentials); get of
	    Namespaces (the OSB context); SelfSubjectReviews (the originating
	    identity); get and update of Deployments, StatefulSets, DaemonSets,
	    CronJobs and Jobs (removing a binding's projection on unbind);
	  - a CronJob (--name) that runs one reconcile at a time, each bounded by
	    --max-duration and by a Job deadline a little above it, never
	    retried within the same schedule, with small resource requests and a
	    locked-down security context (non-root uid 65532, read-only root
	    filesystem, no privilege escalation, no capabilities, the runtime's
	    default seccomp profile);
	  - or, with --serve, a Deployment (--name) of --replicas pods running
	    "reconcile --serve", with the same pod, readiness and liveness probes
	    on /healthz (port 8080, named "http", which also serves /metrics),
	    and a PodDisruptionBudget keeping one pod when --replicas is above 1;
	    above 1, the pods are a shard group (--shard-group NAME) that split the
	    records among the live ones, and a Role and RoleBinding in the
	    catalog namespace let them get, list, watch, create, update and
	    delete Leases there, and nowhere else;
	  - with --shards N, N CronJobs (or Deployments) NAME-0 ... NAME-N-1, the
	    i-th running reconcile --shard i/N, so that they split the records
	    (not with --replicas above 1, whose pods split them by themselves);
	  - the records' trust policy: the ValidatingAdmissionPolicy and
	    ValidatingAdmissionPolicyBinding "kubectl-catalog-record-author",
	    with which the API server refuses a write that creates a record,
	    changes its spec or its author annotations unless they name the user
	    making it; once the API server enforces it, the ConfigMap
	    "catalog-trust" in the catalog namespace (--catalog-namespace) with a
	    random token. A token in place is kept; it is created anew only when
	    the policy or its binding had to be created or changed (a token that
	    existed meanwhile may be on forged records), and the namespaces whose
	    records that strands are then listed, each with its adopt command.
	    reconcile acts in a record's author's name
	    (reads the Secrets it names, updates the workloads it projects into)
	    only when the record carries the current token. The ClusterRole
	    therefore also allows creating SubjectAccessReviews (whether the
	    author may do it) and reading that policy and binding, by name.

	--no-trust-policy leaves the policy out, for clusters without the
	ValidatingAdmissionPolicy API (before Kubernetes 1.30): every record then
	has an unverified author, and reconcile refuses what needs its author's
	authority.

	Without --image it runs the image of this very build,
	REGISTRY/kubectl-catalog:VERSION, the registry set when the release was
	built; a development build has none and asks for --image: an image with
	the kubectl-catalog binary on its PATH, such as the one "make image
	REGISTRY=..." builds and pushes. In the pod, reconcile uses the
	ServiceAccount's token; the runs' summaries are in the Jobs' logs (-o
	json), or the Deployment's.

	Running it again updates the objects: only what changed is written, and
	the workloads the installation no longer has (fewer shards, a CronJob
	replaced by a Deployment or the other way round, a budget for one
	replica) are deleted ("pruned").
	--dry-run=client prints the objects (-o yaml|json) without contacting the
	cluster; --dry-run=server has the API server validate them and store
	nothing. "kubectl catalog reconcile uninstall" removes them again, all but
	the trust policy and its token: the catalog's set-up, which its
	--remove-trust-policy also removes.`)

var installExample = cmdutil.Examples(`
	# Reconcile every five minutes in catalog-system, with this release's image
	kubectl catalog reconcile install

	# With an image of your own
	kubectl catalog reconcile install --image registry.example/kubectl-catalog:v0.1.0

	# Review the manifests first, or keep them in version control
	kubectl catalog reconcile install --dry-run=client -o yaml

	# Continuously, from a Deployment of three pods splitting the records (a shard
	# group, with a PodDisruptionBudget)
	kubectl catalog reconcile install --serve --replicas 3

	# The records split between three CronJobs
	kubectl catalog reconcile install --shards 3

	# A cluster without the ValidatingAdmissionPolicy API (records stay unverified)
	kubectl catalog reconcile install --no-trust-policy

	# Every minute, bounded to 50 seconds, 16 records at once
	kubectl catalog reconcile install --schedule "* * * * *" --max-duration 50s --workers 16`)

// InstallOptions are the options of "reconcile install".
type InstallOptions struct {
	install.Options
	// DryRun is --dry-run: none, client (print, contact nothing) or server.
	DryRun cmdutil.DryRunStrategy
	// Output is -o: json or yaml, a line per object without it.
	Output *printers.OutputFlags

	Core kubernetes.Interface
	// Records counts the records a token created anew strands; nil: not told.
	Records install.StampCounter
	Streams cmdutil.IOStreams
}

// NewCmdInstall returns the "reconcile install" command.
func NewCmdInstall(f *cmdutil.Factory) *cobra.Command {
	o := &InstallOptions{Options: install.Defaults(), DryRun: cmdutil.DryRunNone, Output: newInstallOutputFlags(), Streams: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "install [--image IMAGE] [--serve [--replicas N]] [--shards N]",
		Short:   "Run reconcile in the cluster from a CronJob or a Deployment",
		Long:    installLong,
		Example: installExample,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Defaults(cmd.Flags().Changed); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Image, "image", "", "Image to run, with the kubectl-catalog binary on its PATH (default: this build's own image, REGISTRY/kubectl-catalog:VERSION; a development build has none).")
	fs.StringVar(&o.Schedule, "schedule", o.Schedule, "When to run, in the five-field cron format (minute hour day-of-month month day-of-week).")
	fs.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "Namespace of the ServiceAccount and the CronJob (created if missing).")
	fs.StringVar(&o.Name, "name", o.Name, "Name of the ServiceAccount and the CronJob.")
	fs.DurationVar(&o.MaxDuration, "max-duration", o.MaxDuration, "Bound of each run (reconcile --max-duration); keep it below the schedule's interval.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "How many broker calls each run makes at once (reconcile --workers).")
	fs.BoolVar(&o.Serve, "serve", false, "Run \"reconcile --serve\" from a Deployment, continuously, instead of a CronJob.")
	fs.IntVar(&o.Replicas, "replicas", o.Replicas, "With --serve: pods of the Deployment; above 1, they split the records as a shard group (with a Role on Leases in the catalog namespace, and a PodDisruptionBudget that keeps one).")
	fs.IntVar(&o.Shards, "shards", o.Shards, "Split the records between this many CronJobs (or Deployments) NAME-0..NAME-N-1, the i-th running reconcile --shard i/N.")
	fs.StringSliceVar(&o.NamespaceBrokerAllowCIDRs, "namespace-broker-allow-cidr", nil, "Ranges (CIDRs or addresses) reconcile may call namespace-scoped brokers at although its egress rule denies them (reconcile --namespace-broker-allow-cidr).")
	fs.StringSliceVar(&o.NamespaceBrokerDenyCIDRs, "namespace-broker-deny-cidr", nil, "Ranges reconcile may not call namespace-scoped brokers at besides loopback, link-local and the API server: give the cluster's Service and Pod ranges (reconcile --namespace-broker-deny-cidr).")
	fs.BoolVar(&o.NoTrustPolicy, "no-trust-policy", false, "Do not install the records' trust policy (for clusters without the ValidatingAdmissionPolicy API): records stay unverified.")
	cmdutil.AddDryRunFlagOffering(cmd, &o.DryRun, `One of none, client (print, do not contact the cluster) or server (validate, store nothing).`,
		cmdutil.DryRunNone, cmdutil.DryRunClient, cmdutil.DryRunServer)
	o.Output.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("schedule", cobra.FixedCompletions([]string{"*/5 * * * *", "*/15 * * * *", "@hourly"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("replicas", cobra.FixedCompletions([]string{"1", "2", "3"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("shards", cobra.FixedCompletions([]string{"1", "2", "3", "4"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// newInstallOutputFlags is "reconcile install"'s -o: json or yaml, a line per object
// without it.
func newInstallOutputFlags() *printers.OutputFlags {
	return printers.NewFormatOutputFlags([]string{"json", "yaml"}, "", "Print the objects instead of a line per object. One of: (json, yaml).", func(format string) error {
		return cmdutil.UsageErrorf("--output %q: use json or yaml (default: a line per object)", format)
	})
}

// Defaults fills what depends on other flags: the image of this build when
// --image is not given, and with --serve no --max-duration of its own unless
// given (reconcile --serve bounds each run by its interval). changed says
// whether a flag was given.
func (o *InstallOptions) Defaults(changed func(name string) bool) error {
	if o.Serve {
		if changed("schedule") {
			return cmdutil.UsageErrorf("--schedule is for the CronJob: --serve runs continuously; drop --schedule")
		}
		if !changed("max-duration") {
			o.MaxDuration = 0
		}
	} else if changed("replicas") {
		return cmdutil.UsageErrorf("--replicas needs --serve: a CronJob runs one reconcile at a time (use --shards to split the work)")
	}
	if !changed("image") {
		image, err := version.DefaultImage()
		if err != nil {
			return cmdutil.UsageErrorf("%v: pass --image with an image that has kubectl-catalog on its PATH (\"make image REGISTRY=...\" builds and pushes one)", err)
		}
		o.Image = image
	}
	return nil
}

// Validate checks the flags without I/O.
func (o *InstallOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	if !o.DryRun.Offered(cmdutil.DryRunNone, cmdutil.DryRunClient, cmdutil.DryRunServer) {
		return cmdutil.UsageErrorf("--dry-run %q: use none, client or server", string(o.DryRun))
	}
	if o.Output == nil {
		return nil
	}
	return o.Output.Validate()
}

// Complete builds the client, unless nothing is sent to the cluster.
func (o *InstallOptions) Complete(f *cmdutil.Factory) error {
	o.CatalogNamespace = f.CatalogNamespace
	if o.DryRun == cmdutil.DryRunClient {
		return nil
	}
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	o.Core = core
	if !o.NoTrustPolicy && o.Records == nil {
		records, err := f.StampCounter()
		if err != nil {
			return err
		}
		o.Records = records
	}
	return nil
}

// noTrustWarning is printed whenever the trust policy is left out.
const noTrustWarning = `WARNING: --no-trust-policy: the records' trust policy is not installed. Anyone who may write ConfigMaps can forge a record's author,
so every record has an unverified author and reconcile refuses what needs its author's authority (reading the Secrets a record names,
updating the workloads it projects into). Install the policy once the cluster has the ValidatingAdmissionPolicy API (Kubernetes 1.30+).
`

// Run applies the objects, or prints them.
func (o *InstallOptions) Run(ctx context.Context) error {
	if o.NoTrustPolicy {
		fmt.Fprint(o.Streams.ErrOut, noTrustWarning)
	}
	objs := install.Build(o.Options)
	if o.DryRun == cmdutil.DryRunClient {
		return install.PrintPlanned(o.Streams.Out, o.Output.Format(), objs.List())
	}
	results, err := install.Apply(ctx, o.Core, objs, install.ApplyOptions{DryRun: o.DryRun == cmdutil.DryRunServer})
	suffix := ""
	if o.DryRun == cmdutil.DryRunServer {
		suffix = " (server dry run)"
	}
	if o.Output.Format() == "" {
		for _, r := range results {
			fmt.Fprintln(o.Streams.Out, r.String()+suffix)
		}
	}
	if old := install.Replaced(results); old != "" {
		install.WarnRenewed(ctx, o.Streams.ErrOut, o.Records, old, o.DryRun.Enabled())
	}
	if err != nil {
		return err
	}
	if o.Output.Format() != "" {
		return install.WriteManifests(o.Streams.Out, o.Output.Format(), install.Served(results))
	}
	if !o.DryRun.Enabled() {
		if o.Serve {
			fmt.Fprintf(o.Streams.ErrOut, "reconcile runs continuously in namespace %q (image %s); see it with \"kubectl get pods -n %s -l %s=%s\" and its logs\n",
				o.Namespace, o.Image, o.Namespace, install.LabelInstallation, o.Name)
		} else {
			fmt.Fprintf(o.Streams.ErrOut, "reconcile runs on schedule %q in namespace %q (image %s); see the runs with \"kubectl get jobs -n %s -l %s=reconcile\"\n",
				o.Schedule, o.Namespace, o.Image, o.Namespace, install.LabelComponent)
		}
		if !o.NoTrustPolicy {
			fmt.Fprintf(o.Streams.ErrOut, "the records' trust policy is in force; records written before it have an unverified author until their owner adopts them (\"kubectl catalog adopt -n NAMESPACE\"; \"kubectl catalog doctor\" lists the namespaces)\n")
		}
	}
	return nil
}

var uninstallLong = cmdutil.LongDesc(`
	Remove what "kubectl catalog reconcile install" created: its CronJobs
	(their Jobs and Pods go with them) or Deployments and
	PodDisruptionBudgets, the ClusterRoleBinding, the ClusterRole and the
	ServiceAccount.

	The records' trust policy and its token are kept: they are the
	catalog's set-up ("kubectl catalog init"), not the reconcile runner's,
	and cluster-wide. Records keep their verified author, and
	"reconcile install" run again (or "kubectl catalog init") finds the
	token in place and keeps it.

	--remove-trust-policy also removes the catalog's set-up of the trust
	policy: the token ConfigMap "catalog-trust" in the catalog namespace
	first, then the ValidatingAdmissionPolicyBinding and
	ValidatingAdmissionPolicy "kubectl-catalog-record-author". Every record
	then has an unverified author, and reconcile refuses what needs its
	author's authority. Installing the policy again makes a new token, so
	the records written until then stay unverified until each namespace's
	owner adopts them ("kubectl catalog adopt -n NAMESPACE"): before it
	deletes anything, it lists those namespaces, with their adopt command.

	--keep-trust-policy, what uninstall does anyway, is accepted and
	changes nothing (deprecated).

	The namespace is kept: it holds the catalog's records. Objects already
	gone are skipped. Records with pending work stay pending until
	"kubectl catalog reconcile" runs again, by hand or installed anew. In a
	terminal it asks for confirmation; otherwise --yes is needed.`)

var uninstallExample = cmdutil.Examples(`
	# Stop reconciling from the cluster (the trust policy and its token stay)
	kubectl catalog reconcile uninstall

	# The same in a script
	kubectl catalog reconcile uninstall --yes

	# One of several installations
	kubectl catalog reconcile uninstall --namespace ops --name reconcile-shard-0 --yes

	# Also undo the catalog's trust policy set-up (lists the namespaces whose records it strands)
	kubectl catalog reconcile uninstall --remove-trust-policy`)

// UninstallOptions are the options of "reconcile uninstall".
type UninstallOptions struct {
	Namespace string
	Name      string
	Yes       bool
	// RemoveTrustPolicy also removes the records' trust policy and its token.
	RemoveTrustPolicy bool
	// KeepTrustPolicy is the deprecated --keep-trust-policy: what uninstall does anyway.
	KeepTrustPolicy bool
	// CatalogNamespace holds the trust token.
	CatalogNamespace string

	Core kubernetes.Interface
	// Records counts the records a removal of the trust policy strands; nil: not told.
	Records  install.StampCounter
	Prompter prompt.Prompter
	Streams  cmdutil.IOStreams
}

// NewCmdUninstall returns the "reconcile uninstall" command.
func NewCmdUninstall(f *cmdutil.Factory) *cobra.Command {
	o := &UninstallOptions{Namespace: install.DefaultNamespace, Name: install.DefaultName, Streams: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "uninstall",
		Short:   "Remove the reconcile CronJobs or Deployments and their permissions",
		Long:    uninstallLong,
		Example: uninstallExample,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "Namespace of the installation.")
	fs.StringVar(&o.Name, "name", o.Name, "Name of the installation (its ServiceAccount; its CronJobs and Deployments are found by it).")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (needed when not in a terminal).")
	fs.BoolVar(&o.RemoveTrustPolicy, "remove-trust-policy", false, "Also remove the records' trust policy and its token (cluster-wide, set up by \"kubectl catalog init\"): every record loses its verified author until its namespace's owner adopts it under a new policy.")
	fs.BoolVar(&o.KeepTrustPolicy, "keep-trust-policy", false, "Keep the records' trust policy and its token (the default now).")
	_ = fs.MarkDeprecated("keep-trust-policy", "the trust policy and its token are kept by default; --remove-trust-policy removes them")
	return cmd
}

// Validate checks the flags without I/O.
func (o *UninstallOptions) Validate() error {
	opts := install.Defaults()
	opts.Image, opts.Namespace, opts.Name = "-", o.Namespace, o.Name
	if err := opts.Validate(); err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	if o.RemoveTrustPolicy && o.KeepTrustPolicy {
		return cmdutil.UsageErrorf("--remove-trust-policy and --keep-trust-policy contradict each other: the trust policy is kept by default, so drop --keep-trust-policy")
	}
	return nil
}

// Complete builds the clients and, in a terminal, the prompter.
func (o *UninstallOptions) Complete(f *cmdutil.Factory) error {
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	o.Core, o.CatalogNamespace = core, f.CatalogNamespace
	if o.RemoveTrustPolicy && o.Records == nil {
		records, err := f.StampCounter()
		if err != nil {
			return err
		}
		o.Records = records
	}
	o.Prompter = f.Prompter(o.Streams, o.Prompter)
	return nil
}

// Run asks for confirmation and deletes the objects.
func (o *UninstallOptions) Run(ctx context.Context) error {
	cluster := install.ClusterName(o.Namespace, o.Name)
	fmt.Fprintf(o.Streams.ErrOut, "This deletes the CronJobs, Deployments and PodDisruptionBudgets of installation %q and ServiceAccount %q in namespace %q, and ClusterRole and ClusterRoleBinding %q.\n",
		o.Name, o.Name, o.Namespace, cluster)
	catalogNS := o.CatalogNamespace
	if catalogNS == "" {
		catalogNS = install.DefaultNamespace
	}
	if !o.RemoveTrustPolicy {
		fmt.Fprintf(o.Streams.ErrOut, "The records' trust policy %q and its token ConfigMap %s/%s are kept (the catalog's set-up): records keep their verified author; --remove-trust-policy removes them.\n",
			trust.PolicyName, catalogNS, trust.ConfigMapName)
	} else if err := o.warnStranded(ctx, catalogNS); err != nil {
		return err
	}
	if ok, err := cmdutil.Confirm(o.Prompter, o.Streams.ErrOut, o.Yes, cmdutil.NeedsYes("reconcile uninstall")); !ok {
		return err
	}
	var results []install.Result
	var err error
	if o.RemoveTrustPolicy {
		results, err = install.UninstallTrust(ctx, o.Core, catalogNS)
	}
	if err == nil {
		var more []install.Result
		more, err = install.Uninstall(ctx, o.Core, o.Namespace, o.Name, catalogNS)
		results = append(results, more...)
	}
	for _, r := range results {
		fmt.Fprintln(o.Streams.Out, r.String())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Streams.ErrOut, "Namespace %q is kept: it holds the catalog's records. Pending work waits for the next \"kubectl catalog reconcile\".\n", o.Namespace)
	return nil
}

// warnStranded says, before --remove-trust-policy removes the policy and its token,
// what that strands: the namespaces holding records stamped with the token now in
// force, each with the command that adopts them once a policy is installed again.
func (o *UninstallOptions) warnStranded(ctx context.Context, catalogNS string) error {
	fmt.Fprintf(o.Streams.ErrOut, "With --remove-trust-policy it also deletes the records' trust policy %q and its token ConfigMap %s/%s: every record then has an unverified author,\n"+
		"and reconcile refuses what needs its author's authority. \"kubectl catalog init\" installs the policy again with a new token: the records written until now\n"+
		"stay unverified until each namespace's owner adopts them.\n",
		trust.PolicyName, catalogNS, trust.ConfigMapName)
	token, err := install.CurrentToken(ctx, o.Core, catalogNS)
	if err != nil {
		return err
	}
	if token == "" {
		fmt.Fprintf(o.Streams.ErrOut, "There is no token in force: no record loses a verified author.\n")
		return nil
	}
	lines, err := install.Stranded(ctx, o.Records, token)
	install.WriteStranded(o.Streams.ErrOut, "It strands the records of these namespaces (each one's owner adopts them once the policy is installed again)",
		"No record carries the token in force: it strands none.", lines, err)
	return nil
}
