package cmdutil

import (
	"fmt"
	"io"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/prompt"
)

// Confirm decides whether a destructive command goes on, after it has printed what it
// is about to do. --yes (yes) goes on at once. In a terminal (p not nil) it asks
// "Continue?", default no; on a no it prints "Nothing was changed." to errOut and
// returns false. Outside a terminal it cannot ask: needYes, when not empty, is the
// usage error (the command needs --yes there); an empty needYes goes on, for a change
// small enough to need no confirmation there.
func Confirm(p prompt.Prompter, errOut io.Writer, yes bool, needYes string) (bool, error) {
	switch {
	case yes:
		return true, nil
	case p == nil && needYes != "":
		return false, UsageErrorf("%s", needYes)
	case p == nil:
		return true, nil
	}
	ok, err := p.Confirm("Continue?", false)
	if err != nil {
		return false, err
	}
	if !ok {
		fmt.Fprintln(errOut, "Nothing was changed.")
	}
	return ok, nil
}

// NeedsYes is the usage error of a command that cannot ask for confirmation:
// "CMD needs --yes when it cannot ask for confirmation (not a terminal)".
func NeedsYes(cmd string) string {
	return cmd + " needs --yes when it cannot ask for confirmation (not a terminal)"
}
