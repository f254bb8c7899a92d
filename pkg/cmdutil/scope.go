package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// ParseScope turns a --scope value into a Scope; "" is "" (either scope).
func ParseScope(s string) (v1alpha1.Scope, error) {
	switch strings.ToLower(s) {
	case "":
		return "", nil
	case "cluster":
		return v1alpha1.ScopeCluster, nil
	case "namespace":
		return v1alpha1.ScopeNamespace, nil
	}
	return "", UsageErrorf("--scope must be cluster or namespace, not %q", s)
}

// AddScopeFlag adds --scope (with completion) for commands that look a broker up by
// name; ParseScope checks its value.
func AddScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "", "Scope of the broker when both scopes have one of that name: cluster or namespace.")
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{"cluster", "namespace"}, cobra.ShellCompDirectiveNoFileComp))
}

// UserNamespace is the user's namespace from the flags or kubeconfig.
func (f *Factory) UserNamespace() (string, error) {
	ns, _, err := f.Namespace()
	return ns, err
}
