package complete

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
)

// Namespaces completes namespace names, when the user may list namespaces.
func Namespaces(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, namespaces)
}

func namespaces(ctx context.Context, c *call) ([]string, error) {
	core, err := c.f.KubernetesClient()
	if err != nil {
		return nil, err
	}
	list, err := core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out, nil
}

// Secrets completes the names of the Secrets in the command's namespace. It lists them
// as metadata only: no Secret's data is read.
func Secrets(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		ns, err := c.namespace()
		if err != nil {
			return nil, err
		}
		return secrets(ctx, c, ns)
	})
}

// BrokerSecrets completes the names of the Secrets in the namespace of the broker being
// registered: the catalog namespace, or the command's with --scope namespace.
func BrokerSecrets(f *cmdutil.Factory) cobra.CompletionFunc {
	return run(f, func(ctx context.Context, c *call) ([]string, error) {
		ns := f.CatalogNamespace
		if strings.EqualFold(c.flag("scope"), "namespace") {
			var err error
			if ns, err = c.namespace(); err != nil {
				return nil, err
			}
		}
		return secrets(ctx, c, ns)
	})
}

func secrets(ctx context.Context, c *call, ns string) ([]string, error) {
	meta, err := c.f.MetadataClient()
	if err != nil {
		return nil, err
	}
	list, err := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name)
	}
	return out, nil
}

// Workloads completes bind's --to KIND/NAME: the kinds a Secret can be projected into,
// then, once a kind and a slash are typed, the names of the workloads of that kind in
// the command's namespace (listed as metadata only).
func Workloads(f *cmdutil.Factory) cobra.CompletionFunc {
	names := run(f, func(ctx context.Context, c *call) ([]string, error) {
		kind, _, _ := strings.Cut(c.toComplete, "/")
		ns, err := c.namespace()
		if err != nil {
			return nil, err
		}
		gvr, ok := projection.WorkloadResource(kind)
		if !ok {
			return nil, nil
		}
		meta, err := c.f.MetadataClient()
		if err != nil {
			return nil, err
		}
		list, err := meta.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, w := range list.Items {
			out = append(out, kind+"/"+w.Name)
		}
		return out, nil
	})
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if strings.Contains(toComplete, "/") {
			return names(cmd, args, toComplete)
		}
		var kinds []string
		for _, k := range projection.ProjectableKinds() {
			kinds = append(kinds, strings.ToLower(k)+"/")
		}
		return matching(kinds, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}
