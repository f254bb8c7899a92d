package graph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// PageSize is the number of objects asked for in each page of a workload LIST.
const PageSize = 500

// Options say what to read.
type Options struct {
	// Namespace is the namespace shown; ignored with AllNamespaces.
	Namespace string
	// AllNamespaces shows every namespace.
	AllNamespaces bool
}

// Input is what a graph is made of.
type Input struct {
	Instances []*v1alpha1.ServiceInstance
	Bindings  []*v1alpha1.ServiceBinding
	Workloads []Workload
	// Listed are the namespaces whose instances were all listed ("" for every
	// namespace): an instance a binding there names and Instances lacks is "not found".
	Listed []string
	// Warnings say what could not be read.
	Warnings []string
}

// Assemble builds the graph of in: plan to instance (under its class and broker),
// instance to binding, binding to Secret, Secret to each workload consuming it, and
// instance to instance where one workload consumes Secrets of bindings to both.
// Workloads consuming no binding's Secret are left out.
func Assemble(in Input) *Graph {
	g := &Graph{}
	for _, w := range in.Warnings {
		g.warn(w)
	}
	listed := map[string]bool{}
	for _, inst := range in.Instances {
		listed[NodeID(KindInstance, inst.Namespace, inst.Name)] = true
		ns := inst.Namespace
		if inst.Spec.Scope == v1alpha1.ScopeCluster {
			ns = "" // a cluster-scoped broker serves every namespace
		}
		s := inst.Spec
		if inst.IsUserProvided() {
			// No broker, class or plan: the instance stands alone.
			g.addNode(NodeID(KindInstance, inst.Namespace, inst.Name), KindInstance, inst.Namespace, inst.Name, "user-provided, "+phase(inst.Status.Phase, inst.DeletionTimestamp))
			continue
		}
		broker := g.addNode(NodeID(KindBroker, ns, s.BrokerName), KindBroker, ns, s.BrokerName, "")
		class := g.addNode(NodeID(KindClass, ns, s.BrokerName+"/"+s.ClassExternalName), KindClass, ns, s.ClassExternalName, "")
		plan := g.addNode(NodeID(KindPlan, ns, s.BrokerName+"/"+s.ClassExternalName+"/"+s.PlanExternalName), KindPlan, ns, s.PlanExternalName, "")
		id := g.addNode(NodeID(KindInstance, inst.Namespace, inst.Name), KindInstance, inst.Namespace, inst.Name, phase(inst.Status.Phase, inst.DeletionTimestamp))
		g.addEdge(broker, class, EdgeOffers)
		g.addEdge(class, plan, EdgeOffers)
		g.addEdge(plan, id, EdgeProvisions)
	}

	// secretInstances maps a Secret's node id to the instances whose bindings write it.
	secretInstances := map[string][]string{}
	for _, b := range in.Bindings {
		ins, iname := b.InstanceRef()
		instID := NodeID(KindInstance, ins, iname)
		detail := ""
		if !listed[instID] && (slices.Contains(in.Listed, ins) || slices.Contains(in.Listed, "")) {
			detail = "not found"
		}
		inst := g.addNode(instID, KindInstance, ins, iname, detail)
		id := g.addNode(NodeID(KindBinding, b.Namespace, b.Name), KindBinding, b.Namespace, b.Name, phase(b.Status.Phase, b.DeletionTimestamp))
		g.addEdge(inst, id, EdgeBinds)
		secretName := b.Spec.SecretName
		if b.Status.Secret != nil && b.Status.Secret.Name != "" {
			secretName = b.Status.Secret.Name
		}
		if secretName == "" {
			continue
		}
		// A binding's Secret is always in the binding's namespace.
		sec := g.addNode(NodeID(KindSecret, b.Namespace, secretName), KindSecret, b.Namespace, secretName, "")
		g.addEdge(id, sec, EdgeWrites)
		if !slices.Contains(secretInstances[sec], inst) {
			secretInstances[sec] = append(secretInstances[sec], inst)
		}
	}

	for _, w := range in.Workloads {
		var insts []string
		id := NodeID(w.Kind, w.Namespace, w.Name)
		for secret, via := range w.Secrets {
			sec := NodeID(KindSecret, w.Namespace, secret)
			if _, ok := secretInstances[sec]; !ok {
				continue // not a binding's Secret
			}
			g.addNode(id, w.Kind, w.Namespace, w.Name, "")
			g.addEdge(sec, id, EdgeConsumedBy, via...)
			for _, inst := range secretInstances[sec] {
				if !slices.Contains(insts, inst) {
					insts = append(insts, inst)
				}
			}
		}
		slices.Sort(insts)
		for i := range insts {
			for j := i + 1; j < len(insts); j++ {
				g.addEdge(insts[i], insts[j], EdgeSharesConsumer, id)
			}
		}
	}
	g.sort()
	return g
}

