// Package touch implements "kubectl catalog touch instance".
package touch

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
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
	cmd := &cobra.Command{
		Use:   "instance NAME",
		Short: "Re-send an instance's parameters to its broker",
		Long: cmdutil.LongDesc(`
			Send every parameter of a service instance to its broker again, as an
			update. Use it after changing a Secret the parameters come from, or
			when the broker lost track of them.`),
		Example: cmdutil.Examples(`
			# Re-send the parameters of instance db and wait for the broker
			kubectl catalog touch instance db --wait`),
		Aliases:           []string{"inst"},
		Args:              lifecycle.ExactlyOneName,
		ValidArgsFunction: complete.First(complete.Instances(f)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := w.Validate(); err != nil {
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
			fmt.Fprintf(f.ErrOut, "Re-sending the parameters of instance %q in namespace %q...\n", name, ns)
			if _, err := eng.Touch(cmd.Context(), ns, name); err != nil {
				return err
			}
			r, err := lifecycle.Drive(cmd.Context(), f.IOStreams, eng, ns, name, "update", w)
			if err != nil {
				return err
			}
			return lifecycle.Report(f.IOStreams, nil, r, name, ns, "update", w.Wait)
		},
	}
	w.AddFlags(cmd.Flags(), "update")
	return cmd
}
