// Package binding holds what the binding commands (bind, unbind, get bindings, describe
// binding) share: driving a binding with progress, its status as a table shows it, and
// completion of binding names.
package lifecycle

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Drive runs the engine on one binding, as Drive does on an instance: until it
// settles (or is gone) with --wait, else for as long as there is work to do at once. It
// shows progress, releases its claim when it stops, and turns a timeout or an
// interruption into an error saying how to resume.
func DriveBinding(ctx context.Context, streams cmdutil.IOStreams, eng *catalog.Engine, namespace, name, verb string, w WaitFlags) (catalog.Result, error) {
	return DriveRecord(ctx, streams, Driven{
		Kind:  "binding",
		Drive: eng.DriveBinding,
		Release: func(ctx context.Context, r catalog.Result) {
			if r.Binding != nil {
				_ = eng.ReleaseBinding(ctx, r.Binding)
			}
		},
		Again: again(verb, name),
	}, namespace, name, verb, w)
}

// again is how to wait for the binding again: an unbind can be repeated, a bind cannot
// (the name is taken), so it is left to reconcile.
func again(verb, name string) string {
	if verb == "unbind" {
		return fmt.Sprintf(`, or wait again with "kubectl catalog unbind %s --wait"`, name)
	}
	return ""
}

// CompleteBindings completes binding names in the command's namespace; every argument
// position is a binding name.
func CompleteBindings(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return bindingNames(cmd.Context(), f, "", args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// CompleteOneBinding completes a single binding name.
func CompleteOneBinding(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return bindingNames(cmd.Context(), f, "", nil, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// BindingNames lists the names of the bindings in the factory's namespace (of instance
// when set) that start with prefix, leaving out those in skip.
func BindingNames(ctx context.Context, f *cmdutil.Factory, inst string, skip []string, prefix string) []string {
	return bindingNames(ctx, f, inst, skip, prefix)
}

func bindingNames(ctx context.Context, f *cmdutil.Factory, inst string, skip []string, prefix string) []string {
	st, err := f.Store()
	if err != nil {
		return nil
	}
	ns, _, err := f.Namespace()
	if err != nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	items, _ := st.Bindings().List(ctx, ns, store.Filter{Instance: inst})
	var names []string
	for _, b := range items {
		if strings.HasPrefix(b.Name, prefix) && !contains(skip, b.Name) {
			names = append(names, b.Name)
		}
	}
	sort.Strings(names)
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
