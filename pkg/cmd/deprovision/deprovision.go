// Package deprovision implements "kubectl catalog deprovision".
package deprovision

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

var deprovisionLong = cmdutil.LongDesc(`
	Deprovision a service instance: delete it at the broker, then drop its
	record.

	The instance's bindings are deleted first; an instance is never
	deprovisioned under a binding. The record is kept (marked for deletion)
	until the broker confirms, so a broker that is down or refuses is
	retried by "kubectl catalog reconcile" and the reason is shown by
	"kubectl catalog describe instance".

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
	Wait    lifecycle.WaitFlags
	DryRun  cmdutil.DryRunStrategy
	Output  *printers.OutputFlags

	Namespace string
	Store     *store.Store
	Engine    *catalog.Engine
	Prompter  prompt.Prompter
	Streams   cmdutil.IOStreams
}

// NewCmdDeprovision returns the deprovision command.
func NewCmdDeprovision(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:               "deprovision NAME",
		Short:             "Deprovision a service instance",
		Long:              deprovisionLong,
		Example:           deprovisionExample,
		Args:              lifecycle.ExactlyOneName,
		ValidArgsFunction: complete.First(complete.Instances(f)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (needed when not in a terminal).")
	cmd.Flags().BoolVar(&o.Abandon, "abandon", false, "Drop the records without calling the broker; what the broker holds is left there.")
	o.Wait.AddFlags(cmd.Flags(), "deprovision")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the instance record (and its bindings') to be marked for deletion")
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the flags without I/O.
func (o *Options) Validate() error {
	if o.Abandon && o.Wait.Wait {
		return cmdutil.UsageErrorf("--abandon and --wait cannot be used together: abandoning does not call the broker, so there is nothing to wait for")
	}
	if err := cmdutil.DryRunWithWait(o.DryRun, o.Wait.Wait, "deletes nothing"); err != nil {
		return err
	}
	if err := o.Wait.Validate(); err != nil {
		return err
	}
	if o.Output == nil {
		return nil
	}
	return o.Output.Validate()
}

// Complete builds the clients.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	o.Namespace = ns
	eng, err := f.Engine(cmdutil.EngineOptions{PollInterval: o.Wait.Interval})
	if err != nil {
		return err
	}
	o.Engine, o.Store = eng.Engine, eng.Store
	if o.Prompter == nil && o.Streams.CanPrompt() {
		o.Prompter = prompt.NewSurvey(o.Streams.In, o.Streams.Out, o.Streams.ErrOut)
	}
	return nil
}

// Run marks the instance for deletion and drives it.
func (o *Options) Run(ctx context.Context) error {
	inst, err := o.Store.Instances().Get(ctx, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	if len(inst.Spec.SharedWith) > 0 {
		return fmt.Errorf("instance %q is shared with namespace(s) %s, whose bindings depend on it: unshare it from each first (\"kubectl catalog unshare %s --from-namespace %s --yes\"), which removes their bindings; nothing was changed",
			o.Name, strings.Join(inst.Spec.SharedWith, ", "), o.Name, inst.Spec.SharedWith[0])
	}
	bindings, err := o.Store.Bindings().List(ctx, o.Namespace, store.Filter{Instance: o.Name})
	if err != nil {
		return err
	}
	what := fmt.Sprintf("instance %q (%s/%s, broker %q)", o.Name, inst.Spec.ClassExternalName, inst.Spec.PlanExternalName, inst.Spec.BrokerName)
	if inst.IsUserProvided() {
		what = fmt.Sprintf("user-provided instance %q (and its credentials Secret %s)", o.Name, inst.Spec.UserProvided.CredentialsSecret)
	}
	if len(bindings) > 0 {
		names := make([]string, 0, len(bindings))
		for _, b := range bindings {
			names = append(names, b.Name)
		}
		what += fmt.Sprintf(" and its bindings %s (their credentials Secrets too)", strings.Join(names, ", "))
	}
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, inst, bindings, what)
	}
	if o.Abandon {
		fmt.Fprintf(o.Streams.ErrOut, "WARNING: abandoning %s in namespace %q.\nWARNING: the broker is NOT called: whatever it holds for this instance stays there (and may still be billed).\n", what, o.Namespace)
	} else {
		fmt.Fprintf(o.Streams.ErrOut, "This deletes %s in namespace %q at the broker.\n", what, o.Namespace)
	}
	if ok, err := cmdutil.Confirm(o.Prompter, o.Streams.ErrOut, o.Yes, cmdutil.NeedsYes("deprovision")); !ok {
		return err
	}
	if o.Abandon {
		if err := o.Engine.AbandonInstance(ctx, inst); err != nil {
			return err
		}
		fmt.Fprintf(o.Streams.ErrOut, "Instance %q abandoned: its records are gone; the broker was not told.\n", o.Name)
		return nil
	}
	fmt.Fprintf(o.Streams.ErrOut, "Deprovisioning instance %q in namespace %q...\n", o.Name, o.Namespace)
	if err := o.Store.Instances().Delete(ctx, o.Namespace, o.Name); err != nil {
		return err
	}
	// The instance waits for its bindings: unbind them first, here, rather than leave
	// them to a later reconcile.
	for _, b := range bindings {
		if b.DeletionTimestamp == nil {
			if err := o.Store.Bindings().Delete(ctx, o.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
				return fmt.Errorf("marking binding %q for deletion: %w", b.Name, err)
			}
		}
		fmt.Fprintf(o.Streams.ErrOut, "Unbinding %q first...\n", b.Name)
		br, err := lifecycle.DriveBinding(ctx, o.Streams, o.Engine, o.Namespace, b.Name, "unbind", o.Wait)
		if err != nil {
			return fmt.Errorf("instance %q waits for its binding %q: %w", o.Name, b.Name, err)
		}
		if br.State == catalog.StateDeleted {
			fmt.Fprintf(o.Streams.ErrOut, "Binding %q is gone.\n", b.Name)
		}
	}
	r, err := lifecycle.Drive(ctx, o.Streams, o.Engine, o.Namespace, o.Name, "deprovision", o.Wait)
	if err != nil {
		return err
	}
	return lifecycle.Report(o.Streams, o.Output, r, o.Name, o.Namespace, "deprovision", o.Wait.Wait)
}

// printDryRun prints the instance that would be deprovisioned (or abandoned). With
// --dry-run=server the deletions of the instance and of its bindings are sent to the
// API server as a dry run; nothing is deleted, no broker is called, nothing is asked.
func (o *Options) printDryRun(ctx context.Context, inst *v1alpha1.ServiceInstance, bindings []*v1alpha1.ServiceBinding, what string) error {
	if o.DryRun == cmdutil.DryRunServer {
		dry := o.DryRun.Context(ctx)
		for _, b := range bindings {
			if err := o.Store.Bindings().Delete(dry, o.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
				return fmt.Errorf("binding %q would not be deleted: %w", b.Name, err)
			}
		}
		if err := o.Store.Instances().Delete(dry, o.Namespace, o.Name); err != nil {
			return fmt.Errorf("instance %q would not be deprovisioned: %w", o.Name, err)
		}
	}
	verb := "deprovisioned at the broker"
	if o.Abandon {
		verb = "abandoned (the broker not told)"
	}
	return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, inst, "deleted", fmt.Sprintf("%s in namespace %q would be %s", what, o.Namespace, verb))
}
