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
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// NewCmdGetBindings returns "get bindings".
func NewCmdGetBindings(f *cmdutil.Factory) *cobra.Command {
	var all bool
	var inst string
	var wf watchrecords.Flags
	var lf printers.ListFlags
	out := printers.NewOutputFlags(true)
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
			if err := out.Validate(); err != nil {
				return err
			}
			if err := lf.Validate(); err != nil {
				return err
			}
			st, err := f.Store()
			if err != nil {
				return err
			}
			ns, _, err := f.Namespace()
			if err != nil {
				return err
			}
			if all {
				ns = ""
			}
			want := map[string]bool{}
			for _, n := range args {
				want[n] = true
			}
			filter := store.Filter{Instance: inst, Selector: lf.LabelSelector()}
			if wf.On() {
				return watchBindings(cmd.Context(), f, ns, all, filter, want, out, &lf, wf.WatchOnly)
			}
			list, err := st.Bindings().List(cmd.Context(), ns, filter)
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
			missing := allMissing("binding", args, found, known)
			if err := printers.SortItems(&lf, items, func(b *v1alpha1.ServiceBinding) runtime.Object { return b }); err != nil {
				return err
			}
			if !out.IsTable() {
				if err := out.PrintObject(&v1alpha1.ServiceBindingList{Items: items}, f.Out); err != nil {
					return err
				}
				return missing
			}
			if len(items) == 0 {
				if missing != nil {
					return missing
				}
				where := fmt.Sprintf("in namespace %q", ns)
				if all {
					where = "in any namespace"
				}
				if inst != "" {
					where = fmt.Sprintf("of instance %q ", inst) + where
				}
				fmt.Fprintf(f.ErrOut, "No bindings found %s.\n", where)
				return nil
			}
			if err := printers.BindingTable(lf.Out(f.Out), items, all, out.IsWide(), f.Now()); err != nil {
				return err
			}
			return missing
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List bindings of every namespace.")
	cmd.Flags().StringVar(&inst, "instance", "", "Only bindings of this instance.")
	wf.AddFlags(cmd.Flags(), "bindings")
	lf.AddWatchedFlags(cmd, "bindings")
	out.AddFlags(cmd)
	return cmd
}

// watchBindings lists the bindings get would list, then prints each change.
func watchBindings(ctx context.Context, f *cmdutil.Factory, ns string, all bool, filter store.Filter, want map[string]bool, out *printers.OutputFlags, lf *printers.ListFlags, only bool) error {
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	sel, err := store.Selector(v1alpha1.KindServiceBinding, filter)
	if err != nil {
		return err
	}
	return watchrecords.Watch(ctx, core, []watchrecords.Source{{Namespace: ns, Selector: sel}}, watchrecords.Printing[*v1alpha1.ServiceBinding]{
		Out: lf.Out(f.Out), Output: out, List: lf, WatchOnly: only,
		Keep: func(b *v1alpha1.ServiceBinding) bool { return len(want) == 0 || want[b.Name] },
		Table: func(w io.Writer, items []*v1alpha1.ServiceBinding) error {
			vals := make([]v1alpha1.ServiceBinding, len(items))
			for i, x := range items {
				vals[i] = *x
			}
			return printers.BindingTable(w, vals, all, out.IsWide(), f.Now())
		},
	}, nil)
}
