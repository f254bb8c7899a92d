// Package deregister implements "kubectl catalog deregister".
package deregister

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/catalogcmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

var deregisterLong = cmdutil.LongDesc(`
	Deregister a service broker: delete its record and its classes and plans.

	The broker is looked up in the current namespace (namespace scope) and in the
	catalog namespace (cluster scope). Deregistering is refused while instances
	of the broker's classes exist, and the command lists them: deprovision them
	first. --force deregisters anyway; the instances then stay as records that
	can no longer be managed through the broker until it is registered again.

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

	Namespace        string
	CatalogNamespace string
	Store            *store.Store
	Streams          cmdutil.IOStreams
}

// NewCmdDeregister returns the deregister command.
func NewCmdDeregister(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
	cmd := &cobra.Command{
		Use:               "deregister NAME",
		Short:             "Deregister a service broker and remove its classes",
		Long:              deregisterLong,
		Example:           deregisterExample,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: complete.First(complete.Brokers(f)),
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
	catalogcmd.AddScopeFlag(cmd, &o.Scope)
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
	if _, err := catalogcmd.ParseScope(o.Scope); err != nil {
		return err
	}
	if o.Output == nil {
		o.Output = printers.NewOutputFlags(false)
	}
	return o.Output.Validate()
}

// Complete builds the store and finds the namespaces.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, err := catalogcmd.Namespace(f)
	if err != nil {
		return err
	}
	st, err := f.Store()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace, o.Store = ns, f.CatalogNamespace, st
	return nil
}

// Run deregisters the broker.
func (o *Options) Run(ctx context.Context) error {
	scope, _ := catalogcmd.ParseScope(o.Scope)
	b, err := catalogcmd.FindBroker(ctx, o.Store, o.CatalogNamespace, o.Namespace, o.Name, scope)
	if err != nil {
		return err
	}
	if !o.DryRun.Enabled() {
		fmt.Fprintf(o.Streams.ErrOut, "Deregistering broker %q (%s scope, namespace %q)...\n", b.Name, strings.ToLower(string(b.Spec.Scope)), b.Namespace)
	}
	insts, err := catalogsync.InstancesOf(ctx, o.Store, b)
	if err != nil && !o.Force {
		return fmt.Errorf("cannot check whether instances of broker %q exist: %w (use --force to deregister without checking)", b.Name, err)
	}
	if len(insts) > 0 {
		names := make([]string, 0, len(insts))
		for _, in := range insts {
			names = append(names, in.Namespace+"/"+in.Name)
		}
		list := strings.Join(first(names, 10), ", ")
		if len(names) > 10 {
			list += fmt.Sprintf(" and %d more", len(names)-10)
		}
		if !o.Force {
			// A dry run says the same: the real command would be refused.
			return fmt.Errorf("broker %q still has %s: %s; deprovision them first (kubectl catalog deprovision NAME -n NAMESPACE), or deregister anyway with --force",
				b.Name, catalogcmd.Plural(len(insts), "instance", "instances"), list)
		}
		fmt.Fprintf(o.Streams.ErrOut, "Warning: %s of broker %q are left behind (%s)\n",
			catalogcmd.Plural(len(insts), "instance", "instances"), b.Name, list)
	}
	if o.DryRun.Enabled() {
		return o.printDryRun(ctx, b)
	}
	n, err := catalogsync.New(o.Store, nil).DeleteCatalog(ctx, b)
	if err != nil {
		return fmt.Errorf("cannot delete the classes of broker %q: %w; the broker stays registered, run the command again", b.Name, err)
	}
	if err := o.Store.Brokers().Delete(ctx, b.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("classes of broker %q deleted, but the broker record was not: %w; run the command again", b.Name, err)
	}
	// A namespace-scoped broker keeps its record and credentials Secret with finalizers
	// while instances need them: none does now, or --force leaves them behind.
	if err := o.Store.ReleaseBroker(ctx, b); err != nil {
		return fmt.Errorf("broker %q is marked deleted, but its finalizer could not be removed: %w; run the command again", b.Name, err)
	}
	fmt.Fprintf(o.Streams.Out, "broker %q deregistered: %s removed\n", b.Name, catalogcmd.Plural(n, "class", "classes"))
	return nil
}

// printDryRun prints the broker that would be deregistered and how many classes would
// go with it. With --dry-run=server the deletions of its classes, plans and record are
// sent to the API server as a dry run first; nothing is stored, and the broker (which
// deregister never calls) is not contacted.
func (o *Options) printDryRun(ctx context.Context, b *v1alpha1.Broker) error {
	classes, err := o.Store.Classes().List(ctx, b.Namespace, store.Filter{Broker: b.Name})
	if err != nil {
		return fmt.Errorf("cannot list the classes of broker %q: %w", b.Name, err)
	}
	if o.DryRun == cmdutil.DryRunServer {
		dry := o.DryRun.Context(ctx)
		if _, err := catalogsync.New(o.Store, nil).DeleteCatalog(dry, b); err != nil {
			return fmt.Errorf("the classes of broker %q would not be deleted: %w", b.Name, err)
		}
		if err := o.Store.Brokers().Delete(dry, b.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
			return fmt.Errorf("broker %q would not be deregistered: %w", b.Name, err)
		}
	}
	return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, b, "deleted",
		fmt.Sprintf("broker %q (%s scope, namespace %q) would be deregistered: %s removed",
			b.Name, strings.ToLower(string(b.Spec.Scope)), b.Namespace, catalogcmd.Plural(len(classes), "class", "classes")))
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
