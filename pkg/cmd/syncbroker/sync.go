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
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

var syncBrokerLong = cmdutil.LongDesc(`
	Fetch a broker's catalog again and bring its classes and plans up to date.

	Classes and plans are matched by their OSB id, never by name: a renamed class
	is updated in place. New ones appear in the marketplace; ones the broker no
	longer offers are marked removed, kept while instances use them, and deleted
	when none do. If the broker cannot be reached, or its catalog is invalid,
	nothing is changed and the error is recorded in the broker's status.`)

var syncBrokerExample = cmdutil.Examples(`
	# Fetch the catalog of broker acme again
	kubectl catalog sync broker acme

	# The namespace-scoped broker of that name
	kubectl catalog sync broker team-broker --scope namespace`)

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

	// Set by Complete.
	Namespace string
	Engine    *engine.Engine
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
	_, err := cmdutil.ParseScope(o.Scope)
	return err
}

// Complete finds the namespace and builds the engine.
func (o *BrokerOptions) Complete(f *cmdutil.Factory) (err error) {
	o.Engine, o.Namespace, err = f.EngineIn(cmdutil.EngineOptions{CatalogTimeout: o.BrokerTimeout})
	return err
}

// Request is what the options ask the engine for.
func (o *BrokerOptions) Request() engine.SyncBrokerRequest {
	scope, _ := cmdutil.ParseScope(o.Scope)
	return engine.SyncBrokerRequest{Name: o.Name, Scope: scope, Namespace: o.Namespace,
		Note: func(line string) { fmt.Fprintln(o.Streams.ErrOut, line) }}
}

// Run syncs the broker.
func (o *BrokerOptions) Run(ctx context.Context) error {
	out, err := o.Engine.SyncBroker(ctx, o.Request())
	if err != nil {
		return err
	}
	b, res := out.Broker, out.Catalog
	for _, w := range res.Warnings {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: %s\n", w)
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
