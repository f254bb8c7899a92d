package complete

import (
	"context"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
)

// Contexts completes the names of the kubeconfig's contexts.
func Contexts(f *cmdutil.Factory) cobra.CompletionFunc {
	return kubeconfigNames(f, func(c kubeconfigView) []string { return c.contexts })
}

// Clusters completes the names of the kubeconfig's clusters.
func Clusters(f *cmdutil.Factory) cobra.CompletionFunc {
	return kubeconfigNames(f, func(c kubeconfigView) []string { return c.clusters })
}

// Users completes the names of the kubeconfig's users.
func Users(f *cmdutil.Factory) cobra.CompletionFunc {
	return kubeconfigNames(f, func(c kubeconfigView) []string { return c.users })
}

type kubeconfigView struct{ contexts, clusters, users []string }

func kubeconfigNames(f *cmdutil.Factory, pick func(kubeconfigView) []string) cobra.CompletionFunc {
	return run(f, func(context.Context, *call) ([]string, error) {
		raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, err
		}
		var v kubeconfigView
		for n := range raw.Contexts {
			v.contexts = append(v.contexts, n)
		}
		for n := range raw.Clusters {
			v.clusters = append(v.clusters, n)
		}
		for n := range raw.AuthInfos {
			v.users = append(v.users, n)
		}
		out := pick(v)
		slices.Sort(out)
		return out, nil
	})
}
