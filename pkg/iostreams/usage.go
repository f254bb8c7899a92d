package iostreams

import "fmt"

// UsageError is a mistake in how the command was invoked: an unknown flag, a
// missing argument, flags that cannot go together. The command exits with the
// usage status (cmdutil.ExitUsage).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// UsageErrorf returns a UsageError with a formatted message.
func UsageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}
