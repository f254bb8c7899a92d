package cmdutil

import (
	"context"

	"github.com/spf13/cobra"
)

// Completable is the shape of options that one or more commands run: Validate checks
// the flags without I/O and changes nothing, Complete builds the clients.
type Completable interface {
	Validate() error
	Complete(f *Factory) error
}

// Runnable is the shape of a command's options: Completable, and Run does the work.
type Runnable interface {
	Completable
	Run(ctx context.Context) error
}

// RunCommand runs o as every command does: Validate, Complete, then Run, or runF when
// it is not nil (tests of the flags get the completed options instead of a run).
func RunCommand[O Runnable](ctx context.Context, f *Factory, o O, runF func(O) error) error {
	return RunCommandWith(ctx, f, o, runF, o.Run)
}

// RunCommandWith is RunCommand with run in place of Run, for options that several
// commands share, each with its own work.
func RunCommandWith[O Completable](ctx context.Context, f *Factory, o O, runF func(O) error, run func(context.Context) error) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := o.Complete(f); err != nil {
		return err
	}
	if runF != nil {
		return runF(o)
	}
	return run(ctx)
}

// RunE is the RunE of a command that takes no argument: it runs o (RunCommand).
func RunE[O Runnable](f *Factory, o O, runF func(O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error { return RunCommand(cmd.Context(), f, o, runF) }
}

// RunENamed is the RunE of a command whose only argument names the record it works on
// (its Args make sure there is one): the name goes to *name, then o runs (RunCommand).
func RunENamed[O Runnable](f *Factory, name *string, o O, runF func(O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		*name = args[0]
		return RunCommand(cmd.Context(), f, o, runF)
	}
}

// Group makes cmd a command that groups subcommands: it takes no argument, and without
// a subcommand it prints its help.
func Group(cmd *cobra.Command, subcommands ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	cmd.AddCommand(subcommands...)
	return cmd
}