func phase(p v1alpha1.Phase, deleting *metav1.Time) string {
	if deleting != nil {
		return "Deleting"
	}
	return string(p)
}

// Build reads the instances and bindings with st and the workloads with core, in
// o's namespace or every namespace, and assembles the graph. It makes one paginated LIST
// per kind: instance and binding records, then (when there are bindings) Deployments,
// StatefulSets, DaemonSets, Jobs, CronJobs and Pods; for one namespace, also the
// bindings and workloads of the namespaces its instances are shared with
// (listConsumers). A LIST the user may not make is not
// an error: it becomes a warning and the graph shows what the rest revealed; so does a
// record that cannot be read. When neither the instances nor the bindings may be listed,
// there is nothing to show: that is the error (forbidden), as "get" gives it. Any other failure is returned. Secrets are never read.
func Build(ctx context.Context, core kubernetes.Interface, st *store.Store, o Options) (*Graph, error) {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	in := Input{}
	// The two lists go out together; the bindings' is looked at after the instances'.
	listed := ahead.Start(ctx, func() ([]*v1alpha1.ServiceBinding, error) { return st.Bindings().List(ctx, ns, store.Filter{}) })
	instances, instErr := listInstances(ctx, st, ns)
	if in.Instances, instErr = readable(&in, instances, instErr); instErr != nil {
		if !store.IsForbidden(instErr) {
			return nil, instErr
		}
		in.Warnings = append(in.Warnings, forbidden("instances", ns))
	} else {
		in.Listed = []string{ns}
	}
	bindings, err := listed.Wait()
	if in.Bindings, err = readable(&in, bindings, err); err != nil {
		if !store.IsForbidden(err) {
			return nil, err
		}
		if instErr != nil {
			// Nothing of the namespace may be read: that is no empty graph, but the
			// error "get" gives.
			return nil, instErr
		}
		in.Warnings = append(in.Warnings, forbidden("bindings", ns))
	}
	if len(in.Bindings) > 0 {
		if err := listWorkloads(ctx, core, ns, &in); err != nil {
			return nil, err
		}
	}
	if ns != "" {
		if err := listConsumers(ctx, core, st, ns, &in); err != nil {
			return nil, err
		}
	}
	return Assemble(in), nil
}

// listConsumers adds, for a graph of namespace ns, the bindings other namespaces hold
// on ns's shared instances, and the workloads there that use them. Only the namespaces
// an instance is shared with are looked in, each with one LIST of the binding records
// naming an instance of ns (by label), then its workloads if it holds any.
func listConsumers(ctx context.Context, core kubernetes.Interface, st *store.Store, ns string, in *Input) error {
	var shared []string
	for _, inst := range in.Instances {
		for _, c := range inst.Spec.SharedWith {
			if c != ns && !slices.Contains(shared, c) {
				shared = append(shared, c)
			}
		}
	}
	slices.Sort(shared)
	sel := labels.SelectorFromSet(labels.Set{store.LabelInstanceNamespace: store.LabelValue(ns)})
	for _, c := range shared {
		bindings, err := st.Bindings().List(ctx, c, store.Filter{Selector: sel})
		bindings, err = readable(in, bindings, err)
		switch {
		case store.IsForbidden(err):
			in.Warnings = append(in.Warnings, fmt.Sprintf("could not list bindings in %s, which instances of %s are shared with: forbidden", c, ns))
			continue
		case err != nil:
			return err
		}
		// Only the bindings of this namespace's instances: the label says so, the spec
		// decides.
		var mine []*v1alpha1.ServiceBinding
		for _, b := range bindings {
			if ins, _ := b.InstanceRef(); ins == ns {
				mine = append(mine, b)
			}
		}
		if len(mine) == 0 {
			continue
		}
		in.Bindings = append(in.Bindings, mine...)
		if err := listWorkloads(ctx, core, c, in); err != nil {
			return err
		}
	}
	return nil
}

