// Package doctor implements "kubectl catalog doctor": it prints the findings of the
// checks of pkg/doctor.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/doctor"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

var doctorLong = cmdutil.LongDesc(`
	Check that kubectl catalog can work here, and find what is stuck.

	doctor checks, in order:

	  - kubeconfig (shown only when it fails): the kubeconfig, --context and
	    the other connection flags can be loaded;
	  - cluster: the API server answers, and who you are to it;
	  - rbac: you, judged against the role docs/security.md gives you
	    ("kubectl catalog rbac"): kubectl-catalog-user in the current
	    namespace (kubectl-catalog-viewer for a reader, a warning), and
	    kubectl-catalog-admin or kubectl-catalog-viewer in the catalog
	    namespace; a permission of the role you lack fails, naming it and the
	    RoleBinding that grants the role. What your role leaves to reconcile
	    (a cluster broker's credentials, the calls your commands record for
	    it) is an INFO line, reconcile's, not yours; someone who may do
	    everything reconcile does is OK;
	  - broker: every broker registered in the catalog namespace and in the
	    current namespace answers its catalog within --broker-timeout, with the
	    credentials it is registered with (a cluster broker whose credentials
	    you may not read, as a user, is INFO: reconcile calls it); brokers
	    are checked eight at a
	    time, and all within three times --broker-timeout (a broker not
	    checked by then is a warning that says so);
	  - record: records with pending work that are stuck: failed three times
	    or more, failed for good, or deleted more than ten minutes ago and
	    still there; namespace: namespaces stuck Terminating because they
	    hold records that only reconcile can finish (a namespace-scoped
	    broker among them is kept until its instances are deprovisioned,
	    and doctor names them);
	  - reconcile: whether "kubectl catalog reconcile install" is in place in
	    --reconcile-namespace: each of its CronJobs (one per shard), when it
	    last ran and last succeeded, and each Deployment of --serve, how many
	    of its replicas are ready (--reconcile-name: one installation only);
	  - shard group: the members of each group of "reconcile --serve
	    --shard-group" (their Leases in the catalog namespace: holder, last
	    renewal, live or expired), with a warning for expired or malformed
	    Leases, or a single live member where the Deployment asks for more;
	  - trust: whether the records' trust policy is in force (the
	    ValidatingAdmissionPolicy and its binding, and a token ConfigMap in
	    the catalog namespace younger than both), not installed, or with a
	    stale token. Without it every record has an unverified author, and
	    reconcile refuses what needs its author's authority. With it, the
	    namespaces (every one you may list, or the current one) that still
	    hold records written before it, with how many, and the command that
	    makes them verified: "kubectl catalog adopt -n NAMESPACE".

	Each check is OK, INFO, WARN or FAIL; WARN and FAIL say how to fix
	them. doctor changes nothing. It exits 1 when a check failed, 0 otherwise
	(warnings included).`)

var doctorExample = cmdutil.Examples(`
	# Check the current namespace and the catalog namespace
	kubectl catalog doctor

	# Another namespace, with a shorter timeout for the brokers
	kubectl catalog doctor -n dev --broker-timeout 3s

	# For a script or a monitoring job
	kubectl catalog doctor -o json`)

// Status is the outcome of one check.
type Status = doctor.Severity

// Statuses of checks.
const (
	OK   = doctor.OK
	Info = doctor.Info
	Warn = doctor.Warn
	Fail = doctor.Fail
)

// Check is one line of the report: one finding of pkg/doctor.
type Check struct {
	// Name says what was checked, such as "broker catalog-system/acme".
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do when the status is not OK.
	Fix string `json:"fix,omitempty"`
}

// Report is every check, in order.
type Report struct {
	Checks []Check `json:"checks"`
}

// Failed reports whether a check failed.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Status == Fail })
}

// ReportOf is the report of findings, in their order.
func ReportOf(fs []doctor.Finding) Report {
	r := Report{Checks: make([]Check, 0, len(fs))}
	for _, f := range fs {
		r.Checks = append(r.Checks, Check{Name: f.Object, Status: f.Severity, Detail: f.Detail, Fix: f.Fix})
	}
	return r
}

// Options are the options of doctor.
type Options struct {
	BrokerTimeout time.Duration
	// Output is -o: json or yaml, a table without it.
	Output             *printers.OutputFlags
	ReconcileNamespace string
	ReconcileName      string

	Namespace        string
	CatalogNamespace string
	Server           string
	// ConfigErr is why the kubeconfig (or --context, --cluster, ...) could not be
	// loaded; Diagnose then reports it as the failing check, and nothing else.
	ConfigErr error
	// Explain tells a connection error with the server and context (nil: as it is).
	Explain func(error) error
	Core    kubernetes.Interface
	// Records reads the catalog's records.
	Records *records.Reader
	// Brokers probes the brokers: the engine, which calls no broker record it would not
	// call in its author's name (docs/security.md). doctor, run by someone with more
	// rights than whoever wrote the record, must not send credentials the author may not
	// read to a URL of their choosing.
	Brokers doctor.Prober
	Now     func() time.Time
	Streams cmdutil.IOStreams
}

