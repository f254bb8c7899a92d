// Package deregister implements "kubectl catalog deregister".
package deregister

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

var deregisterLong = cmdutil.LongDesc(`
	Deregister a service broker: delete its record and its classes and plans.

	The broker is looked up in the current namespace (namespace scope) and in the
	catalog namespace (cluster scope). Deregistering is refused while instances
	of the broker's classes exist, and the command lists them: deprovision them
	first. --force deregisters anyway; the instances then stay as records that
	can no longer be managed through the broker until it is registered again.
	The broker is marked as being deregistered before its instances are looked
	for, so a provision, update or bind that starts meanwhile is refused rather
	than sent; an interrupted deregister leaves the mark, and running it again
	finishes it.

	A namespace-scoped broker carries a finalizer, and so does its credentials
	Secret, while instances of it exist (so that deleting the namespace keeps
	them until reconcile has deprovisioned the instances); deregister removes
	both, and the Secret's finalizer only if no other broker uses the Secret.
	The Secret itself is not deleted.

	Nothing is sent to the broker: it keeps whatever it holds.`)

var deregisterExample = cmdutil.Examples(`
	# Deregister a broker and remove its classes and plans from the marketplace
	kubectl catalog deregister acme

	# Deregister the namespace-scoped broker of that name, even though instances use it
	kubectl catalog deregister team-broker --scope namespace --force

	# See what deregistering acme would remove, checked by the API server, changing nothing
	kubectl catalog deregister acme --dry-run=server`)

// Options are the options of "kubectl catalog deregister".
type Options struct {
	Name   string
	Scope  string
	Force  bool
	DryRun cmdutil.DryRunStrategy
	Output *printers.OutputFlags

	// Set by Complete.
	Namespace string
	Engine    *engine.Engine
	Streams   cmdutil.IOStreams
}

// NewCmdDeregister returns the deregister command. runF, when not nil, is called with the
// completed options instead of Run (tests check the flags' parsing with it).
func NewCmdDeregister(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:               "deregister NAME",
		Short:             "Deregister a service broker and remove its classes",
		Long:              deregisterLong,
		Example:           deregisterExample,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: complete.First(complete.Brokers(f)),
		RunE:              cmdutil.RunENamed(f, &o.Name, o, runF),
	}
	cmdutil.AddScopeFlag(cmd, &o.Scope)
	cmd.Flags().BoolVar(&o.Force, "force", false, "Deregister even though instances of the broker's classes exist.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the broker record to be deleted, with its classes and plans")
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the arguments and flags without any I/O.
func (o *Options) Validate() error {
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return cmdutil.UsageErrorf("%q is not a valid broker name: %s", o.Name, strings.Join(errs, "; "))
	}
	if _, err := cmdutil.ParseScope(o.Scope); err != nil {
		return err
	}
	if o.Output == nil {
		return nil
	}
	return o.Output.Validate()
}

// Complete finds the namespace and builds the engine.
func (o *Options) Complete(f *cmdutil.Factory) (err error) {
	o.Engine, o.Namespace, err = f.EngineIn(cmdutil.EngineOptions{})
	return err
}

// Request is what the options ask the engine for.
func (o *Options) Request() engine.DeregisterRequest {
	return lifecycle.DeregisterRequest(o.Name, o.Scope, o.Namespace, o.Force, o.DryRun.Engine(), o.Streams.ErrOut)
}

// Run deregisters the broker.
func (o *Options) Run(ctx context.Context) error {
	return lifecycle.Deregister(ctx, o.Engine, o.Streams, o.Output, o.DryRun, o.Request())
}
