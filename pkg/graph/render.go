package graph

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Formats are the output formats Render knows, the first the default.
var Formats = []string{"tree", "dot", "mermaid", "json"}

// Render writes g to w in format (one of Formats).
func Render(w io.Writer, g *Graph, format string) error {
	switch format {
	case "", "tree":
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

// label is how a node is written in the tree: kind and namespace/name; classes and plans
// by their OSB name alone (their parent says which broker).
func label(n Node) string {
	switch n.Kind {
	case KindClass, KindPlan:
		return n.Kind + " " + n.Name
	}
	if n.Namespace == "" {
		return n.Kind + " " + n.Name
	}
	return n.Kind + " " + n.Namespace + "/" + n.Name
}

var treeEdges = []string{EdgeOffers, EdgeProvisions, EdgeBinds, EdgeWrites, EdgeConsumedBy}

// Tree writes g as an indented tree from each broker down to the workloads, then the
// instances that share a consumer and the warnings.
func Tree(w io.Writer, g *Graph) error {
	byID := map[string]Node{}
	for _, n := range g.Nodes {
		byID[n.ID] = n
	}
	children := map[string][]Edge{}
	hasParent := map[string]bool{}
	for _, e := range g.Edges {
		if slices.Contains(treeEdges, e.Kind) || e.Kind == EdgeProjects {
			children[e.From] = append(children[e.From], e)
			if e.Kind != EdgeProjects {
				hasParent[e.To] = true
			}
		}
	}
	var b strings.Builder
	var walk func(id, prefix string, seen map[string]bool)
	walk = func(id, prefix string, seen map[string]bool) {
		kids := children[id]
		for i, e := range kids {
			branch, indent := "├── ", "│   "
			if i == len(kids)-1 {
				branch, indent = "└── ", "    "
			}
			text := label(byID[e.To])
			switch e.Kind {
			case EdgeProjects:
				text = "projected into " + text
			case EdgeConsumedBy:
				text += " (" + strings.Join(e.Via, ", ") + ")"
			}
			b.WriteString(prefix + branch + text + "\n")
			if e.Kind != EdgeProjects && !seen[e.To] {
				seen[e.To] = true
				walk(e.To, prefix+indent, seen)
				delete(seen, e.To)
			}
		}
	}
	roots := 0
	for _, n := range g.Nodes {
		if hasParent[n.ID] || (len(children[n.ID]) == 0 && n.Kind != KindBroker) {
			continue
		}
		if n.Kind != KindBroker && n.Kind != KindInstance && n.Kind != KindBinding && n.Kind != KindSecret {
			continue
		}
		roots++
		b.WriteString(label(n) + "\n")
		walk(n.ID, "", map[string]bool{n.ID: true})
	}
	if roots == 0 {
		b.WriteString("No brokers, instances or bindings found.\n")
	}
	var shared []string
	for _, e := range g.Edges {
		if e.Kind == EdgeSharesConsumer {
			var via []string
			for _, v := range e.Via {
				via = append(via, label(byID[v]))
			}
			shared = append(shared, fmt.Sprintf("  %s <-> %s (via %s)\n", label(byID[e.From]), label(byID[e.To]), strings.Join(via, ", ")))
		}
	}
	if len(shared) > 0 {
		b.WriteString("\nInstances sharing a consumer:\n")
		b.WriteString(strings.Join(shared, ""))
	}
	if len(g.Warnings) > 0 {
		b.WriteString("\nNot shown:\n")
		for _, s := range g.Warnings {
			b.WriteString("  " + s + "\n")
		}
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

// DOT writes g as a Graphviz digraph with one cluster per namespace; warnings are
// comments.
func DOT(w io.Writer, g *Graph) error {
	var b strings.Builder
	b.WriteString("digraph catalog {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n")
	for _, s := range g.Warnings {
		b.WriteString("  // " + strings.ReplaceAll(s, "\n", " ") + "\n")
	}
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
			shape := dotShapes[n.Kind]
			if shape == "" {
				shape = "box"
			}
			fmt.Fprintf(&b, "%s%s [label=%s, shape=%s];\n", indent, dotQuote(n.ID), dotQuote(n.Kind+"\n"+n.Name), shape)
		}
		if ns != "" {
			b.WriteString("  }\n")
		}
	}
	for _, e := range g.Edges {
		text := e.Kind
		attrs := ""
		switch e.Kind {
		case EdgeConsumedBy:
			text += " (" + strings.Join(e.Via, ", ") + ")"
		case EdgeProjects:
			attrs = ", style=dashed"
		case EdgeSharesConsumer:
			attrs = ", dir=both, style=dotted"
		}
		fmt.Fprintf(&b, "  %s -> %s [label=%s%s];\n", dotQuote(e.From), dotQuote(e.To), dotQuote(text), attrs)
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

// Mermaid writes g as a mermaid flowchart (left to right) with one subgraph per
// namespace; warnings are comments. Node ids are n0, n1, ... in node order.
func Mermaid(w io.Writer, g *Graph) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for _, s := range g.Warnings {
		b.WriteString("  %% " + strings.ReplaceAll(s, "\n", " ") + "\n")
	}
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
				fmt.Fprintf(&b, "%s%s[\"%s: %s\"]\n", indent, ids[n.ID], n.Kind, mermaidText(n.Name))
			}
		}
		if ns != "" {
			b.WriteString("  end\n")
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		text := e.Kind
		switch e.Kind {
		case EdgeConsumedBy:
			text += " (" + strings.Join(e.Via, ", ") + ")"
		case EdgeProjects:
			arrow = "-.->"
		case EdgeSharesConsumer:
			arrow = "<-.->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[e.From], arrow, mermaidText(text), ids[e.To])
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
