// Package deprovision implements "kubectl catalog deprovision".
package deprovision

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

var deprovisionLong = cmdutil.LongDesc(`
	Deprovision a service instance: delete it at the broker, then drop its
	record.

	The instance's bindings are deleted first; an instance is never
	deprovisioned under a binding. The record is kept (marked for deletion)
	until the broker confirms, so a broker that is down or refuses is
	retried by "kubectl catalog reconcile" and the reason is shown by
	"kubectl catalog describe instance". When the broker fails the unbind of
	a binding, the command exits 1 naming the binding and the broker's
	answer; "kubectl catalog reconcile" retries the unbind, then
	deprovisions the instance.

	--abandon drops the records without calling the broker at all, for a
	broker that is gone for good: whatever the broker holds stays there.`)

var deprovisionExample = cmdutil.Examples(`
	# Deprovision an instance, asking for confirmation in a terminal
	kubectl catalog deprovision db

	# Deprovision without asking and wait until the broker has finished
	kubectl catalog deprovision db --yes --wait

	# See what would be deprovisioned, without deleting anything or calling the broker
	kubectl catalog deprovision db --dry-run=server

	# Forget an instance whose broker no longer exists
	kubectl catalog deprovision db --abandon --yes`)

// Options are the options of deprovision.
type Options struct {
	Name    string
	Yes     bool
	Abandon bool

	lifecycle.VerbOptions
}

// NewCmdDeprovision returns the deprovision command. runF, when not nil, is called with
// the completed Options instead of Run (tests check the flags with it).
func NewCmdDeprovision(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{VerbOptions: lifecycle.NewVerbOptions(f)}
	cmd := lifecycle.OnInstance(f, &cobra.Command{
		Use:     "deprovision NAME",
		Short:   "Deprovision a service instance",
		Long:    deprovisionLong,
		Example: deprovisionExample,
	}, &o.Name, o, runF)
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (needed when not in a terminal).")
	cmd.Flags().BoolVar(&o.Abandon, "abandon", false, "Drop the records without calling the broker; what the broker holds is left there.")
	o.AddFlags(cmd, "deprovision", "the instance record (and its bindings') to be marked for deletion")
	return cmd
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	if o.Abandon && o.Wait.Wait {
		return cmdutil.UsageErrorf("--abandon and --wait cannot be used together: abandoning does not call the broker, so there is nothing to wait for")
	}
	return o.ValidateFlags("deletes nothing")
}

// Run deprovisions the instance (engine.Engine.Deprovision) and prints the outcome.
func (o *Options) Run(ctx context.Context) error {
	return (&lifecycle.Deprovisioning{Name: o.Name, Yes: o.Yes, Abandon: o.Abandon, VerbOptions: o.VerbOptions}).Run(ctx)
}
