package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// markUsageErrors makes every mistake in how a command of the tree is invoked a usage
// error (exit 2, with the --help hint): wrong positional arguments, and an unknown
// command or noun under a group command ("get brokrs"), which also gets cobra's
// "Did you mean" suggestions.
func markUsageErrors(c *cobra.Command) {
	c.SuggestionsMinimumDistance = 2
	switch {
	case c.HasSubCommands():
		group := c
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return cmdutil.UsageErrorf("unknown command %q for %q%s", args[0], displayPath(group), suggestions(group, args[0]))
		}
	case c.Args != nil:
		args := c.Args
		c.Args = func(cmd *cobra.Command, a []string) error {
			err := args(cmd, a)
			var usage *cmdutil.UsageError
			if err == nil || errors.As(err, &usage) {
				return err
			}
			return &cmdutil.UsageError{Err: err}
		}
	}
	for _, sub := range c.Commands() {
		markUsageErrors(sub)
	}
}

// displayPath is the command's path as the user types it ("kubectl catalog get").
func displayPath(c *cobra.Command) string {
	return strings.Replace(c.CommandPath(), "kubectl-catalog", "kubectl catalog", 1)
}

func suggestions(c *cobra.Command, typed string) string {
	s := c.SuggestionsFor(typed)
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf("\n\nDid you mean this?\n\t%s\n", strings.Join(s, "\n\t"))
}

// AsUsageError makes cobra's own checks of required flags and flag groups, which it
// reports as plain errors, usage errors.
func AsUsageError(err error) error {
	var usage *cmdutil.UsageError
	if err == nil || errors.As(err, &usage) {
		return err
	}
	msg := err.Error()
	for _, prefix := range []string{"required flag(s)", "if any flags in the group", "at least one of the flags in the group"} {
		if strings.HasPrefix(msg, prefix) {
			return &cmdutil.UsageError{Err: err}
		}
	}
	return err
}
