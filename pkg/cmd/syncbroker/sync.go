// Package syncbroker implements "kubectl catalog sync broker".
package syncbroker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

var syncBrokerLong = cmdutil.LongDesc(`
	Fetch a broker's catalog again and bring its classes and plans up to date.

	Classes and plans are matched by their OSB id, never by name: a renamed class
	is updated in place. New ones appear in the marketplace; ones the broker no
	longer offers are marked removed, kept while instances use them, and deleted
	when none do. If the broker cannot be reached, or its catalog is invalid,
	nothing is changed and the error is recorded in the broker's status.

	Syncing records the request in the broker's record as yours: you become
	the author of its URL and credentials Secret, and from then on that
	Secret goes to that URL on your authority (and parameters from Secrets of
	the namespace you may read go there with the calls through it). When
	another person wrote the record, sync broker first shows exactly that
	and asks (--yes: without asking; needed outside a terminal); a Secret
	you may not read yourself you cannot vouch for, and such a broker is
	refused. --dry-run shows it and changes nothing. The administrators'
	cluster brokers, in the catalog namespace, are trusted as they are.`)

var syncBrokerExample = cmdutil.Examples(`
	# Fetch the catalog of broker acme again
	kubectl catalog sync broker acme

	# The namespace-scoped broker of that name
	kubectl catalog sync broker team-broker --scope namespace

	# See what syncing another person's broker would make you vouch for
	kubectl catalog sync broker team-broker --scope namespace --dry-run`)

// NewCmdSync returns the sync command, parent of "sync broker". runF, when not nil, is
// called with the completed options of "sync broker" instead of their Run.
func NewCmdSync(f *cmdutil.Factory, runF func(*BrokerOptions) error) *cobra.Command {
	return cmdutil.Group(&cobra.Command{
		Use:   "sync",
		Short: "Fetch a broker's catalog again",
		Long:  "Fetch a broker's catalog again. See \"kubectl catalog sync broker --help\".",
		Example: cmdutil.Examples(`
			# Fetch the catalog of broker acme again
			kubectl catalog sync broker acme`),
	}, NewCmdSyncBroker(f, runF))
}

// BrokerOptions are the options of "kubectl catalog sync broker".
type BrokerOptions struct {
	Name          string
	Scope         string
	BrokerTimeout time.Duration
	DryRun        cmdutil.DryRunStrategy
	Yes           bool

	// Set by Complete.
	Namespace string
	Engine    *engine.Engine
	Prompter  prompt.Prompter
	Streams   cmdutil.IOStreams
}

// NewCmdSyncBroker returns the "sync broker" command. runF, when not nil, is called with
// the completed options instead of Run (tests check the flags' parsing with it).
func NewCmdSyncBroker(f *cmdutil.Factory, runF func(*BrokerOptions) error) *cobra.Command {
	o := &BrokerOptions{Streams: f.IOStreams}
	cmd := &cobra.Command{
		Use:               "broker NAME",
		Aliases:           []string{"brokers", "brk"},
		Short:             "Fetch a broker's catalog again",
		Long:              syncBrokerLong,
		Example:           syncBrokerExample,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: complete.First(complete.Brokers(f)),
		RunE:              cmdutil.RunENamed(f, &o.Name, o, runF),
	}
	cmdutil.AddScopeFlag(cmd, &o.Scope)
	cmd.Flags().DurationVar(&o.BrokerTimeout, "broker-timeout", brokerclient.DefaultTimeout, "How long to wait for the broker's answer.")
	cmdutil.AddDryRunFlagOffering(cmd, &o.DryRun, `Must be "none" or "client". client: show what syncing would make you vouch for, calling no broker and writing nothing. A bare --dry-run means client.`,
		cmdutil.DryRunNone, cmdutil.DryRunClient)
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Become the author of a broker record another person wrote without asking (needed when not in a terminal).")
	return cmd
}

// Validate checks the flags without any I/O.
func (o *BrokerOptions) Validate() error {
	if o.Name == "" {
		return cmdutil.UsageErrorf("a broker name is required")
	}
	if o.BrokerTimeout <= 0 {
		return cmdutil.UsageErrorf("--broker-timeout must be positive")
	}
	if !o.DryRun.Offered(cmdutil.DryRunNone, cmdutil.DryRunClient) {
		return cmdutil.UsageErrorf("--dry-run must be \"none\" or \"client\" for sync broker")
	}
	_, err := cmdutil.ParseScope(o.Scope)
	return err
}

// Complete finds the namespace and builds the engine.
func (o *BrokerOptions) Complete(f *cmdutil.Factory) (err error) {
	o.Engine, o.Namespace, err = f.EngineIn(cmdutil.EngineOptions{CatalogTimeout: o.BrokerTimeout})
	o.Prompter = f.Prompter(o.Streams, o.Prompter)
	return err
}

// Request is what the options ask the engine for.
func (o *BrokerOptions) Request() engine.SyncBrokerRequest {
	scope, _ := cmdutil.ParseScope(o.Scope)
	return engine.SyncBrokerRequest{Name: o.Name, Scope: scope, Namespace: o.Namespace, DryRun: o.DryRun.Engine(),
		Note: func(line string) { fmt.Fprintln(o.Streams.ErrOut, iostreams.SafeText(line)) }}
}

// Run syncs the broker, once the user confirmed what that makes her vouch for when
// another person wrote its record.
func (o *BrokerOptions) Run(ctx context.Context) error {
	req := o.Request()
	req.Confirm = func(v engine.Vouch) error {
		return cmdutil.ConfirmVouches(o.Prompter, o.Streams.ErrOut, o.Yes, "sync broker")([]engine.Vouch{v})
	}
	out, err := o.Engine.SyncBroker(ctx, req)
	if err != nil {
		return err
	}
	if o.DryRun.Enabled() {
		b := out.Broker
		if out.Vouch != nil {
			cmdutil.PrintVouches(o.Streams.ErrOut, []engine.Vouch{*out.Vouch})
		}
		fmt.Fprintf(o.Streams.Out, "broker %q would be synced: its catalog fetched from %q (dry run: nothing was written, no broker was called)\n", b.Name, b.Spec.URL)
		return nil
	}
	b, res := out.Broker, out.Catalog
	for _, w := range res.Warnings {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: %s\n", iostreams.SafeText(fmt.Sprint(w)))
	}
	fmt.Fprintf(o.Streams.Out, "broker %q synced: %s and %s offered; %s\n", b.Name,
		printers.Plural(res.Classes, "class", "classes"), printers.Plural(res.Plans, "plan", "plans"), Summary(res))
	if len(res.Kept) > 0 {
		fmt.Fprintf(o.Streams.Out, "kept while instances use them (removed from the broker): %s\n", strings.Join(res.Kept, ", "))
	}
	return nil
}

// Summary says what a sync changed, in one line.
func Summary(r *catalogsync.Result) string {
	if r.Unchanged() {
		return "no changes"
	}
	var parts []string
	add := func(n int, one, many string) {
		if n > 0 {
			parts = append(parts, printers.Plural(n, one, many))
		}
	}
	add(r.ClassesAdded, "class added", "classes added")
	add(r.ClassesUpdated, "class updated", "classes updated")
	add(r.ClassesRemoved, "class marked removed", "classes marked removed")
	add(r.ClassesDeleted, "class deleted", "classes deleted")
	add(r.PlansAdded, "plan added", "plans added")
	add(r.PlansRemoved, "plan marked removed", "plans marked removed")
	add(r.PlansDeleted, "plan deleted", "plans deleted")
	return strings.Join(parts, ", ")
}
