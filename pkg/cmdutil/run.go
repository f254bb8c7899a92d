package cmdutil

import "context"

// Runnable is the shape of a command's options: Validate checks the flags without I/O
// and changes nothing, Complete builds the clients, Run does the work.
type Runnable interface {
	Validate() error
	Complete(f *Factory) error
	Run(ctx context.Context) error
}

// RunCommand runs o as every command does: Validate, Complete, then Run, or runF when
// it is not nil (tests of the flags get the completed options instead of a run).
func RunCommand[O Runnable](ctx context.Context, f *Factory, o O, runF func(O) error) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := o.Complete(f); err != nil {
		return err
	}
	if runF != nil {
		return runF(o)
	}
	return o.Run(ctx)
}
