// Package completion implements `kubectl catalog completion`.
package completion

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// KubectlCompletionScript is the helper kubectl (1.26 and later) runs to
// complete `kubectl catalog ...`: installed on PATH as
// kubectl_complete-catalog, it forwards to the plugin's own completion.
const KubectlCompletionScript = `#!/usr/bin/env sh
# Completion helper for "kubectl catalog": kubectl runs it when completing
# the plugin's arguments. Install it on your PATH next to kubectl-catalog.
kubectl catalog __complete "$@"
`

var completionLong = cmdutil.LongDesc(`
	Print a shell completion script for kubectl catalog.

	"kubectl catalog completion kubectl" prints the kubectl_complete-catalog
	helper: put it on your PATH, executable, and kubectl's own completion
	(kubectl 1.26 and later) completes "kubectl catalog ..." through it. The
	other shells' scripts complete the kubectl-catalog binary when run directly.`)

var completionExample = cmdutil.Examples(`
	# Complete "kubectl catalog ..." through kubectl's own completion
	kubectl catalog completion kubectl > ~/.local/bin/kubectl_complete-catalog
	chmod +x ~/.local/bin/kubectl_complete-catalog

	# Load bash completion for kubectl-catalog in the current shell
	source <(kubectl catalog completion bash)

	# Install zsh completion
	kubectl catalog completion zsh > "${fpath[1]}/_kubectl-catalog"`)

// Shells lists the arguments completion accepts.
var Shells = []string{"bash", "zsh", "fish", "powershell", "kubectl"}

// NewCmdCompletion returns the completion command.
func NewCmdCompletion(streams cmdutil.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:                   "completion bash|zsh|fish|powershell|kubectl",
		Short:                 "Print a shell completion script",
		Long:                  completionLong,
		Example:               completionExample,
		DisableFlagsInUseLine: true,
		ValidArgs:             Shells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErrorf("name one shell: one of bash, zsh, fish, powershell, kubectl")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return Write(cmd.Root(), args[0], streams.Out)
		},
	}
}

// Write writes the completion script for shell to w.
func Write(root *cobra.Command, shell string, w io.Writer) error {
	switch shell {
	case "bash":
		return root.GenBashCompletionV2(w, true)
	case "zsh":
		return root.GenZshCompletion(w)
	case "fish":
		return root.GenFishCompletion(w, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(w)
	case "kubectl":
		_, err := io.WriteString(w, KubectlCompletionScript)
		return err
	default:
		return cmdutil.UsageErrorf("unsupported shell %q: use one of bash, zsh, fish, powershell, kubectl", shell)
	}
}

// FileName is the conventional file name of the script for shell, as
// shipped in release archives under completions/.
func FileName(shell string) string {
	switch shell {
	case "bash":
		return "kubectl-catalog.bash"
	case "zsh":
		return "_kubectl-catalog"
	case "fish":
		return "kubectl-catalog.fish"
	case "powershell":
		return "kubectl-catalog.ps1"
	case "kubectl":
		return "kubectl_complete-catalog"
	}
	panic(fmt.Sprintf("completion: unknown shell %q", shell))
}
