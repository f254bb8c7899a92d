// Package graph builds the service graph: the brokers, classes and plans instances use,
// the instances, their bindings, the bindings' credentials Secrets and the workloads whose
// Pod templates consume those Secrets, plus edges between instances whose Secrets one
// workload consumes together. It renders the graph as a tree, Graphviz dot, mermaid or
// JSON. Secrets are never read: they appear by name only, as binding records and Pod
// templates name them.
package graph

import (
	"cmp"
	"slices"
	"strings"
)

// Node kinds of the catalog's own objects; workloads are nodes of their Kubernetes kind
// (Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod).
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
	// EdgeSharesConsumer: instance to instance (the smaller id to the larger), when one
	// workload consumes Secrets of bindings to both.
	EdgeSharesConsumer = "shares-consumer"
)

// Node is one object of the graph. ID is stable: kind in lower case, namespace and name
// ("instance/team-a/db"); a cluster-scoped broker, its classes and plans have an empty
// namespace, and a class's or plan's name in its ID is prefixed by its broker's (and
// class's) so that two brokers' classes of one name stay apart.
type Node struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Detail is a short note: an instance's or binding's phase, "not found" for an
	// instance bindings name that its namespace does not hold.
	Detail string `json:"detail,omitempty"`
}

// Edge links two nodes by ID.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
	// Via says how: the Pod template locations of a consumed-by edge ("env", "envFrom",
	// "volume"), the workloads (node ids) of a shares-consumer edge.
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

// addNode adds a node (or sets the detail of the node already there, if it has none) and
// returns its id.
func (g *Graph) addNode(id, kind, namespace, name, detail string) string {
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

// addEdge adds an edge, or the vias it lacks to the edge already there.
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

func (g *Graph) warn(msg string) {
	if !slices.Contains(g.Warnings, msg) {
		g.Warnings = append(g.Warnings, msg)
	}
}

// Node returns the node with id.
func (g *Graph) Node(id string) (Node, bool) {
	i := slices.IndexFunc(g.Nodes, func(n Node) bool { return n.ID == id })
	if i < 0 {
		return Node{}, false
	}
	return g.Nodes[i], true
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

// Neighbourhood returns the part of g around the instance id: its plan, class and
// broker, its bindings, their Secrets, the workloads consuming them, and the instances
// sharing a consumer with it (without their own bindings).
func (g *Graph) Neighbourhood(id string) *Graph {
	keep := map[string]bool{id: true}
	// Upwards: plan, class, broker (each node has one parent along these edges).
	for cur := id; ; {
		i := slices.IndexFunc(g.Edges, func(e Edge) bool {
			return e.To == cur && (e.Kind == EdgeProvisions || e.Kind == EdgeOffers)
		})
		if i < 0 || keep[g.Edges[i].From] {
			break
		}
		cur = g.Edges[i].From
		keep[cur] = true
	}
	// Downwards along binds, writes and consumed-by.
	down := []string{EdgeBinds, EdgeWrites, EdgeConsumedBy}
	for frontier := []string{id}; len(frontier) > 0; {
		cur := frontier[0]
		frontier = frontier[1:]
		for _, e := range g.Edges {
			if e.From == cur && slices.Contains(down, e.Kind) && !keep[e.To] {
				keep[e.To] = true
				frontier = append(frontier, e.To)
			}
		}
	}
	// Sideways: the instances sharing a consumer.
	for _, e := range g.Edges {
		if e.Kind == EdgeSharesConsumer && (e.From == id || e.To == id) {
			keep[e.From], keep[e.To] = true, true
		}
	}
	out := &Graph{Warnings: slices.Clone(g.Warnings)}
	for _, n := range g.Nodes {
		if keep[n.ID] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	for _, e := range g.Edges {
		if keep[e.From] && keep[e.To] && (e.Kind != EdgeSharesConsumer || e.From == id || e.To == id) {
			out.Edges = append(out.Edges, e)
		}
	}
	out.sort()
	return out
}
