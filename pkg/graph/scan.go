package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// PageSize is the number of objects asked for in each page of a LIST.
const PageSize = 500

// Options say what to read.
type Options struct {
	// Namespace is the namespace shown; ignored with AllNamespaces.
	Namespace string
	// AllNamespaces shows every namespace.
	AllNamespaces bool
	// CatalogNamespace holds cluster-scoped brokers.
	CatalogNamespace string
}

// Build reads the records with st and the workloads with core, one paginated LIST per
// kind and namespace, and returns the graph. A LIST the user may not make is not an
// error: it becomes a warning and the graph shows what the rest revealed. Any other
// failure is returned.
func Build(ctx context.Context, core kubernetes.Interface, st *store.Store, o Options) (*Graph, error) {
	g := &Graph{}
	ns := o.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	where := func(namespace string) string {
		if namespace == "" {
			return "all namespaces"
		}
		return namespace
	}
	// soft turns a forbidden error into a warning.
	soft := func(err error, what, namespace string) error {
		if err == nil {
			return nil
		}
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			g.warn(fmt.Sprintf("could not list %s in %s: forbidden", what, where(namespace)))
			return nil
		}
		var se *store.Error
		if errors.As(err, &se) && (se.Reason == store.ReasonCorrupt || se.Reason == store.ReasonUnsupportedFormat) {
			g.warn(err.Error())
			return nil
		}
		return err
	}

	// Brokers: the namespace's own and the cluster-scoped ones.
	brokerNS := []string{ns}
	if ns != "" && ns != o.CatalogNamespace {
		brokerNS = []string{o.CatalogNamespace, ns}
	}
	for _, bns := range brokerNS {
		brokers, err := st.Brokers().List(ctx, bns, store.Filter{})
		if err := soft(err, "brokers", bns); err != nil {
			return nil, err
		}
		for _, b := range brokers {
			g.addNode(KindBroker, b.Namespace, b.Name, "")
		}
	}

	instances, err := st.Instances().List(ctx, ns, store.Filter{})
	if err := soft(err, "instances", ns); err != nil {
		return nil, err
	}
	for _, in := range instances {
		bns := in.Namespace
		if in.Spec.Scope == v1alpha1.ScopeCluster {
			bns = o.CatalogNamespace
		}
		broker := g.addNode(KindBroker, bns, in.Spec.BrokerName, "")
		classPath := in.Spec.BrokerName + "/" + in.Spec.ClassExternalName
		class := g.addNodeID(NodeID(KindClass, bns, classPath), KindClass, bns, in.Spec.ClassExternalName, "")
		plan := g.addNodeID(NodeID(KindPlan, bns, classPath+"/"+in.Spec.PlanExternalName), KindPlan, bns, in.Spec.PlanExternalName, "")
		id := g.addNode(KindInstance, in.Namespace, in.Name, "")
		g.addEdge(broker, class, EdgeOffers)
		g.addEdge(class, plan, EdgeOffers)
		g.addEdge(plan, id, EdgeProvisions)
	}

	bindings, err := st.Bindings().List(ctx, ns, store.Filter{})
	if err := soft(err, "bindings", ns); err != nil {
		return nil, err
	}
	// secretInstances maps a Secret's node id to the instances whose bindings write it.
	secretInstances := map[string][]string{}
	for _, b := range bindings {
		inst := g.addNode(KindInstance, b.Namespace, b.Spec.InstanceName, "")
		id := g.addNode(KindBinding, b.Namespace, b.Name, "")
		g.addEdge(inst, id, EdgeBinds)
		secretName := b.Spec.SecretName
		if b.Status.Secret != nil && b.Status.Secret.Name != "" {
			secretName = b.Status.Secret.Name
		}
		if secretName != "" {
			sec := g.addNode(KindSecret, b.Namespace, secretName, "")
			g.addEdge(id, sec, EdgeWrites)
			if !slices.Contains(secretInstances[sec], inst) {
				secretInstances[sec] = append(secretInstances[sec], inst)
			}
		}
		for _, p := range slices.Concat(b.Spec.Projections, b.Status.Projected) {
			w := g.addNode(p.Kind, b.Namespace, p.Name, "")
			g.addEdge(id, w, EdgeProjects)
		}
	}

	// consumers maps a workload's node id to the Secrets (node ids) it consumes.
	consumers := map[string][]string{}
	consume := func(kind, namespace, name string, spec *corev1.PodSpec) {
		for secret, via := range SecretRefs(spec) {
			sec := NodeID(KindSecret, namespace, secret)
			if _, ok := secretInstances[sec]; !ok {
				continue // not a binding's Secret
			}
			w := g.addNode(kind, namespace, name, "")
			g.addEdge(sec, w, EdgeConsumedBy, via...)
			consumers[w] = append(consumers[w], sec)
		}
	}
	apps := core.AppsV1()
	batch := core.BatchV1()
	scans := []struct {
		what string
		list func(metav1.ListOptions) (string, error)
	}{
		{"deployments", func(lo metav1.ListOptions) (string, error) {
			l, err := apps.Deployments(ns).List(ctx, lo)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				consume("Deployment", l.Items[i].Namespace, l.Items[i].Name, &l.Items[i].Spec.Template.Spec)
			}
			return l.Continue, nil
		}},
		{"statefulsets", func(lo metav1.ListOptions) (string, error) {
			l, err := apps.StatefulSets(ns).List(ctx, lo)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				consume("StatefulSet", l.Items[i].Namespace, l.Items[i].Name, &l.Items[i].Spec.Template.Spec)
			}
			return l.Continue, nil
		}},
		{"daemonsets", func(lo metav1.ListOptions) (string, error) {
			l, err := apps.DaemonSets(ns).List(ctx, lo)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				consume("DaemonSet", l.Items[i].Namespace, l.Items[i].Name, &l.Items[i].Spec.Template.Spec)
			}
			return l.Continue, nil
		}},
		{"cronjobs", func(lo metav1.ListOptions) (string, error) {
			l, err := batch.CronJobs(ns).List(ctx, lo)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				consume("CronJob", l.Items[i].Namespace, l.Items[i].Name, &l.Items[i].Spec.JobTemplate.Spec.Template.Spec)
			}
			return l.Continue, nil
		}},
		{"jobs", func(lo metav1.ListOptions) (string, error) {
			l, err := batch.Jobs(ns).List(ctx, lo)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				if controlledBy(l.Items[i].OwnerReferences, "CronJob") {
					continue // the CronJob's template says it
				}
				consume("Job", l.Items[i].Namespace, l.Items[i].Name, &l.Items[i].Spec.Template.Spec)
			}
			return l.Continue, nil
		}},
		{"pods", func(lo metav1.ListOptions) (string, error) {
			l, err := core.CoreV1().Pods(ns).List(ctx, lo)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				if controlledBy(l.Items[i].OwnerReferences, podControllers...) {
					continue // its controller's template says it
				}
				consume("Pod", l.Items[i].Namespace, l.Items[i].Name, &l.Items[i].Spec)
			}
			return l.Continue, nil
		}},
	}
	if len(secretInstances) > 0 {
		for _, s := range scans {
			lo := metav1.ListOptions{Limit: PageSize}
			for {
				next, err := s.list(lo)
				if apierrors.IsResourceExpired(err) && lo.Continue != "" {
					// The snapshot expired between pages: the pages already read
					// stay (edges are idempotent); list the rest in one request.
					lo.Continue, lo.Limit = "", 0
					continue
				}
				if err := soft(err, s.what, ns); err != nil {
					return nil, err
				}
				if err != nil || next == "" {
					break
				}
				lo.Continue = next
			}
		}
	}

	// Instance to instance: a workload consuming Secrets of bindings to two instances
	// links them, from the smaller id to the larger.
	for w, secrets := range consumers {
		var insts []string
		for _, s := range secrets {
			for _, in := range secretInstances[s] {
				if !slices.Contains(insts, in) {
					insts = append(insts, in)
				}
			}
		}
		slices.Sort(insts)
		for i := range insts {
			for j := i + 1; j < len(insts); j++ {
				g.addEdge(insts[i], insts[j], EdgeSharesConsumer, w)
			}
		}
	}
	g.sort()
	return g, nil
}

// podControllers are the owners whose Pods are described by a scanned template: a
// ReplicaSet's by its Deployment's.
var podControllers = []string{"ReplicaSet", "StatefulSet", "DaemonSet", "Job"}

func controlledBy(refs []metav1.OwnerReference, kinds ...string) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller && slices.Contains(kinds, r.Kind) {
			return true
		}
	}
	return false
}
