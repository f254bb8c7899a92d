package get

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// InstancesOptions are the options of "get instances".
type InstancesOptions struct {
	RecordListOptions
	Class string
	Plan  string
}

// NewCmdGetInstances returns "get instances". runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdGetInstances(f *cmdutil.Factory, runF func(*InstancesOptions) error) *cobra.Command {
	o := &InstancesOptions{RecordListOptions: newRecordListOptions(f)}
	cmd := &cobra.Command{
		Use:     "instances [NAME...]",
		Aliases: []string{"instance", "inst"},
		Short:   "List service instances",
		Long: cmdutil.LongDesc(`
			List service instances with their class, plan and status.
` + watchHelp("an instance")),
		Example: cmdutil.Examples(`
			# List the instances of the current namespace
			kubectl catalog get instances

			# List the postgresql instances of every namespace
			kubectl catalog get inst -A --class postgresql

			# List the instances, then print a row each time one changes (Ctrl-C ends it)
			kubectl catalog get instances -w`),
		ValidArgsFunction: complete.Each(complete.Instances(f)),
	}
	cmd.Flags().StringVar(&o.Class, "class", "", "Only instances of this class.")
	cmd.Flags().StringVar(&o.Plan, "plan", "", "Only instances of this plan.")
	complete.Register(cmd, "plan", complete.Plans(f))
	o.addFlags(cmd, "instances")
	cmd.RunE = runE(f, o, runF, o.Run)
	return cmd
}

func (o *InstancesOptions) filter() records.Filter {
	return records.Filter{Class: o.Class, Plan: o.Plan, Selector: o.List.LabelSelector()}
}

// Run lists the instances, or watches them with -w.
func (o *InstancesOptions) Run(ctx context.Context) error {
	return runRecords(ctx, &o.RecordListOptions, o.filter(), recordKind[v1alpha1.ServiceInstance, *v1alpha1.ServiceInstance]{
		name: "instance", record: v1alpha1.KindServiceInstance, list: o.Reader.Instances().List, table: printers.InstanceTable,
		pages: o.Reader.Instances().ListPages, rows: printers.InstanceRows,
	}, func() string { return "No instances found " + o.where() + "." })
}
