// Package graph builds the service graph: brokers, the classes and plans instances use,
// instances, bindings, their credentials Secrets and the workloads that consume those
// Secrets, plus edges between instances whose Secrets a workload consumes together. It
// renders the graph as a tree, Graphviz dot, mermaid or JSON. Secret values are never
// read: Secrets appear by name only, as the binding records and Pod templates name them.
package graph

import (
	"cmp"
	"slices"
	"strings"
)

// Node kinds.
const (
	KindBroker   = "Broker"
	KindClass    = "Class"
	KindPlan     = "Plan"
	KindInstance = "Instance"
	KindBinding  = "Binding"
	KindSecret   = "Secret"
)

// Edge kinds.
const (
	// EdgeOffers: broker to class, class to plan.
	EdgeOffers = "offers"
	// EdgeProvisions: plan to instance.
	EdgeProvisions = "provisions"
	// EdgeBinds: instance to binding.
	EdgeBinds = "binds"
	// EdgeWrites: binding to its credentials Secret.
	EdgeWrites = "writes"
	// EdgeConsumedBy: Secret to a workload whose Pod template references it.
	EdgeConsumedBy = "consumed-by"
	// EdgeProjects: binding to a workload its record lists as a projection target.
	EdgeProjects = "projects-into"
	// EdgeSharesConsumer: instance to instance, when one workload consumes Secrets of
	// bindings to both.
	EdgeSharesConsumer = "shares-consumer"
)

// Node is one object of the graph. ID is stable: kind, namespace and name in lower case
// ("instance/team-a/db"); cluster-wide names have an empty namespace segment.
type Node struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Detail is a short note: a class's or plan's OSB name owner, an instance's phase.
	Detail string `json:"detail,omitempty"`
}

// Edge links two nodes by ID.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
	// Via says how: the Pod template locations of a consumed-by edge ("env", "envFrom",
	// "volume"), the workloads of a shares-consumer edge.
	Via []string `json:"via,omitempty"`
}

// Graph is the whole graph, sorted: nodes by ID, edges by from, to and kind.
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
	// Warnings say what could not be read ("could not list daemonsets in team-a:
	// forbidden"); the graph is what the rest showed.
	Warnings []string `json:"warnings,omitempty"`

	index map[string]int
	edges map[[3]string]int
}

// NodeID is the stable id of an object.
func NodeID(kind, namespace, name string) string {
	return strings.ToLower(kind) + "/" + namespace + "/" + name
}

func (g *Graph) addNode(kind, namespace, name, detail string) string {
	return g.addNodeID(NodeID(kind, namespace, name), kind, namespace, name, detail)
}

func (g *Graph) addNodeID(id, kind, namespace, name, detail string) string {
	if g.index == nil {
		g.index = map[string]int{}
	}
	if i, ok := g.index[id]; ok {
		if g.Nodes[i].Detail == "" {
			g.Nodes[i].Detail = detail
		}
		return id
	}
	g.index[id] = len(g.Nodes)
	g.Nodes = append(g.Nodes, Node{ID: id, Kind: kind, Namespace: namespace, Name: name, Detail: detail})
	return id
}

func (g *Graph) addEdge(from, to, kind string, via ...string) {
	if g.edges == nil {
		g.edges = map[[3]string]int{}
	}
	key := [3]string{from, to, kind}
	if i, ok := g.edges[key]; ok {
		for _, v := range via {
			if !slices.Contains(g.Edges[i].Via, v) {
				g.Edges[i].Via = append(g.Edges[i].Via, v)
			}
		}
		return
	}
	g.edges[key] = len(g.Edges)
	g.Edges = append(g.Edges, Edge{From: from, To: to, Kind: kind, Via: slices.Clone(via)})
}

func (g *Graph) warn(format string) {
	if !slices.Contains(g.Warnings, format) {
		g.Warnings = append(g.Warnings, format)
	}
}

// Node returns the node with id.
func (g *Graph) Node(id string) (Node, bool) {
	for _, n := range g.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// sort puts nodes, edges, vias and warnings in their deterministic order and drops the
// lookup indexes.
func (g *Graph) sort() {
	slices.SortFunc(g.Nodes, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	for i := range g.Edges {
		slices.Sort(g.Edges[i].Via)
	}
	slices.SortFunc(g.Edges, func(a, b Edge) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Kind, b.Kind))
	})
	slices.Sort(g.Warnings)
	if g.Nodes == nil {
		g.Nodes = []Node{}
	}
	if g.Edges == nil {
		g.Edges = []Edge{}
	}
	g.index, g.edges = nil, nil
}

// Neighbourhood returns the part of g around instance id: its plan, class and broker,
// its bindings, their Secrets, the workloads consuming them and the instances sharing a
// consumer with it.
func (g *Graph) Neighbourhood(id string) *Graph {
	keep := map[string]bool{id: true}
	// Upwards: plan, class, broker.
	for cur := id; ; {
		parent := ""
		for _, e := range g.Edges {
			if e.To == cur && (e.Kind == EdgeProvisions || e.Kind == EdgeOffers) {
				parent = e.From
			}
		}
		if parent == "" || keep[parent] {
			break
		}
		keep[parent] = true
		cur = parent
	}
	// Downwards along binds, writes, consumed-by and projects-into; sideways along
	// shares-consumer.
	frontier := []string{id}
	for len(frontier) > 0 {
		cur := frontier[0]
		frontier = frontier[1:]
		for _, e := range g.Edges {
			var next string
			switch {
			case e.From == cur && (e.Kind == EdgeBinds || e.Kind == EdgeWrites || e.Kind == EdgeConsumedBy || e.Kind == EdgeProjects):
				next = e.To
			case cur == id && e.Kind == EdgeSharesConsumer && (e.From == id || e.To == id):
				next = e.From
				if next == id {
					next = e.To
				}
				keep[next] = true
				continue
			default:
				continue
			}
			if !keep[next] {
				keep[next] = true
				frontier = append(frontier, next)
			}
		}
	}
	out := &Graph{Warnings: slices.Clone(g.Warnings)}
	for _, n := range g.Nodes {
		if keep[n.ID] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	for _, e := range g.Edges {
		if keep[e.From] && keep[e.To] {
			out.Edges = append(out.Edges, e)
		}
	}
	out.sort()
	return out
}
