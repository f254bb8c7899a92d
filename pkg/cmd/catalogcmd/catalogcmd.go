// Package catalogcmd holds what the broker and marketplace commands share: finding a
// broker by name in either scope and the --scope flag.
package catalogcmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog/marketplace"
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

// FindBroker finds the broker name: in the user's namespace (namespace scope) and in the
// catalog namespace (cluster scope), or only in scope when given. A name found in both
// needs --scope. Not found: the error suggests the closest names.
func FindBroker(ctx context.Context, st *store.Store, catalogNS, userNS, name string, scope v1alpha1.Scope) (*v1alpha1.Broker, error) {
	type place struct {
		ns    string
		scope v1alpha1.Scope
	}
	var places []place
	if scope != v1alpha1.ScopeCluster && userNS != catalogNS {
		places = append(places, place{userNS, v1alpha1.ScopeNamespace})
	}
	if scope != v1alpha1.ScopeNamespace || userNS == catalogNS {
		places = append(places, place{catalogNS, v1alpha1.ScopeCluster})
	}
	var found []*v1alpha1.Broker
	for _, p := range places {
		b, err := st.Brokers().Get(ctx, p.ns, name)
		switch {
		case store.IsNotFound(err):
			continue
		case store.IsForbidden(err) && len(places) > 1:
			continue
		case err != nil:
			return nil, err
		}
		if scope == "" || b.Spec.Scope == scope {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
	default:
		return nil, cmdutil.UsageErrorf("broker %q exists in namespace %q (namespace scope) and in %q (cluster scope): say which with --scope namespace or --scope cluster",
			name, userNS, catalogNS)
	}
	var names []string
	for _, p := range places {
		bs, _ := st.Brokers().List(ctx, p.ns, store.Filter{})
		for _, b := range bs {
			names = append(names, b.Name)
		}
	}
	msg := fmt.Sprintf("broker %q not found", name)
	if len(places) == 2 {
		msg += fmt.Sprintf(" in namespace %q or in the catalog namespace %q", userNS, catalogNS)
	} else {
		msg += fmt.Sprintf(" in namespace %q", places[0].ns)
	}
	if s := marketplace.Suggest(name, names); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	} else {
		msg += " (run \"kubectl catalog get brokers\" to list them)"
	}
	return nil, &NotFoundError{msg}
}

// NotFoundError is an object the user named that does not exist.
type NotFoundError struct{ Msg string }

func (e *NotFoundError) Error() string { return e.Msg }

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
