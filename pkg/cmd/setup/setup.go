// Package setup implements "kubectl catalog init": it sets the catalog up in a cluster
// (the catalog namespace, the cluster id and the records' trust policy).
package setup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

var initLong = cmdutil.LongDesc(`
	Set the catalog up in a cluster, once, as an administrator. It creates,
	or finds already in place:

	  - the catalog namespace (--catalog-namespace, catalog-system by
	    default), which holds the cluster-scoped brokers, their credentials,
	    the access rules and the trust token;
	  - the cluster id (ConfigMap "catalog-cluster-id" there), sent to
	    brokers with every request; stored once and never changed, so users
	    who may not write the catalog namespace can provision;
	  - the records' trust policy: the ValidatingAdmissionPolicy and
	    ValidatingAdmissionPolicyBinding "kubectl-catalog-record-author", with
	    which the API server refuses a record's spec written in another
	    user's name, and, once the API server enforces it, the token
	    ConfigMap "catalog-trust". With it, "kubectl catalog reconcile" (by
	    hand, or installed with "reconcile install") acts on each record with
	    its author's rights, and needs no flag.

	It installs no workload ("kubectl catalog reconcile install" does, and
	applies the same trust policy). It prints one line per object: what was
	created or found already in place, and why it is there. Running it again
	changes nothing that is in place: a trust token in place is kept, so
	records keep their verified author. (It is created anew only when the
	policy or its binding was missing or not as installed, since a token
	that existed meanwhile may be on forged records; it then lists the
	namespaces whose records that strands, each with its adopt command.)

	Without the rights to do so it changes nothing, and says which
	permissions are missing: an administrator runs "kubectl catalog init".
	Records written before the policy have an unverified author until their
	owner adopts them ("kubectl catalog adopt -n NAMESPACE").

	--dry-run=client prints the objects (-o yaml|json) without contacting the
	cluster; --dry-run=server has the API server validate them and store
	nothing.`)

var initExample = cmdutil.Examples(`
	# Set the catalog up in this cluster
	kubectl catalog init

	# Review the objects first
	kubectl catalog init --dry-run=client -o yaml

	# With another catalog namespace
	kubectl catalog init --catalog-namespace platform-catalog`)

// Options are the options of "kubectl catalog init".
type Options struct {
	// DryRun is --dry-run: none, client (print, contact nothing) or server.
	DryRun cmdutil.DryRunStrategy
	// Output is -o: json or yaml, a line per object without it.
	Output *printers.OutputFlags
	// EnforceTimeout bounds the wait for the API server to enforce the policy.
	EnforceTimeout time.Duration
	// SkipEnforcementCheck does not wait for the policy to be enforced: for fake
	// clients, which admit everything.
	SkipEnforcementCheck bool

	CatalogNamespace string
	Core             kubernetes.Interface
	// Records counts the records a token created anew strands; nil: not told.
	Records install.StampCounter
	Streams cmdutil.IOStreams
}

// NewOptions returns the options of a plain "kubectl catalog init" on core, for a
// command that offers it.
func NewOptions(streams cmdutil.IOStreams, catalogNamespace string, core kubernetes.Interface) *Options {
	if catalogNamespace == "" {
		catalogNamespace = install.DefaultNamespace
	}
	return &Options{DryRun: cmdutil.DryRunNone, Streams: streams, EnforceTimeout: install.DefaultEnforceTimeout,
		Output: newOutputFlags(), CatalogNamespace: catalogNamespace, Core: core}
}

func newOutputFlags() *printers.OutputFlags {
	return printers.NewFormatOutputFlags([]string{"json", "yaml"}, "", "Print the objects instead of a line per object. One of: (json, yaml).", func(format string) error {
		return cmdutil.UsageErrorf("--output %q: use json or yaml (default: a line per object)", format)
	})
}

// NewCmdInit returns the init command. runF, when not nil, is called with the completed
// options instead of Run.
func NewCmdInit(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := NewOptions(f.IOStreams, "", nil)
	cmd := &cobra.Command{
		Use:     "init",
		Short:   "Set the catalog up in a cluster: its namespace, the cluster id and the records' trust policy",
		Long:    initLong,
		Example: initExample,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	cmdutil.AddDryRunFlagOffering(cmd, &o.DryRun, `One of none, client (print, do not contact the cluster) or server (validate, store nothing).`,
		cmdutil.DryRunNone, cmdutil.DryRunClient, cmdutil.DryRunServer)
	o.Output.AddFlags(cmd)
	cmd.Flags().DurationVar(&o.EnforceTimeout, "enforce-timeout", o.EnforceTimeout, "How long to wait for the API server to enforce the trust policy before the token is written.")
	return cmd
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	if !o.DryRun.Offered(cmdutil.DryRunNone, cmdutil.DryRunClient, cmdutil.DryRunServer) {
		return cmdutil.UsageErrorf("--dry-run %q: use none, client or server", string(o.DryRun))
	}
	if o.EnforceTimeout <= 0 {
		return cmdutil.UsageErrorf("--enforce-timeout must be positive, not %s", o.EnforceTimeout)
	}
	return o.Output.Validate()
}

// Complete builds the client, unless nothing is sent to the cluster.
func (o *Options) Complete(f *cmdutil.Factory) error {
	if f.CatalogNamespace != "" {
		o.CatalogNamespace = f.CatalogNamespace
	}
	if o.DryRun == cmdutil.DryRunClient {
		return nil
	}
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	o.Core = core
	if o.Records == nil {
		r, err := f.Reader()
		if err != nil {
			return err
		}
		o.Records = r
	}
	return nil
}

// Run sets the catalog up, or prints what it would set up.
func (o *Options) Run(ctx context.Context) error {
	objs := install.BuildSetup(o.CatalogNamespace)
	if o.DryRun == cmdutil.DryRunClient {
		return install.PrintPlanned(o.Streams.Out, o.Output.Format(), objs.List())
	}
	missing, err := install.MissingForSetup(ctx, o.Core, o.CatalogNamespace)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("you may not set the catalog up in this cluster; missing permissions:\n  %s\nnothing was changed: an administrator runs \"kubectl catalog init\"",
			strings.Join(missing, "\n  "))
	}
	results, err := install.Setup(ctx, o.Core, objs, install.ApplyOptions{DryRun: o.DryRun == cmdutil.DryRunServer, EnforceTimeout: o.EnforceTimeout, SkipEnforcementCheck: o.SkipEnforcementCheck})
	suffix := ""
	if o.DryRun == cmdutil.DryRunServer {
		suffix = " (server dry run)"
	}
	if o.Output.Format() == "" {
		for _, r := range results {
			fmt.Fprintf(o.Streams.Out, "%s%s: %s\n", r.String(), suffix, install.Why(r))
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
		fmt.Fprintf(o.Streams.ErrOut, "the catalog is set up: \"kubectl catalog reconcile\" finishes interrupted work with each record's author's rights; records written before the trust policy are adopted by their owner with \"kubectl catalog adopt -n NAMESPACE\"\n")
	}
	return nil
}

// InForce reports whether the records' trust policy is in force in the cluster, and
// says why not. An error reading it counts as not in force.
func InForce(ctx context.Context, core kubernetes.Interface, catalogNamespace string) (bool, string) {
	st, err := trust.CheckPolicy(ctx, core, catalogNamespace)
	if err != nil {
		return false, err.Error()
	}
	return st.InForce(), st.Reason
}