// NewCmdDoctor returns the doctor command. runF, when not nil, is called with the
// completed options instead of Run (tests check the flags with it).
func NewCmdDoctor(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: newOutputFlags(), ReconcileNamespace: install.DefaultNamespace}
	cmd := &cobra.Command{
		Use:               "doctor",
		Short:             "Check the cluster, permissions, brokers and stuck records",
		Long:              doctorLong,
		Example:           doctorExample,
		Args:              cmdutil.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.BrokerTimeout, "broker-timeout", 10*time.Second, "How long to wait for each broker's catalog.")
	o.Output.AddFlags(cmd)
	fs.StringVar(&o.ReconcileNamespace, "reconcile-namespace", o.ReconcileNamespace, `Namespace of the "reconcile install" CronJobs and Deployments; doctor checks every one there.`)
	fs.StringVar(&o.ReconcileName, "reconcile-name", o.ReconcileName, `Check only the "reconcile install" installation of this --name (its CronJob per shard, or its Deployment), or the one CronJob or Deployment of this name.`)
	return cmd
}

// newOutputFlags is doctor's -o: json or yaml, a table without it.
func newOutputFlags() *printers.OutputFlags {
	return printers.NewFormatOutputFlags([]string{"json", "yaml"}, "", "Output format. One of: (json, yaml); default a table.", func(format string) error {
		return cmdutil.UsageErrorf("--output %q: use json or yaml (default: a table)", format)
	})
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	if o.BrokerTimeout <= 0 {
		return cmdutil.UsageErrorf("--broker-timeout must be positive, not %s", o.BrokerTimeout)
	}
	if o.Output != nil {
		if err := o.Output.Validate(); err != nil {
			return err
		}
	}
	if o.ReconcileNamespace == "" {
		return cmdutil.UsageErrorf("--reconcile-namespace must not be empty")
	}
	return nil
}

// Complete builds the clients: the engine, which reads the records and probes the
// brokers. A kubeconfig that cannot be loaded is no error here: it is the check that
// fails.
func (o *Options) Complete(f *cmdutil.Factory) error {
	o.CatalogNamespace, o.Now, o.Explain = f.CatalogNamespace, f.Now, f.ExplainClusterError
	ns, _, err := f.Namespace()
	if err != nil {
		o.ConfigErr = err
		return nil
	}
	cfg, err := f.RESTConfig()
	if err != nil {
		o.ConfigErr = err
		return nil
	}
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	eng, err := f.Engine(cmdutil.EngineOptions{})
	if err != nil {
		return err
	}
	records, err := f.Reader()
	if err != nil {
		return err
	}
	o.Namespace, o.Server, o.Core, o.Records, o.Brokers = ns, cfg.Host, core, records, eng
	return nil
}

// Run checks and prints the report; it fails (silently: the report says
// why) when a check failed.
func (o *Options) Run(ctx context.Context) error {
	r := o.Diagnose(ctx)
	if err := Print(o.Streams, o.Output.Format(), r); err != nil {
		return err
	}
	if r.Failed() {
		return &cmdutil.SilentError{Code: cmdutil.ExitError}
	}
	return nil
}

// Diagnose runs the checks of pkg/doctor. When the kubeconfig cannot be loaded, that is
// the one failing check.
func (o *Options) Diagnose(ctx context.Context) Report {
	if o.ConfigErr != nil {
		return ReportOf([]doctor.Finding{doctor.Kubeconfig(strings.TrimSuffix(o.ConfigErr.Error(), "; "+cmdutil.DoctorHint))})
	}
	return ReportOf(doctor.Run(ctx, doctor.Config{
		Namespace: o.Namespace, CatalogNamespace: o.CatalogNamespace, Server: o.Server,
		ReconcileNamespace: o.ReconcileNamespace, ReconcileName: o.ReconcileName, BrokerTimeout: o.BrokerTimeout,
		Core: o.Core, Records: o.Records, Brokers: o.Brokers, Unreachable: o.unreachable, Now: o.Now,
	}))
}

// unreachable says why the API server cannot be reached, naming the server (not the
// context: doctor's report says which it is), or "" when Explain cannot tell.
func (o *Options) unreachable(err error) string {
	if o.Explain == nil {
		return ""
	}
	var ce *cmdutil.ClusterError
	if !errors.As(o.Explain(err), &ce) {
		return ""
	}
	ce.Context = ""
	return strings.TrimSuffix(ce.Error(), "; "+cmdutil.DoctorHint)
}

// Print writes the report: a table and the fixes, JSON or YAML.
func Print(streams cmdutil.IOStreams, format string, r Report) error {
	out := streams.Out
	if format == "json" || format == "yaml" {
		return printers.PrintData(out, format, r)
	}
	t := printers.NewTable(out, "CHECK", "STATUS", "DETAIL")
	for _, c := range r.Checks {
		t.Append(c.Name, string(c.Status), c.Detail)
	}
	if err := t.Render(); err != nil {
		return err
	}
	var fixes []string
	for _, c := range r.Checks {
		if c.Status != OK && c.Fix != "" {
			fixes = append(fixes, iostreams.SafeText(fmt.Sprintf("  %s: %s", c.Name, c.Fix)))
		}
	}
	if len(fixes) > 0 {
		_, err := fmt.Fprintf(out, "\nTo fix:\n%s\n", strings.Join(fixes, "\n"))
		return err
	}
	return nil
}
