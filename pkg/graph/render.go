package graph

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Formats are the output formats Render knows, the first the default.
var Formats = []string{"tree", "dot", "mermaid", "json"}

// Render writes g to w in format (one of Formats). Only the JSON form holds the
// warnings; whoever renders the others says them elsewhere (on stderr).
func Render(w io.Writer, g *Graph, format string) error {
	switch format {
	case "tree":
		return Tree(w, g)
	case "dot":
		return DOT(w, g)
	case "mermaid":
		return Mermaid(w, g)
	case "json":
		return JSON(w, g)
	}
	return fmt.Errorf("unknown output format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// Label is how a node is written in the tree: kind, namespace/name (name alone when
// withNS is false) and the detail in parentheses; classes and plans by their OSB name
// alone (their broker is above them).
func Label(n Node, withNS bool) string {
	s := n.Kind + " " + n.Name
	if withNS && n.Namespace != "" && n.Kind != KindClass && n.Kind != KindPlan {
		s = n.Kind + " " + n.Namespace + "/" + n.Name
	}
	if n.Detail != "" {
		s += " (" + n.Detail + ")"
	}
	return s
}

// treeEdges are the edges the tree follows, from parent to child.
var treeEdges = []string{EdgeOffers, EdgeProvisions, EdgeBinds, EdgeWrites, EdgeConsumedBy}

// rootRank orders the tree's roots: brokers, then instances whose plan is not known
// (an instance of another namespace that bindings here use).
func rootRank(kind string) int {
	if kind == KindBroker {
		return 0
	}
	return 1
}

// Tree writes g as an indented tree from each broker down to the workloads (with where
// their Pod templates reference the Secret), then the instances that share a consumer.
// Names are prefixed by their namespace when g spans more than one.
func Tree(w io.Writer, g *Graph) error {
	withNS := len(slices.DeleteFunc(namespaces(g), func(ns string) bool { return ns == "" })) > 1
	label := func(n Node) string { return Label(n, withNS) }
	byID := map[string]Node{}
	for _, n := range g.Nodes {
		byID[n.ID] = n
	}
	children := map[string][]Edge{}
	hasParent := map[string]bool{}
	for _, e := range g.Edges {
		if slices.Contains(treeEdges, e.Kind) {
			children[e.From] = append(children[e.From], e)
			hasParent[e.To] = true
		}
	}
	var b strings.Builder
	var walk func(id, prefix string)
	walk = func(id, prefix string) {
		kids := children[id]
		for i, e := range kids {
			branch, indent := "├── ", "│   "
			if i == len(kids)-1 {
				branch, indent = "└── ", "    "
			}
			text := label(byID[e.To])
			if e.Kind == EdgeConsumedBy {
				text += " [" + strings.Join(e.Via, ", ") + "]"
			}
			b.WriteString(prefix + branch + text + "\n")
			walk(e.To, prefix+indent)
		}
	}
	var roots []Node
	for _, n := range g.Nodes {
		if !hasParent[n.ID] && (n.Kind == KindBroker || n.Kind == KindInstance) {
			roots = append(roots, n)
		}
	}
	slices.SortStableFunc(roots, func(a, b Node) int { return cmp.Compare(rootRank(a.Kind), rootRank(b.Kind)) })
	for _, n := range roots {
		b.WriteString(label(n) + "\n")
		walk(n.ID, "")
	}
	var shared []string
	for _, e := range g.Edges {
		if e.Kind == EdgeSharesConsumer {
			var via []string
			for _, v := range e.Via {
				via = append(via, label(byID[v]))
			}
			shared = append(shared, fmt.Sprintf("  %s <-> %s (both used by %s)\n", label(byID[e.From]), label(byID[e.To]), strings.Join(via, ", ")))
		}
	}
	if len(shared) > 0 {
		b.WriteString("\nInstances sharing a consumer:\n")
		b.WriteString(strings.Join(shared, ""))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

var dotShapes = map[string]string{
	KindBroker: "box3d", KindClass: "folder", KindPlan: "note", KindInstance: "cylinder",
	KindBinding: "component", KindSecret: "octagon",
}

// edgeText is an edge's label: its kind, and for consumed-by where the Pod template
// references the Secret.
func edgeText(e Edge) string {
	if e.Kind == EdgeConsumedBy {
		return e.Kind + " (" + strings.Join(e.Via, ", ") + ")"
	}
	return e.Kind
}

// nodeText is a node's label in dot and mermaid: kind, name and detail on three lines.
func nodeText(n Node) string {
	s := n.Kind + "\n" + n.Name
	if n.Detail != "" {
		s += "\n(" + n.Detail + ")"
	}
	return s
}

// DOT writes g as a Graphviz digraph, one cluster per namespace; cluster-scoped brokers,
// their classes and plans are outside every cluster.
func DOT(w io.Writer, g *Graph) error {
	var b strings.Builder
	b.WriteString("digraph catalog {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n")
	for i, ns := range namespaces(g) {
		indent := "  "
		if ns != "" {
			fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%s;\n", i, dotQuote("namespace "+ns))
			indent = "    "
		}
		for _, n := range g.Nodes {
			if n.Namespace != ns {
				continue
			}
			shape := cmp.Or(dotShapes[n.Kind], "box")
			fmt.Fprintf(&b, "%s%s [label=%s, shape=%s];\n", indent, dotQuote(n.ID), dotQuote(nodeText(n)), shape)
		}
		if ns != "" {
			b.WriteString("  }\n")
		}
	}
	for _, e := range g.Edges {
		attrs := ""
		if e.Kind == EdgeSharesConsumer {
			attrs = ", dir=both, style=dotted"
		}
		fmt.Fprintf(&b, "  %s -> %s [label=%s%s];\n", dotQuote(e.From), dotQuote(e.To), dotQuote(edgeText(e)), attrs)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// namespaces are the namespaces of g's nodes, sorted, "" (cluster-wide) first.
func namespaces(g *Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		if !slices.Contains(out, n.Namespace) {
			out = append(out, n.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "\n", "<br/>").Replace(s)
}

// Mermaid writes g as a mermaid flowchart (left to right), one subgraph per namespace.
// Node ids are n0, n1, ... in node order.
func Mermaid(w io.Writer, g *Graph) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	ids := map[string]string{}
	for i, n := range g.Nodes {
		ids[n.ID] = fmt.Sprintf("n%d", i)
	}
	for i, ns := range namespaces(g) {
		indent := "  "
		if ns != "" {
			fmt.Fprintf(&b, "  subgraph ns%d[\"namespace %s\"]\n", i, mermaidText(ns))
			indent = "    "
		}
		for _, n := range g.Nodes {
			if n.Namespace == ns {
				fmt.Fprintf(&b, "%s%s[\"%s\"]\n", indent, ids[n.ID], mermaidText(nodeText(n)))
			}
		}
		if ns != "" {
			b.WriteString("  end\n")
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Kind == EdgeSharesConsumer {
			arrow = "<-.->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[e.From], arrow, mermaidText(edgeText(e)), ids[e.To])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes g as an indented JSON object: nodes, edges and warnings.
func JSON(w io.Writer, g *Graph) error {
	out, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}
