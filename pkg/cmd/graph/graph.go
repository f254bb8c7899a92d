// Package graph implements "kubectl catalog graph".
package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/graph"
)

var graphLong = cmdutil.LongDesc(`
	Show what uses what: the brokers, classes and plans of the namespace's
	service instances, the instances, their bindings, the bindings'
	credentials Secrets, and the workloads (Deployments, StatefulSets,
	DaemonSets, Jobs, CronJobs, and Pods none of these or a ReplicaSet
	controls) whose Pod templates use those Secrets, by volume, projected
	volume, envFrom or env secretKeyRef. Two instances are linked ("shares-consumer") when one
	workload uses Secrets of bindings to both.

	A binding of an instance shared from another namespace hangs under that
	instance; with -n, the graph does not show that instance's plan, nor the
	bindings other namespaces hold of this namespace's instances (use -A, or
	"kubectl catalog describe instance").

	The graph is read with one paginated LIST per kind and only what you may
	list: what you may not (say, Deployments) is left out and named in a
	warning on stderr; the command still succeeds. Secrets are never read:
	they appear by name, as the binding records and Pod templates name them.

	Output formats: tree (the default), dot (Graphviz), mermaid and json.`)

var graphExample = cmdutil.Examples(`
	# What the current namespace's instances are used by
	kubectl catalog graph

	# The whole cluster as a picture, with Graphviz
	kubectl catalog graph -A -o dot | dot -Tsvg > catalog.svg

	# A mermaid flowchart of namespace team-a, for a Markdown page
	kubectl catalog graph -n team-a -o mermaid`)

// NewCmdGraph returns the graph command.
func NewCmdGraph(f *cmdutil.Factory) *cobra.Command {
	var all bool
	output := graph.Formats[0]
	cmd := &cobra.Command{
		Use:     "graph [-n NAMESPACE | -A] [-o tree|dot|mermaid|json]",
		Short:   "Show brokers, instances, bindings and the workloads using them as a graph",
		Long:    graphLong,
		Example: graphExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdutil.UsageErrorf("graph takes no arguments, got %q: choose the namespace with -n NAMESPACE, or -A for all", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(graph.Formats, output) {
				return cmdutil.UsageErrorf("unknown output format %q for graph: use one of %s", output, strings.Join(graph.Formats, ", "))
			}
			ns, _, err := f.Namespace()
			if err != nil {
				return err
			}
			st, err := f.Store()
			if err != nil {
				return err
			}
			core, err := f.KubernetesClient()
			if err != nil {
				return err
			}
			g, err := graph.Build(cmd.Context(), core, st, graph.Options{Namespace: ns, AllNamespaces: all})
			if err != nil {
				return err
			}
			for _, w := range g.Warnings {
				fmt.Fprintf(f.ErrOut, "Warning: %s\n", w)
			}
			if len(g.Nodes) == 0 && output == "tree" {
				where := fmt.Sprintf("in namespace %q", ns)
				if all {
					where = "in any namespace"
				}
				fmt.Fprintf(f.ErrOut, "No instances or bindings found %s.\n", where)
				return nil
			}
			return graph.Render(f.Out, g, output)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Show every namespace.")
	cmd.Flags().StringVarP(&output, "output", "o", output, "Output format: "+strings.Join(graph.Formats, ", ")+".")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(graph.Formats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
