package lifecycle

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil/complete"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
)

// VerbOptions are what every lifecycle verb's options have beside the verb's own
// flags: the wait flags, --dry-run and -o, and the clients its Complete builds. A verb
// embeds them, so that they are registered, checked and built in one place.
type VerbOptions struct {
	Wait   WaitFlags
	DryRun cmdutil.DryRunStrategy
	Output *printers.OutputFlags

	cmdutil.Clients
}

// NewVerbOptions are the options of a verb built on f: its streams, and a table for -o
// until the flags say otherwise.
func NewVerbOptions(f *cmdutil.Factory) VerbOptions {
	return VerbOptions{Clients: cmdutil.Clients{Streams: f.IOStreams}, Output: printers.NewOutputFlags(false)}
}

// AddFlags adds the wait flags (waiting until what, "the deprovision", is finished at
// the broker), --dry-run (written says what a dry run prints, "the instance record")
// and -o.
func (v *VerbOptions) AddFlags(cmd *cobra.Command, what, written string) {
	v.Wait.AddFlags(cmd.Flags(), what)
	v.AddDryRunFlags(cmd, written)
}

// AddDryRunFlags adds --dry-run and -o alone, for a verb with nothing to wait for.
func (v *VerbOptions) AddDryRunFlags(cmd *cobra.Command, written string) {
	cmdutil.AddDryRunFlag(cmd, &v.DryRun, written)
	v.Output.AddFlags(cmd)
}

// ValidateFlags checks the shared flags without I/O, changing nothing: a dry run
// cannot wait (nothing says what a dry run leaves undone, "records nothing"), the
// wait flags, and -o.
func (v *VerbOptions) ValidateFlags(nothing string) error {
	if err := cmdutil.DryRunWithWait(v.DryRun, v.Wait.Wait, nothing); err != nil {
		return err
	}
	if err := v.Wait.Validate(); err != nil {
		return err
	}
	return v.ValidateOutput()
}

// ValidateOutput checks -o; options built without it print a table.
func (v *VerbOptions) ValidateOutput() error {
	if v.Output == nil {
		return nil
	}
	return v.Output.Validate()
}

// Complete builds the clients: the engine polls a broker at most every --interval.
func (v *VerbOptions) Complete(f *cmdutil.Factory) error { return v.Build(f, v.Wait.Interval) }

// RunOnInstance makes the verb's one engine call on instance name, op, following the
// record it writes as the wait flags say (see NewFollow), and prints its outcome:
// nothing when there was nothing to change, the record a dry run would write
// (operation is the write kubectl would name, "created"), or where the instance stands
// after the verb ("provision"), as Report says it.
func (v *VerbOptions) RunOnInstance(name, operation, verb string, op func(engine.Follow) (engine.InstanceResult, error)) error {
	follow, done := NewFollow(v.Streams, v.Wait)
	res, err := op(v.AnnounceReconcile(follow))
	done()
	switch {
	case err != nil:
		return err
	case res.Unchanged:
		return nil
	case res.DryRun != nil:
		return printers.PrintDryRun(v.Streams, v.Output, v.DryRun, res.DryRun, operation, res.Summary)
	}
	if err := Report(v.Streams, v.Output, res.Result, name, v.Namespace, verb, v.Wait.Wait); err != nil {
		return err
	}
	if engine.WaitingForReconcile(res.Instance) {
		v.SayWhenReconcileRuns()
	}
	return nil
}

// SayWhenReconcileRuns follows the line saying that a call is recorded and left to
// reconcile: when the installed reconcile will take it up.
func (v *VerbOptions) SayWhenReconcileRuns() {
	if when := v.whenReconcileRuns(); when != "" {
		fmt.Fprintf(v.Streams.ErrOut, "When it is sent: %s.\n", when)
	}
}

func (v *VerbOptions) whenReconcileRuns() string {
	if v.ReconcileRuns == nil {
		return ""
	}
	return v.ReconcileRuns(context.Background())
}

// AnnounceReconcile is f, which says once, when a wait comes to a call left to
// reconcile (the user may not make it: a cluster broker's credentials), that the wait is
// now for reconcile, and when it will likely run: such a wait otherwise sits silently
// until --timeout.
func (v *VerbOptions) AnnounceReconcile(f engine.Follow) engine.Follow {
	if !f.Wait || f.Progress == nil {
		return f
	}
	progress, said := f.Progress, false
	f.Progress = func(r engine.Result) {
		if !said && (engine.WaitingForReconcile(r.Instance) || engine.WaitingForReconcile(r.Binding)) {
			said = true
			line := "Waiting for reconcile to send the request"
			if when := v.whenReconcileRuns(); when != "" {
				line += ": " + when
			}
			if f.Timeout > 0 {
				line += fmt.Sprintf("; --timeout %s ends this wait, not the request", f.Timeout)
			}
			if f.Note != nil {
				f.Note(line + ".")
			}
		}
		progress(r)
	}
	return f
}

// OnInstance makes cmd a command on one instance, named by its only argument (see
// ExactlyOneName) and completed from the instances: it sets *name and runs o as every
// command runs (cmdutil.RunCommand), or runF with the completed options.
func OnInstance[O cmdutil.Runnable](f *cmdutil.Factory, cmd *cobra.Command, name *string, o O, runF func(O) error) *cobra.Command {
	cmd.Args = ExactlyOneName
	cmd.ValidArgsFunction = complete.First(complete.Instances(f))
	cmd.RunE = cmdutil.RunENamed(f, name, o, runF)
	return cmd
}
