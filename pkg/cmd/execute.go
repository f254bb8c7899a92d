package cmd

import (
	"context"
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
)

// Execute runs kubectl catalog with the command-line arguments args and returns the
// process's exit code. An error is printed to the factory's error stream, and a usage
// error is followed by the --help hint of the command it concerns.
func Execute(ctx context.Context, f *cmdutil.Factory, args []string) int {
	root := NewCmdRoot(f)
	root.SetArgs(append([]string{}, args...))
	err := f.ExplainClusterError(AsUsageError(root.ExecuteContext(ctx)))
	f.FlushEvents(ctx)
	if cmdutil.ShouldPrint(err) {
		// An error can quote what a broker, a record or the command line holds: its
		// control characters are shown, never sent to the terminal.
		fmt.Fprintln(f.ErrOut, "error:", iostreams.SafeText(err.Error()))
	}
	code := cmdutil.ExitCode(err)
	// The hint follows a usage error, not a failure already reported with the same
	// code (diff's).
	if code == cmdutil.ExitUsage && cmdutil.ShouldPrint(err) {
		c, _, findErr := root.Find(args)
		if findErr != nil || c == nil {
			c = root
		}
		fmt.Fprintf(f.ErrOut, "Run '%s --help' for usage.\n", c.CommandPath())
	}
	return code
}
