// Package touch implements "kubectl catalog touch instance".
package touch

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// Options are the options of touch instance.
type Options struct {
	Name   string
	Wait   lifecycle.WaitFlags
	Output *printers.OutputFlags
	DryRun cmdutil.DryRunStrategy

	Namespace string
	Engine    *engine.Engine
	Streams   cmdutil.IOStreams
}

// NewCmdTouch returns the touch command and its instance subcommand. runF, when not
// nil, is called with the completed options of touch instance instead of Run (for tests
// of the flags).
func NewCmdTouch(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
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
	cmd.AddCommand(newCmdTouchInstance(f, runF))
	return cmd
}

func newCmdTouchInstance(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: printers.NewOutputFlags(false)}
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
			o.Name = args[0]
			return cmdutil.RunCommand(cmd.Context(), f, o, runF)
		},
	}
	o.Wait.AddFlags(cmd.Flags(), "update")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the instance record marked for its parameters to be re-sent")
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the flags without I/O. It changes nothing.
func (o *Options) Validate() error {
	if err := o.Wait.Validate(); err != nil {
		return err
	}
	if err := cmdutil.DryRunWithWait(o.DryRun, o.Wait.Wait, "records nothing"); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Complete builds the engine.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	o.Namespace = ns
	eng, err := f.Engine(cmdutil.EngineOptions{PollInterval: o.Wait.Interval})
	if err != nil {
		return err
	}
	o.Engine = eng.Engine
	return nil
}

// Run touches the instance (engine.Engine.Touch) and prints the outcome.
func (o *Options) Run(ctx context.Context) error {
	follow, done := lifecycle.NewFollow(o.Streams, o.Wait)
	res, err := o.Engine.Touch(ctx, engine.TouchRequest{Namespace: o.Namespace, Name: o.Name, DryRun: o.DryRun.Engine(), Follow: follow})
	done()
	if err != nil {
		return err
	}
	if res.DryRun != nil {
		return printers.PrintDryRun(o.Streams, o.Output, o.DryRun, res.DryRun, "configured", res.Summary)
	}
	return lifecycle.Report(o.Streams, o.Output, res.Result, o.Name, o.Namespace, "update", o.Wait.Wait)
}
