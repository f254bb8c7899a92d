// Package marketplace implements "kubectl catalog marketplace".
package marketplace

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/catalogcmd"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

var marketplaceLong = cmdutil.LongDesc(`
	Show the services the current namespace may provision: the classes and plans
	of cluster-scoped brokers and of the namespace's own brokers, without those
	the broker no longer offers or access rules disable.

	The table has one row per class; with --class, or -o wide, one row per plan
	with its broker, whether it is free and whether it is bindable. -o json|yaml
	print the class records with only the plans on offer.`)

var marketplaceExample = cmdutil.Examples(`
	# What can I provision here?
	kubectl catalog marketplace

	# The plans of one class
	kubectl catalog marketplace --class postgres

	# Every plan of one broker, with details
	kubectl catalog mp --broker acme -o wide`)

// Options are the options of "kubectl catalog marketplace".
type Options struct {
	Broker string
	Class  string
	Output *printers.OutputFlags

	Namespace        string
	CatalogNamespace string
	Store            *store.Store
	Streams          cmdutil.IOStreams
}

// NewCmdMarketplace returns the marketplace command.
func NewCmdMarketplace(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(true)}
	cmd := &cobra.Command{
		Use:     "marketplace",
		Aliases: []string{"mp"},
		Short:   "Show the classes and plans this namespace may provision",
		Long:    marketplaceLong,
		Example: marketplaceExample,
		Args:    cobra.NoArgs,
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
	cmd.Flags().StringVarP(&o.Broker, "broker", "b", "", "Only the classes of this broker.")
	cmd.Flags().StringVarP(&o.Class, "class", "c", "", "Only this class, one row per plan.")
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the flags without any I/O.
func (o *Options) Validate() error { return o.Output.Validate() }

// Complete builds the store and finds the namespace.
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

// Run prints the marketplace.
func (o *Options) Run(ctx context.Context) error {
	offers, err := marketplace.List(ctx, o.Store, o.Namespace, marketplace.Filter{Broker: o.Broker, Class: o.Class},
		marketplace.InCatalogNamespace(o.CatalogNamespace))
	if err != nil {
		if len(offers) == 0 {
			return err
		}
		fmt.Fprintf(o.Streams.ErrOut, "Warning: %v\n", err)
	}
	if o.Class != "" && len(offers) == 0 {
		// Say why: a typo, removed, disabled...
		if _, rerr := marketplace.Resolve(ctx, o.Store, o.Namespace, o.Class, "", marketplace.InCatalogNamespace(o.CatalogNamespace)); rerr != nil {
			return rerr
		}
	}
	if !o.Output.IsTable() {
		list := &v1alpha1.ServiceClassList{}
		for _, of := range offers {
			c := of.Class.DeepCopy()
			c.Spec.Plans = c.Spec.Plans[:0]
			for _, p := range of.Plans {
				c.Spec.Plans = append(c.Spec.Plans, *p)
			}
			list.Items = append(list.Items, *c)
		}
		return o.Output.PrintObject(list, o.Streams.Out)
	}
	if len(offers) == 0 {
		fmt.Fprintf(o.Streams.ErrOut, "No services are offered in namespace %q: register a broker with \"kubectl catalog register\".\n", o.Namespace)
		return nil
	}
	if o.Class != "" || o.Output.IsWide() {
		return PlanTable(o.Streams.Out, offers)
	}
	return ClassTable(o.Streams.Out, offers)
}

// ClassTable prints one row per class.
func ClassTable(w io.Writer, offers []marketplace.Offering) error {
	t := printers.NewTable(w, "CLASS", "PLANS", "BROKER", "DESCRIPTION")
	for _, of := range offers {
		names := make([]string, 0, len(of.Plans))
		for _, p := range of.Plans {
			names = append(names, p.ExternalName)
		}
		t.Append(of.Class.Spec.ExternalName, strings.Join(names, ", "), of.Class.Spec.BrokerName, printers.Truncate(of.Class.Spec.Description, 60))
	}
	return t.Render()
}

// PlanTable prints one row per plan.
func PlanTable(w io.Writer, offers []marketplace.Offering) error {
	t := printers.NewTable(w, "CLASS", "PLAN", "BROKER", "FREE", "BINDABLE", "DESCRIPTION")
	for _, of := range offers {
		for _, p := range of.Plans {
			t.Append(of.Class.Spec.ExternalName, p.ExternalName, of.Class.Spec.BrokerName, printers.FreeOrPaid(p),
				printers.YesNo(of.Class.EffectiveBindable(p)), printers.Truncate(p.Description, 60))
		}
	}
	return t.Render()
}
