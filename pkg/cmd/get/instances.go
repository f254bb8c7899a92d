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

// NewCmdGetInstances returns "get instances".
func NewCmdGetInstances(f *cmdutil.Factory) *cobra.Command {
	var all bool
	var class, plan string
	var wf watchrecords.Flags
	var lf printers.ListFlags
	out := printers.NewOutputFlags(true)
	cmd := &cobra.Command{
		Use:     "instances [NAME...]",
		Aliases: []string{"instance", "inst"},
		Short:   "List service instances",
		Long: cmdutil.LongDesc(`
			List service instances with their class, plan and status.

			With -w (--watch), after the list it prints a row, with the same columns,
			each time an instance changes or is deleted, until interrupted;
			--watch-only prints only the changes. With -o json|yaml it prints one
			object per change.`),
		Example: cmdutil.Examples(`
			# List the instances of the current namespace
			kubectl catalog get instances

			# List the postgresql instances of every namespace
			kubectl catalog get inst -A --class postgresql

			# List the instances, then print a row each time one changes (Ctrl-C ends it)
			kubectl catalog get instances -w`),
		ValidArgsFunction: complete.Each(complete.Instances(f)),
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
			filter := store.Filter{Class: class, Plan: plan, Selector: lf.LabelSelector()}
			if wf.On() {
				return watchInstances(cmd.Context(), f, ns, all, filter, args, out, &lf, wf.WatchOnly)
			}
			items, missing, err := listInstances(cmd.Context(), st, ns, filter, args)
			if err != nil {
				return err
			}
			if err := printers.SortItems(&lf, items, func(i *v1alpha1.ServiceInstance) runtime.Object { return i }); err != nil {
				return err
			}
			if !out.IsTable() {
				if err := out.PrintObject(&v1alpha1.ServiceInstanceList{Items: items}, f.Out); err != nil {
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
				fmt.Fprintf(f.ErrOut, "No instances found %s.\n", where)
				return nil
			}
			if err := printers.InstanceTable(lf.Out(f.Out), items, all, out.IsWide(), f.Now()); err != nil {
				return err
			}
			return missing
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List instances of every namespace.")
	cmd.Flags().StringVar(&class, "class", "", "Only instances of this class.")
	cmd.Flags().StringVar(&plan, "plan", "", "Only instances of this plan.")
	complete.Register(cmd, "plan", complete.Plans(f))
	wf.AddFlags(cmd.Flags(), "instances")
	lf.AddWatchedFlags(cmd, "instances")
	out.AddFlags(cmd)
	return cmd
}

// watchInstances lists the instances get would list, then prints each change.
func watchInstances(ctx context.Context, f *cmdutil.Factory, ns string, all bool, filter store.Filter, names []string, out *printers.OutputFlags, lf *printers.ListFlags, only bool) error {
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	sel, err := store.Selector(v1alpha1.KindServiceInstance, filter)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	return watchrecords.Watch(ctx, core, []watchrecords.Source{{Namespace: ns, Selector: sel}}, watchrecords.Printing[*v1alpha1.ServiceInstance]{
		Out: lf.Out(f.Out), Output: out, List: lf, WatchOnly: only,
		Keep: func(i *v1alpha1.ServiceInstance) bool { return len(want) == 0 || want[i.Name] },
		Table: func(w io.Writer, items []*v1alpha1.ServiceInstance) error {
			vals := make([]v1alpha1.ServiceInstance, len(items))
			for i, x := range items {
				vals[i] = *x
			}
			return printers.InstanceTable(w, vals, all, out.IsWide(), f.Now())
		},
	}, nil)
}

// listInstances returns the instances get prints: all, or those names names; missing
// names the names that matched none (nil when all did).
func listInstances(ctx context.Context, st *store.Store, ns string, filter store.Filter, names []string) (items []v1alpha1.ServiceInstance, missing, err error) {
	list, err := st.Instances().List(ctx, ns, filter)
	if err != nil && len(list) == 0 {
		return nil, nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	found := map[string]bool{}
	var known []string
	for _, i := range list {
		known = append(known, i.Name)
		if len(want) == 0 || want[i.Name] {
			found[i.Name] = true
			items = append(items, *i)
		}
	}
	return items, allMissing("instance", names, found, known), nil
}
