// Package touch implements "kubectl catalog touch instance".
package touch

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// NewCmdTouch returns the touch command and its instance subcommand.
func NewCmdTouch(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "touch",
		Short: "Re-send an instance's parameters to its broker",
		Long: cmdutil.LongDesc(`
			Send a service instance's parameters to its broker again, as an update
			("touch instance"): after a Secret its parameters come from changed, or
			when the broker lost track of them.`),
		Example: cmdutil.Examples(`
			# Re-send the parameters of instance db
			kubectl catalog touch instance db`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdutil.UsageErrorf("unknown command %q for %q: see %q", args[0], cmd.CommandPath(), cmd.CommandPath()+" --help")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdTouchInstance(f))
	return cmd
}

func newCmdTouchInstance(f *cmdutil.Factory) *cobra.Command {
	var w lifecycle.WaitFlags
	var dry cmdutil.DryRunStrategy
	output := printers.NewOutputFlags(false)
	cmd := &cobra.Command{
		Use:   "instance NAME",
		Short: "Re-send an instance's parameters to its broker",
		Long: cmdutil.LongDesc(`
			Send every parameter of a service instance to its broker again, as an
			update. Use it after changing a Secret the parameters come from, or
			when the broker lost track of them.`),
		Example: cmdutil.Examples(`
			# Re-send the parameters of instance db and wait for the broker
			kubectl catalog touch instance db --wait

			# See the record as touch would leave it, checked by the API server, changing nothing
			kubectl catalog touch instance db --dry-run=server -o yaml`),
		Aliases:           []string{"inst"},
		Args:              lifecycle.ExactlyOneName,
		ValidArgsFunction: complete.First(complete.Instances(f)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := w.Validate(); err != nil {
				return err
			}
			if err := cmdutil.DryRunWithWait(dry, w.Wait, "records nothing"); err != nil {
				return err
			}
			if err := output.Validate(); err != nil {
				return err
			}
			name := args[0]
			ns, _, err := f.Namespace()
			if err != nil {
				return err
			}
			e, err := f.Engine(cmdutil.EngineOptions{PollInterval: w.Interval})
			if err != nil {
				return err
			}
			eng := e.Engine
			if dry.Enabled() {
				return touchDryRun(cmd.Context(), f.IOStreams, output, dry, eng, ns, name)
			}
			fmt.Fprintf(f.ErrOut, "Re-sending the parameters of instance %q in namespace %q...\n", name, ns)
			if _, err := eng.Touch(cmd.Context(), ns, name); err != nil {
				return err
			}
			r, err := lifecycle.Drive(cmd.Context(), f.IOStreams, eng, ns, name, "update", w)
			if err != nil {
				return err
			}
			return lifecycle.Report(f.IOStreams, output, r, name, ns, "update", w.Wait)
		},
	}
	w.AddFlags(cmd.Flags(), "update")
	cmdutil.AddDryRunFlag(cmd, &dry, "the instance record marked for its parameters to be re-sent")
	output.AddFlags(cmd)
	return cmd
}

// touchDryRun prints the instance record as touch would leave it: with
// --dry-run=server, as the API server (validation and admission, the trust policy
// included) accepted the change without storing it. No broker is called.
func touchDryRun(ctx context.Context, streams cmdutil.IOStreams, output *printers.OutputFlags, dry cmdutil.DryRunStrategy, eng *catalog.Engine, ns, name string) error {
	var inst *v1alpha1.ServiceInstance
	var err error
	if dry == cmdutil.DryRunServer {
		inst, err = eng.Touch(dry.Context(ctx), ns, name)
	} else {
		inst, err = eng.TouchPreview(ctx, ns, name)
	}
	if store.IsNotFound(err) {
		return fmt.Errorf(`instance %q not found in namespace %q: list the instances with "kubectl catalog get instances"`, name, ns)
	}
	if err != nil {
		return err
	}
	return printers.PrintDryRun(streams, output, dry, inst, "configured",
		fmt.Sprintf("the parameters of instance %q in namespace %q would be re-sent to its broker", name, ns))
}
