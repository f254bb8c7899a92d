// Command docs writes the command reference, one Markdown page per command, from the
// plugin's cobra tree: go run ./test/cmd/docs DIR ("make docs" writes docs/commands).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmd"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./test/cmd/docs DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Pages of commands that no longer exist must not linger.
	old, err := filepath.Glob(filepath.Join(dir, "kubectl_catalog*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	root := cmd.NewCmdRoot(cmdutil.NewFactory(cmdutil.NewStdIOStreams()))
	disableAutoGenTag(root)
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		// Defaults under the home directory (kubectl's --cache-dir) read the same on
		// every machine.
		root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
			f.DefValue = strings.ReplaceAll(f.DefValue, home, "$HOME")
		})
	}
	return doc.GenMarkdownTree(root, dir)
}

// disableAutoGenTag leaves the date out of every page, so that the reference changes only
// when a command does.
func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		if !strings.HasPrefix(sub.Name(), "__") {
			disableAutoGenTag(sub)
		}
	}
}
