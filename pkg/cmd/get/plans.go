package get

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// NewCmdGetPlans returns "get plans". runF, when not nil, is called with the
// completed options instead of RunPlans.
func NewCmdGetPlans(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := newOptions(f)
	cmd := &cobra.Command{
		Use:     "plans [CLASS/PLAN | PLAN...]",
		Aliases: []string{"plan", "pl"},
		Short:   "List service plans",
		Long: cmdutil.LongDesc(`
			List the plans of the classes visible from the current namespace, including
			plans the broker no longer offers (status Removed). Name plans as CLASS/PLAN,
			or as PLAN together with --class. With -o json|yaml the class records
			holding the plans are printed, with only the selected plans.`),
		Example: cmdutil.Examples(`
			# List every plan
			kubectl catalog get plans

			# The plans of one class
			kubectl catalog get plans -c postgres

			# One plan, with its id
			kubectl catalog get plans postgres/small -o wide`),
	}
	cmd.RunE = runE(f, o, runF, o.RunPlans)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the plans of every namespace.")
	cmd.Flags().StringVarP(&o.Broker, "broker", "b", "", "Only the plans of this broker's classes.")
	cmd.Flags().StringVarP(&o.Class, "class", "c", "", "Only the plans of this class.")
	cmd.ValidArgsFunction = complete.Each(complete.Plans(f))
	o.List.AddFlags(cmd, "plans")
	o.Output.AddFlags(cmd)
	return cmd
}

// RunPlans lists plans.
func (o *Options) RunPlans(ctx context.Context) error {
	all, err := o.classes(ctx, "")
	if err != nil {
		return err
	}
	classes := all
	if o.Class != "" {
		if classes = marketplace.MatchClasses(all, o.Class); len(classes) == 0 {
			return marketplace.ClassNotFound(o.Class, o.lookupNamespace(), all)
		}
	}
	var rows []printers.PlanRow
	var list v1alpha1.ServiceClassList
	found := map[string]bool{}
	for _, c := range classes {
		kept := c.DeepCopy()
		kept.Spec.Plans = nil
		for i := range c.Spec.Plans {
			p := &c.Spec.Plans[i]
			match := len(o.Names) == 0
			for _, n := range o.Names {
				if marketplace.MatchPlanIn(c, p, n) {
					found[n], match = true, true
				}
			}
			if match {
				rows = append(rows, printers.PlanRow{Class: c, Plan: p})
				kept.Spec.Plans = append(kept.Spec.Plans, *p)
			}
		}
		if len(kept.Spec.Plans) > 0 {
			list.Items = append(list.Items, *kept)
		}
	}
	for _, n := range o.Names {
		if !found[n] {
			return marketplace.PlanNotFoundAmong(n, o.lookupNamespace(), classes)
		}
	}
	if !o.Output.IsTable() {
		if err := printers.SortItems(&o.List, list.Items, func(c *v1alpha1.ServiceClass) runtime.Object { return c }); err != nil {
			return err
		}
		return o.Output.PrintObject(&list, o.Streams.Out)
	}
	// A plan's row sorts as its class record holding only that plan.
	if err := printers.SortItems(&o.List, rows, func(r *printers.PlanRow) runtime.Object { return r.Record() }); err != nil {
		return err
	}
	if len(rows) == 0 {
		o.noneFound(o.Streams.ErrOut, "plans")
		return nil
	}
	return printers.PlanTable(o.List.Out(o.Streams.Out), rows, o.AllNamespaces, o.Output.IsWide())
}
