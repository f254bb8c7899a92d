package graph

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// ForInstance returns the part of the graph below inst: bindings (those of inst the
// caller listed, in any namespace), their Secrets and the workloads of the bindings'
// namespaces consuming them. It lists each workload kind once per namespace that holds
// one of the bindings; a LIST the user may not make becomes a warning.
func ForInstance(ctx context.Context, core kubernetes.Interface, inst *v1alpha1.ServiceInstance, bindings []*v1alpha1.ServiceBinding) (*Graph, error) {
	in := Input{Instances: []*v1alpha1.ServiceInstance{inst}, Bindings: bindings}
	var namespaces []string
	for _, b := range bindings {
		if !slices.Contains(namespaces, b.Namespace) {
			namespaces = append(namespaces, b.Namespace)
		}
	}
	slices.Sort(namespaces)
	for _, ns := range namespaces {
		if err := listWorkloads(ctx, core, ns, &in); err != nil {
			return nil, err
		}
	}
	return Assemble(in).Neighbourhood(NodeID(KindInstance, inst.Namespace, inst.Name)), nil
}

// UsedBy writes the "Used by:" section of "describe instance" from g (ForInstance's
// graph of the instance id): one line per binding with its Secret and the workloads
// using it, then what could not be listed. Names in the instance's namespace are
// written alone, others as namespace/name.
func UsedBy(w io.Writer, g *Graph, id string) error {
	inst, ok := g.Node(id)
	if !ok {
		return nil
	}
	name := func(n Node) string {
		if n.Namespace == inst.Namespace || n.Namespace == "" {
			return n.Name
		}
		return n.Namespace + "/" + n.Name
	}
	var b strings.Builder
	b.WriteString("Used by:\n")
	lines := 0
	for _, bind := range g.Edges {
		if bind.From != id || bind.Kind != EdgeBinds {
			continue
		}
		lines++
		bn, _ := g.Node(bind.To)
		line := "  Binding " + name(bn)
		for _, wr := range g.Edges {
			if wr.From != bind.To || wr.Kind != EdgeWrites {
				continue
			}
			sn, _ := g.Node(wr.To)
			line += ", Secret " + sn.Name + ": "
			var users []string
			for _, c := range g.Edges {
				if c.From == wr.To && c.Kind == EdgeConsumedBy {
					wn, _ := g.Node(c.To)
					users = append(users, fmt.Sprintf("%s %s [%s]", wn.Kind, name(wn), strings.Join(c.Via, ", ")))
				}
			}
			if len(users) == 0 {
				users = []string{"no workload found"}
			}
			line += strings.Join(users, ", ")
		}
		b.WriteString(line + "\n")
	}
	if lines == 0 {
		b.WriteString("  no binding\n")
	}
	for _, s := range g.Warnings {
		b.WriteString("  Not shown: " + s + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
