// Package migrate implements "kubectl catalog migrate svcat".
package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/migrate"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

var migrateLong = cmdutil.LongDesc(`
	Bring objects of another service catalog over to kubectl-catalog records.`)

var svcatLong = cmdutil.LongDesc(`
	Bring the brokers, instances and bindings of the retired Kubernetes Service
	Catalog (servicecatalog.k8s.io/v1beta1, served by its API server or by its
	CRDs) over to kubectl-catalog records, keeping every OSB id, so that they
	can be updated, unbound and deprovisioned again.

	ClusterServiceBrokers become cluster brokers in the catalog namespace and
	ServiceBrokers namespace brokers, recorded as "register" does: URL,
	credentials Secret, CA bundle, insecure flag, relist interval and catalog
	restrictions; their catalog is fetched (a GET). A cluster broker's
	credentials Secret must be in the catalog namespace (records never name a
	Secret of another namespace): a broker whose Secret is elsewhere is skipped
	until you copy the Secret there.

	ServiceInstances become instances marked provisioned under their
	spec.externalID, with their class and plan (by external name, id or old
	object), inline parameters and parametersFrom references. An asynchronous
	operation in progress is recorded with its operation key, for "reconcile"
	to poll; an instance being deleted is recorded as a pending deprovision.
	ServiceBindings become bindings under their spec.externalID; their
	credentials Secret is adopted as it is (its owner becomes the binding's
	record), its data untouched.

	Nothing but the catalog GET is sent to a broker. Instances that never got
	provisioned, and what the broker no longer offers, are skipped with the
	reason. The table says per object: migrated, already migrated, would
	migrate (--dry-run) or skipped; the command exits 1 when a skipped object
	needs a person. Running it again is safe: what is migrated is reported as
	already migrated, and a run that was interrupted is finished. Each old
	object migrated is marked with its record's uid (annotation
	catalog.kubectl-catalog.io/migrated-to): a record deleted since (deprovisioned,
	unbound or abandoned) is not made again.

	With --cleanup, once an object is migrated (or holds nothing at the
	broker), the old object's finalizers are removed and it is deleted; the
	credentials Secrets stay, owned by the new records. Check the migration
	first (see docs/svcat.md).`)

var svcatExample = cmdutil.Examples(`
	# See what would be migrated in every namespace
	kubectl catalog migrate svcat -A --dry-run

	# Migrate everything, then let reconcile finish operations in progress
	kubectl catalog migrate svcat -A
	kubectl catalog reconcile -A

	# Once the records are checked, delete the old objects
	kubectl catalog migrate svcat -A --cleanup`)

// Options are the options of "kubectl catalog migrate svcat".
type Options struct {
	AllNamespaces bool
	// DryRun is --dry-run: none or client (a server-side dry run is not offered).
	DryRun cmdutil.DryRunStrategy
	// Output is -o: table (the default), json or yaml.
	Output        *printers.OutputFlags
	Cleanup       bool
	BrokerTimeout time.Duration

	Namespace string
	Migrator  *migrate.Migrator
	Streams   cmdutil.IOStreams
}

// NewCmdMigrate returns the migrate command. runF, when not nil, is called with the
// completed options of "migrate svcat" instead of Run.
func NewCmdMigrate(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "migrate",
		Short:   "Bring objects of another service catalog over",
		Long:    migrateLong,
		Example: svcatExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdutil.UsageErrorf("%s needs a source: %q", cmd.CommandPath(), cmd.CommandPath()+" svcat")
		},
	}
	cmd.AddCommand(NewCmdSvcat(f, runF))
	return cmd
}

