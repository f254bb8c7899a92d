package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
)

// Exit codes of kubectl-catalog. They are part of the command-line contract:
// scripts and CronJobs rely on them.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitUsage   = 2
	ExitTimeout = 124
	// ExitInterrupted is returned when the user interrupts a command (Ctrl-C).
	ExitInterrupted = 130
	// ExitDiffError is diff's failure (bad manifests, a cluster it cannot read), as
	// kubectl diff's: more than 1, which says there are differences. No usage hint
	// follows it.
	ExitDiffError = 2
)

// UsageError is a mistake in how the command was invoked: an unknown flag, a
// missing argument, flags that cannot go together. It exits with ExitUsage.
type UsageError = iostreams.UsageError

// UsageErrorf returns a UsageError with a formatted message.
func UsageErrorf(format string, args ...any) error { return iostreams.UsageErrorf(format, args...) }

// TimeoutError reports that --wait ran out of time. The operation itself goes
// on; Hint tells the user how to pick it up again. It exits with ExitTimeout. It is the
// engine's error, so an operation's timeout needs no translation.
type TimeoutError = engine.TimeoutError

// SilentError carries an exit code for a failure that has already been
// reported to the user, so nothing more is printed.
type SilentError struct{ Code int }

func (e *SilentError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// usageMistake is an error of a package that knows no command line (the engine's
// refusal of bad input, say) saying it is a mistake in how the command was invoked.
type usageMistake interface{ UsageMistake() bool }

// ExitCode maps an error returned by a command to the process exit code. It
// is the one place where errors become exit codes.
func ExitCode(err error) int {
	var usage *UsageError
	var mistake usageMistake
	var timeout *TimeoutError
	var silent *SilentError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &silent):
		return silent.Code
	case errors.As(err, &usage), errors.As(err, &mistake) && mistake.UsageMistake():
		return ExitUsage
	case errors.As(err, &timeout):
		return ExitTimeout
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	default:
		return ExitError
	}
}

// ShouldPrint says whether main should print err before exiting.
func ShouldPrint(err error) bool {
	var silent *SilentError
	return err != nil && !errors.As(err, &silent)
}

// NoArgs is the Args of a command that takes no positional arguments: any is a usage
// error naming them and the command's help.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageErrorf("%s takes no arguments, got %q: see %q", cmd.CommandPath(), strings.Join(args, " "), cmd.CommandPath()+" --help")
	}
	return nil
}