// listInstances lists the instances of ns ("" for all) a page at a time and keeps of
// each only what the graph shows (graphInstance), sorted by namespace and name as List
// sorts them: a graph of every namespace of a large cluster holds the instances'
// names, plans and phases, not the records. Records that do not decode are returned as
// List returns them, joined in the error beside the others.
func listInstances(ctx context.Context, st *store.Store, ns string) ([]*v1alpha1.ServiceInstance, error) {
	var items []*v1alpha1.ServiceInstance
	var bad []error
	err := st.Instances().ListPages(ctx, ns, store.Filter{}, func(page []*v1alpha1.ServiceInstance, unreadable []error) error {
		for _, inst := range page {
			items = append(items, graphInstance(inst))
		}
		bad = append(bad, unreadable...)
		return nil
	}, func() { items, bad = nil, nil })
	if err != nil {
		return nil, err
	}
	slices.SortFunc(items, func(a, b *v1alpha1.ServiceInstance) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return items, errors.Join(bad...)
}

// graphInstance is what Assemble and listConsumers read of an instance: its name,
// deletion, scope, broker, class and plan, whether it is user-provided, the namespaces
// it is shared with, and its phase.
func graphInstance(inst *v1alpha1.ServiceInstance) *v1alpha1.ServiceInstance {
	g := &v1alpha1.ServiceInstance{}
	g.Namespace, g.Name, g.DeletionTimestamp = inst.Namespace, inst.Name, inst.DeletionTimestamp
	s := &inst.Spec
	g.Spec.Scope, g.Spec.BrokerName, g.Spec.ClassExternalName, g.Spec.PlanExternalName = s.Scope, s.BrokerName, s.ClassExternalName, s.PlanExternalName
	g.Spec.SharedWith, g.Spec.UserProvided = s.SharedWith, s.UserProvided
	g.Status.Phase = inst.Status.Phase
	return g
}

// readable returns the records a store List returned; a record that could not be read
// becomes a warning of in. The error is the List's failure, if it failed.
func readable[T any](in *Input, items []T, err error) ([]T, error) {
	if err == nil {
		return items, nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if !store.IsCorrupt(e) && !store.IsUnsupportedFormat(e) {
			return nil, err
		}
	}
	for _, e := range errs {
		in.Warnings = append(in.Warnings, e.Error())
	}
	return items, nil
}

func forbidden(what, ns string) string {
	where := "in " + ns
	if ns == "" {
		where = "in any namespace"
	}
	return fmt.Sprintf("could not list %s %s: forbidden", what, where)
}

// workloadKinds are the workloads scanned, with their LIST.
func workloadKinds(ctx context.Context, core kubernetes.Interface, ns string) []struct {
	what string
	list pager.ListPageFunc
} {
	apps, batch, v1 := core.AppsV1(), core.BatchV1(), core.CoreV1()
	return []struct {
		what string
		list pager.ListPageFunc
	}{
		{"deployments", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return apps.Deployments(ns).List(ctx, o)
		}},
		{"statefulsets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return apps.StatefulSets(ns).List(ctx, o)
		}},
		{"daemonsets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return apps.DaemonSets(ns).List(ctx, o)
		}},
		{"jobs", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return batch.Jobs(ns).List(ctx, o)
		}},
		{"cronjobs", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return batch.CronJobs(ns).List(ctx, o)
		}},
		{"pods", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return v1.Pods(ns).List(ctx, o)
		}},
	}
}

// listWorkloads lists each workload kind in ns, page by page, keeping those that
// reference a Secret. If a continue token expires, the kind is listed again in one
// request (client-go's pager).
func listWorkloads(ctx context.Context, core kubernetes.Interface, ns string, in *Input) error {
	// The kinds are listed together (each page after the one before), and looked at in
	// turn, so that what is reported, and in which order, does not depend on which
	// answer came first.
	kinds := workloadKinds(ctx, core, ns)
	lists := make([]*ahead.Read[[]Workload], len(kinds))
	for i, k := range kinds {
		lists[i] = ahead.Start(ctx, func() ([]Workload, error) {
			var found []Workload
			p := pager.New(k.list)
			p.PageSize = PageSize
			err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
				if w, ok := WorkloadOf(obj); ok && len(w.Secrets) > 0 {
					found = append(found, w)
				}
				return nil
			})
			return found, err
		})
	}
	for i, k := range kinds {
		found, err := lists[i].Wait()
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			in.Warnings = append(in.Warnings, forbidden(k.what, ns))
		case err != nil:
			return fmt.Errorf("cannot list %s: %w", k.what, err)
		default:
			in.Workloads = append(in.Workloads, found...)
		}
	}
	return nil
}
