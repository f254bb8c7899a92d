package get

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
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
` + watchHelp("a binding")),
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
	}
	cmd.Flags().StringVar(&o.Instance, "instance", "", "Only bindings of this instance.")
	o.addFlags(cmd, "bindings")
	cmd.RunE = runE(f, o, runF, o.Run)
	return cmd
}

func (o *BindingsOptions) filter() records.Filter {
	return records.Filter{Instance: o.Instance, Selector: o.List.LabelSelector()}
}

// Run lists the bindings, or watches them with -w.
func (o *BindingsOptions) Run(ctx context.Context) error {
	return runRecords(ctx, &o.RecordListOptions, o.filter(), recordKind[v1alpha1.ServiceBinding, *v1alpha1.ServiceBinding]{
		name: "binding", record: v1alpha1.KindServiceBinding, list: o.Reader.Bindings().List, table: printers.BindingTable,
		pages: o.Reader.Bindings().ListPages, rows: printers.BindingRows,
	}, func() string {
		where := o.where()
		if o.Instance != "" {
			where = fmt.Sprintf("of instance %q ", o.Instance) + where
		}
		return "No bindings found " + where + "."
	})
}
