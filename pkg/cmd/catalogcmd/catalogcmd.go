// Package catalogcmd holds what the broker and marketplace commands share: finding a
// broker by name in either scope and the --scope flag.
package catalogcmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
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
	return "", cmdutil.UsageErrorf("--scope must be cluster or namespace, not %q", s)
}

// ScopeNamespace is where records of scope live: the catalog namespace for cluster scope,
// the user's namespace otherwise.
func ScopeNamespace(f *cmdutil.Factory, scope v1alpha1.Scope, userNS string) string {
	if scope == v1alpha1.ScopeCluster {
		return f.CatalogNamespace
	}
	return userNS
}

// FindBroker finds the broker name: see catalog.Reader.FindBroker.
func FindBroker(ctx context.Context, st *store.Store, catalogNS, userNS, name string, scope v1alpha1.Scope) (*v1alpha1.Broker, error) {
	return catalog.NewReader(st).FindBroker(ctx, catalogNS, userNS, name, scope)
}

// NotFoundError is an object the user named that does not exist.
type NotFoundError = catalog.NotFoundError

// Namespace is the user's namespace from the flags or kubeconfig.
func Namespace(f *cmdutil.Factory) (string, error) {
	ns, _, err := f.Namespace()
	return ns, err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Plural returns "1 class" or "3 classes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// AddScopeFlag adds --scope (with completion) for commands that look a broker up by
// name; ParseScope checks its value.
func AddScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "", "Scope of the broker when both scopes have one of that name: cluster or namespace.")
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{"cluster", "namespace"}, cobra.ShellCompDirectiveNoFileComp))
}
