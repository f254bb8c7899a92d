// Package marketplace implements "kubectl catalog marketplace".
package marketplace

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

var marketplaceLong = cmdutil.LongDesc(`
	Show the services the current namespace may provision: the classes and plans
	of cluster-scoped brokers and of the namespace's own brokers, without those
	the broker no longer offers or access rules disable.

	The table has one row per class; with --class, or -o wide, one row per plan
	with its broker, whether it is free and whether it is bindable. -o json|yaml
	print the class records with only the plans on offer.

	With -A, the offerings of every namespace, with a NAMESPACE column: the
	classes of namespace-scoped brokers under their namespace, and those of
	cluster-scoped brokers once, under the catalog namespace, as the access
	rules for every namespace leave them. -l selects classes by their records'
	labels; --sort-by sorts the rows by a field of the class records as -o json
	prints them.`)

var marketplaceExample = cmdutil.Examples(`
	# What can I provision here?
	kubectl catalog marketplace

	# The plans of one class
	kubectl catalog marketplace --class postgres

	# Every plan of one broker, with details
	kubectl catalog mp --broker acme -o wide

	# What every namespace is offered, newest classes last
	kubectl catalog marketplace -A --sort-by .metadata.creationTimestamp`)

// Options are the options of "kubectl catalog marketplace".
type Options struct {
	Broker        string
	Class         string
	AllNamespaces bool
	Output        *printers.OutputFlags
	List          printers.ListFlags

	Namespace        string
	CatalogNamespace string
	Reader           *records.Reader
	Streams          cmdutil.IOStreams
}

// NewCmdMarketplace returns the marketplace command. runF, when not nil, is called with
// the completed options instead of Run.
func NewCmdMarketplace(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(true)}
	cmd := &cobra.Command{
		Use:     "marketplace",
		Aliases: []string{"mp"},
		Short:   "Show the classes and plans this namespace may provision",
		Long:    marketplaceLong,
		Example: marketplaceExample,
		Args:    cobra.NoArgs,
		RunE:    cmdutil.RunE(f, o, runF),
	}
	cmd.Flags().StringVarP(&o.Broker, "broker", "b", "", "Only the classes of this broker.")
	cmd.Flags().StringVarP(&o.Class, "class", "c", "", "Only this class, one row per plan.")
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Show what every namespace is offered.")
	o.List.AddFlags(cmd, "classes")
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the flags without any I/O; it changes nothing (the list flags are
// checked on a copy, and parsed by Complete).
func (o *Options) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	list := o.List
	return list.Validate()
}

// Complete parses the list flags, builds the reader and finds the namespace.
func (o *Options) Complete(f *cmdutil.Factory) error {
	if err := o.List.Validate(); err != nil {
		return err
	}
	ns, err := f.UserNamespace()
	if err != nil {
		return err
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	o.Namespace, o.CatalogNamespace, o.Reader = ns, f.CatalogNamespace, r
	return nil
}

// Run prints the marketplace.
func (o *Options) Run(ctx context.Context) error {
	filter := marketplace.Filter{Broker: o.Broker, Class: o.Class, Selector: o.List.LabelSelector(), AllNamespaces: o.AllNamespaces}
	offers, err := o.Reader.Offerings(ctx, o.Namespace, filter, marketplace.InCatalogNamespace(o.CatalogNamespace))
	if err != nil {
		if len(offers) == 0 {
			return err
		}
		fmt.Fprintf(o.Streams.ErrOut, "Warning: %s\n", iostreams.SafeText(err.Error()))
	}
	if o.Class != "" && len(offers) == 0 && !o.AllNamespaces && o.List.LabelSelector() == nil {
		// Say why: a typo, removed, disabled...
		if _, rerr := o.Reader.ResolveOffering(ctx, o.Namespace, o.Class, "", marketplace.InCatalogNamespace(o.CatalogNamespace)); rerr != nil {
			return rerr
		}
	}
	if err := printers.SortItems(&o.List, offers, func(of *marketplace.Offering) runtime.Object { return Record(*of) }); err != nil {
		return err
	}
	if !o.Output.IsTable() {
		list := &v1alpha1.ServiceClassList{}
		for _, of := range offers {
			list.Items = append(list.Items, *Record(of))
		}
		return o.Output.PrintObject(list, o.Streams.Out)
	}
	if len(offers) == 0 {
		switch {
		case o.AllNamespaces:
			fmt.Fprintln(o.Streams.ErrOut, "No services are offered in any namespace.")
		case o.List.LabelSelector() != nil:
			fmt.Fprintf(o.Streams.ErrOut, "No services matching %q are offered in namespace %q.\n", o.List.Selector, o.Namespace)
		default:
			fmt.Fprintf(o.Streams.ErrOut, "No services are offered in namespace %q: register a broker with \"kubectl catalog register\".\n", o.Namespace)
		}
		return nil
	}
	w := o.List.Out(o.Streams.Out)
	if o.Class != "" || o.Output.IsWide() {
		return PlanTable(w, offers, o.AllNamespaces)
	}
	return ClassTable(w, offers, o.AllNamespaces)
}

// Record is an offering as -o json prints it: the class record with only the plans on
// offer.
func Record(of marketplace.Offering) *v1alpha1.ServiceClass {
	c := of.Class.DeepCopy()
	c.Spec.Plans = nil
	for _, p := range of.Plans {
		c.Spec.Plans = append(c.Spec.Plans, *p)
	}
	return c
}

// ClassTable prints one row per class; withNamespace adds a NAMESPACE column.
func ClassTable(w io.Writer, offers []marketplace.Offering, withNamespace bool) error {
	t := printers.NewTable(w, withNS(withNamespace, "NAMESPACE", "CLASS", "PLANS", "BROKER", "DESCRIPTION")...)
	for _, of := range offers {
		names := make([]string, 0, len(of.Plans))
		for _, p := range of.Plans {
			names = append(names, p.ExternalName)
		}
		t.Append(withNS(withNamespace, of.Class.Namespace,
			of.Class.Spec.ExternalName, strings.Join(names, ", "), of.Class.Spec.BrokerName, printers.Truncate(of.Class.Spec.Description, 60))...)
	}
	return t.Render()
}

// PlanTable prints one row per plan; withNamespace adds a NAMESPACE column.
func PlanTable(w io.Writer, offers []marketplace.Offering, withNamespace bool) error {
	t := printers.NewTable(w, withNS(withNamespace, "NAMESPACE", "CLASS", "PLAN", "BROKER", "FREE", "BINDABLE", "DESCRIPTION")...)
	for _, of := range offers {
		for _, p := range of.Plans {
			t.Append(withNS(withNamespace, of.Class.Namespace,
				of.Class.Spec.ExternalName, p.ExternalName, of.Class.Spec.BrokerName, printers.FreeOrPaid(p),
				printers.YesNo(of.Class.EffectiveBindable(p)), printers.Truncate(p.Description, 60))...)
		}
	}
	return t.Render()
}

// withNS returns cells with the first one (the NAMESPACE header or cell) only when on.
func withNS(on bool, first string, rest ...string) []string {
	if on {
		return append([]string{first}, rest...)
	}
	return rest
}