// NewCmdSvcat returns the "migrate svcat" command. runF, when not nil, is called with
// the completed options instead of Run.
func NewCmdSvcat(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: newOutputFlags()}
	cmd := &cobra.Command{
		Use:               "svcat [-n NAMESPACE | -A]",
		Short:             "Bring the retired Service Catalog's brokers, instances and bindings over",
		Long:              svcatLong,
		Example:           svcatExample,
		Args:              cmdutil.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Migrate the instances, bindings and namespace brokers of every namespace.")
	cmdutil.AddDryRunFlagOffering(cmd, &o.DryRun, `"client": say what would be done, without writing anything or calling a broker.`, cmdutil.DryRunNone, cmdutil.DryRunClient)
	o.Output.AddFlags(cmd)
	fs.BoolVar(&o.Cleanup, "cleanup", false, "Delete the old objects once migrated (their finalizers removed first); the credentials Secrets stay.")
	fs.DurationVar(&o.BrokerTimeout, "broker-timeout", brokerclient.DefaultTimeout, "How long to wait for a broker's catalog.")
	return cmd
}

// newOutputFlags is migrate svcat's -o: table (the default), json or yaml.
func newOutputFlags() *printers.OutputFlags {
	return printers.NewFormatOutputFlags([]string{"table", "json", "yaml"}, "", "Output format. One of: (table, json, yaml); default a table.", func(format string) error {
		return cmdutil.UsageErrorf("--output must be table, json or yaml, not %q", format)
	})
}

// Validate checks the flags without I/O; it changes nothing.
func (o *Options) Validate() error {
	if o.Output != nil {
		if err := o.Output.Validate(); err != nil {
			return err
		}
	}
	if !o.DryRun.Offered(cmdutil.DryRunNone, cmdutil.DryRunClient) {
		return cmdutil.UsageErrorf(`--dry-run must be "client" or "none", not %q (a server-side dry run is not offered)`, string(o.DryRun))
	}
	if o.BrokerTimeout <= 0 {
		return cmdutil.UsageErrorf("--broker-timeout must be positive")
	}
	return nil
}

// Complete builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	if !o.AllNamespaces {
		ns, err := f.UserNamespace()
		if err != nil {
			return err
		}
		o.Namespace = ns
	}
	mc, err := f.MigrateConfig(o.BrokerTimeout)
	if err != nil {
		return err
	}
	mc.ErrOut = o.Streams.ErrOut
	knobs, err := f.TestKnobs()
	if err != nil {
		return err
	}
	if n := knobs.MigrateKillAfter; n > 0 {
		writes := 0
		mc.AfterWrite = func() {
			if writes++; writes >= n {
				fmt.Fprintf(o.Streams.ErrOut, "test knob: killed after %d writes\n", writes)
				// Kill is SIGKILL where there are signals: no deferred call runs.
				if p, err := os.FindProcess(os.Getpid()); err == nil {
					_ = p.Kill()
				}
			}
		}
	}
	o.Migrator = migrate.New(mc)
	return nil
}

// Run migrates and prints the outcome.
func (o *Options) Run(ctx context.Context) error {
	opts := migrate.Options{Namespace: o.Namespace, DryRun: o.DryRun == cmdutil.DryRunClient, Cleanup: o.Cleanup}
	out, err := o.Migrator.Run(ctx, opts)
	if len(out) > 0 {
		if perr := o.print(out); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	if len(out) == 0 {
		fmt.Fprintln(o.Streams.ErrOut, "No Service Catalog objects found: nothing to migrate.")
		return nil
	}
	needs := 0
	for _, oc := range out {
		if oc.NeedsPerson {
			needs++
		}
	}
	if needs > 0 {
		fmt.Fprintf(o.Streams.ErrOut, "%s need a person (see REASON); the rest is done. Fix them, then run this again.\n",
			printers.Plural(needs, "object", "objects"))
		return &cmdutil.SilentError{Code: cmdutil.ExitError}
	}
	return nil
}

func (o *Options) print(out []migrate.Outcome) error {
	w := o.Streams.Out
	format := ""
	if o.Output != nil {
		format = o.Output.Format()
	}
	switch format {
	case "json":
		data, err := json.MarshalIndent(map[string]any{"items": out}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(data))
		return err
	case "yaml":
		data, err := yaml.Marshal(map[string]any{"items": out})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	t := printers.NewTable(w, "KIND", "NAMESPACE", "NAME", "RESULT", "REASON")
	for _, oc := range out {
		t.Append(oc.Kind, oc.Namespace, oc.Name, oc.Result, oc.Reason)
	}
	return t.Render()
}
