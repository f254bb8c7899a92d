package get

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// NewCmdGetClasses returns "get classes". runF, when not nil, is called with the
// completed options instead of RunClasses.
func NewCmdGetClasses(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := newOptions(f)
	cmd := &cobra.Command{
		Use:     "classes [NAME...]",
		Aliases: []string{"class", "cl"},
		Short:   "List service classes",
		Long: cmdutil.LongDesc(`
			List the service classes of the brokers visible from the current namespace,
			including classes the broker no longer offers (status Removed) and classes
			access rules hide. NAME is a class's name, BROKER/NAME, its record name or
			its OSB id. For what the namespace may provision, use "kubectl catalog
			marketplace".`),
		Example: cmdutil.Examples(`
			# List classes
			kubectl catalog get classes

			# Classes of one broker, with their ids
			kubectl catalog get classes -b acme -o wide

			# One class as YAML
			kubectl catalog get classes postgres -o yaml`),
		ValidArgsFunction: complete.Each(complete.Classes(f)),
	}
	cmd.RunE = runE(f, o, runF, o.RunClasses)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the classes of every namespace.")
	cmd.Flags().StringVarP(&o.Broker, "broker", "b", "", "Only the classes of this broker.")
	o.List.AddFlags(cmd, "classes")
	o.Output.AddFlags(cmd)
	return cmd
}

func (o *Options) classes(ctx context.Context, class string) ([]*v1alpha1.ServiceClass, error) {
	filter := records.Filter{Broker: o.Broker, Class: class, Selector: o.List.LabelSelector()}
	var out []*v1alpha1.ServiceClass
	var err error
	if o.AllNamespaces {
		out, err = o.Reader.Classes().List(ctx, "", filter)
	} else {
		out, err = o.Reader.MarketClasses(ctx, o.Namespace, filter, marketplace.InCatalogNamespace(o.CatalogNamespace))
	}
	if err != nil && len(out) > 0 {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: %s\n", iostreams.SafeText(err.Error()))
		err = nil
	}
	return out, err
}

// RunClasses lists classes.
func (o *Options) RunClasses(ctx context.Context) error {
	all, err := o.classes(ctx, "")
	if err != nil {
		return err
	}
	var items []v1alpha1.ServiceClass
	matched := map[*v1alpha1.ServiceClass]bool{}
	for _, n := range o.Names {
		m := marketplace.MatchClasses(all, n)
		if len(m) == 0 {
			return marketplace.ClassNotFound(n, o.lookupNamespace(), all)
		}
		for _, c := range m {
			matched[c] = true
		}
	}
	for _, c := range all {
		if len(o.Names) == 0 || matched[c] {
			items = append(items, *c)
		}
	}
	if err := printers.SortItems(&o.List, items, func(c *v1alpha1.ServiceClass) runtime.Object { return c }); err != nil {
		return err
	}
	if !o.Output.IsTable() {
		return o.Output.PrintObject(&v1alpha1.ServiceClassList{Items: items}, o.Streams.Out)
	}
	if len(items) == 0 {
		o.noneFound(o.Streams.ErrOut, "classes")
		return nil
	}
	return printers.ClassTable(o.List.Out(o.Streams.Out), items, o.AllNamespaces, o.Output.IsWide(), o.Now())
}
