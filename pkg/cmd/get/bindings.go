package get

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/watchrecords"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// BindingsOptions are the options of "get bindings".
type BindingsOptions struct {
	RecordListOptions
	Instance string
}

// NewCmdGetBindings returns "get bindings". runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdGetBindings(f *cmdutil.Factory, runF func(*BindingsOptions) error) *cobra.Command {
	o := &BindingsOptions{RecordListOptions: newRecordListOptions(f)}
	cmd := &cobra.Command{
		Use:     "bindings [NAME...]",
		Aliases: []string{"binding", "bnd"},
		Short:   "List service bindings",
		Long: cmdutil.LongDesc(`
			List service bindings with their instance, credentials Secret and
			status. The status says "rotation due" once the broker's renew_before
			for the credentials has passed: rotate them with
			"kubectl catalog bind --rotate NAME".

			With -w (--watch), after the list it prints a row, with the same columns,
			each time a binding changes or is deleted, until interrupted;
			--watch-only prints only the changes. With -o json|yaml it prints one
			object per change.`),
		Example: cmdutil.Examples(`
			# List the bindings of the current namespace
			kubectl catalog get bindings

			# List the bindings of instance db, with their OSB ids and expiry
			kubectl catalog get bnd --instance db -o wide

			# List the bindings of every namespace
			kubectl catalog get bindings -A

			# Print a row each time a binding of instance db changes (Ctrl-C ends it)
			kubectl catalog get bindings --instance db --watch-only`),
		ValidArgsFunction: complete.Each(complete.Bindings(f, false)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f, args); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List bindings of every namespace.")
	cmd.Flags().StringVar(&o.Instance, "instance", "", "Only bindings of this instance.")
	o.Watch.AddFlags(cmd.Flags(), "bindings")
	o.List.AddWatchedFlags(cmd, "bindings")
	o.Output.AddFlags(cmd)
	return cmd
}

func (o *BindingsOptions) filter() engine.Filter {
	return engine.Filter{Instance: o.Instance, Selector: o.List.LabelSelector()}
}

func (o *BindingsOptions) wanted() map[string]bool {
	want := map[string]bool{}
	for _, n := range o.Names {
		want[n] = true
	}
	return want
}

// Run lists the bindings, or watches them with -w.
func (o *BindingsOptions) Run(ctx context.Context) error {
	if o.Watch.On() {
		return o.watch(ctx)
	}
	want := o.wanted()
	list, err := o.Reader.Bindings().List(ctx, o.Namespace, o.filter())
	if err != nil && len(list) == 0 {
		return err
	}
	var items []v1alpha1.ServiceBinding
	found := map[string]bool{}
	var known []string
	for _, b := range list {
		known = append(known, b.Name)
		if len(want) == 0 || want[b.Name] {
			found[b.Name] = true
			items = append(items, *b)
		}
	}
	missing := allMissing("binding", o.Names, found, known)
	if err := printers.SortItems(&o.List, items, func(b *v1alpha1.ServiceBinding) runtime.Object { return b }); err != nil {
		return err
	}
	if !o.Output.IsTable() {
		if err := o.Output.PrintObject(&v1alpha1.ServiceBindingList{Items: items}, o.Streams.Out); err != nil {
			return err
		}
		return missing
	}
	if len(items) == 0 {
		if missing != nil {
			return missing
		}
		where := fmt.Sprintf("in namespace %q", o.Namespace)
		if o.AllNamespaces {
			where = "in any namespace"
		}
		if o.Instance != "" {
			where = fmt.Sprintf("of instance %q ", o.Instance) + where
		}
		fmt.Fprintf(o.Streams.ErrOut, "No bindings found %s.\n", where)
		return nil
	}
	if err := printers.BindingTable(o.List.Out(o.Streams.Out), items, o.AllNamespaces, o.Output.IsWide(), o.Now()); err != nil {
		return err
	}
	return missing
}

// watch lists the bindings get would list, then prints each change.
func (o *BindingsOptions) watch(ctx context.Context) error {
	if o.core == nil {
		return fmt.Errorf("internal error: no client to watch with")
	}
	sel, err := engine.Selector(v1alpha1.KindServiceBinding, o.filter())
	if err != nil {
		return err
	}
	want := o.wanted()
	return watchrecords.Watch(ctx, o.core, []watchrecords.Source{{Namespace: o.Namespace, Selector: sel}}, watchrecords.Printing[*v1alpha1.ServiceBinding]{
		Out: o.List.Out(o.Streams.Out), Output: o.Output, List: &o.List, WatchOnly: o.Watch.WatchOnly,
		Keep: func(b *v1alpha1.ServiceBinding) bool { return len(want) == 0 || want[b.Name] },
		Table: func(w io.Writer, items []*v1alpha1.ServiceBinding) error {
			vals := make([]v1alpha1.ServiceBinding, len(items))
			for i, x := range items {
				vals[i] = *x
			}
			return printers.BindingTable(w, vals, o.AllNamespaces, o.Output.IsWide(), o.Now())
		},
	}, nil)
}
