// Package graph implements "kubectl catalog graph".
package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/cmdutil"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/graph"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/iostreams"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/printers"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
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
	warning on stderr; the command still succeeds. When you may list
	neither the instances nor the bindings, there is nothing to show: it
	fails (exit 1), as "get" does. Secrets are never read:
	they appear by name, as the binding records and Pod templates name them.

	Output formats: tree (the default), dot (Graphviz), mermaid and json.`)

var graphExample = cmdutil.Examples(`
	# What the current namespace's instances are used by
	kubectl catalog graph

	# The whole cluster as a picture, with Graphviz
	kubectl catalog graph -A -o dot | dot -Tsvg > catalog.svg

	# A mermaid flowchart of namespace team-a, for a Markdown page
	kubectl catalog graph -n team-a -o mermaid`)

// Options are the options of "kubectl catalog graph".
type Options struct {
	AllNamespaces bool
	// Output is -o: one of graph.Formats.
	Output *printers.OutputFlags

	Namespace string
	Reader    *records.Reader
	Core      kubernetes.Interface // to list the workloads with
	Streams   cmdutil.IOStreams
}

// newOutputFlags is graph's -o: tree (the default), dot, mermaid or json.
func newOutputFlags() *printers.OutputFlags {
	return printers.NewFormatOutputFlags(graph.Formats, graph.Formats[0], "Output format: "+strings.Join(graph.Formats, ", ")+".", func(format string) error {
		return cmdutil.UsageErrorf("unknown output format %q for graph: use one of %s", format, strings.Join(graph.Formats, ", "))
	})
}

// NewCmdGraph returns the graph command. runF, when not nil, is called with the
// completed options instead of Run.
func NewCmdGraph(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{Streams: f.IOStreams, Output: newOutputFlags()}
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
		RunE: cmdutil.RunE(f, o, runF),
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Show every namespace.")
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate checks the flags without any I/O; it changes nothing.
func (o *Options) Validate() error { return o.Output.Validate() }

// Complete finds the namespace and builds the reader and the client.
func (o *Options) Complete(f *cmdutil.Factory) error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	core, err := f.KubernetesClient()
	if err != nil {
		return err
	}
	o.Namespace, o.Reader, o.Core = ns, r, core
	return nil
}

// Run builds the graph and prints it.
func (o *Options) Run(ctx context.Context) error {
	g, err := o.Reader.Graph(ctx, o.Core, graph.Options{Namespace: o.Namespace, AllNamespaces: o.AllNamespaces})
	if err != nil {
		return err
	}
	for _, w := range g.Warnings {
		fmt.Fprintf(o.Streams.ErrOut, "Warning: %s\n", iostreams.SafeText(fmt.Sprint(w)))
	}
	format := o.Output.Format()
	if len(g.Nodes) == 0 && format == "tree" {
		where := fmt.Sprintf("in namespace %q", o.Namespace)
		if o.AllNamespaces {
			where = "in any namespace"
		}
		fmt.Fprintf(o.Streams.ErrOut, "No instances or bindings found %s.\n", where)
		return nil
	}
	return graph.Render(o.Streams.Out, g, format)
}
