// Package touch implements "kubectl catalog touch instance".
package touch

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd/lifecycle"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
)

// Options are the options of touch instance.
type Options struct {
	Name string
	// Yes is --yes: become the author of what another person wrote without asking.
	Yes bool

	lifecycle.VerbOptions
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
	o := &Options{VerbOptions: lifecycle.NewVerbOptions(f)}
	cmd := lifecycle.OnInstance(f, &cobra.Command{
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
		Aliases: []string{"inst"},
	}, &o.Name, o, runF)
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, cmdutil.VouchYesUsage)
	o.AddFlags(cmd, "update", "the instance record marked for its parameters to be re-sent")
	return cmd
}

// Validate checks the flags without I/O. It changes nothing.
func (o *Options) Validate() error { return o.ValidateFlags("records nothing") }

// Run touches the instance (engine.Engine.Touch) and prints the outcome.
func (o *Options) Run(ctx context.Context) error {
	return o.RunOnInstance(o.Name, "configured", "update", func(follow engine.Follow) (engine.InstanceResult, error) {
		return o.Engine.Touch(ctx, engine.TouchRequest{Namespace: o.Namespace, Name: o.Name, DryRun: o.DryRun.Engine(), Follow: follow,
			Vouch: cmdutil.Voucher(o.Prompter, o.Streams.ErrOut, o.Yes, "touch")})
	})
}
