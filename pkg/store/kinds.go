package store

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// kind describes how one record kind is stored.
type kind[T v1alpha1.Record] struct {
	name string
	// finalize says whether Create adds Finalizer to the record; nil for never.
	finalize  func(T) bool
	newRecord func() T
	// parts returns pointers into the record: its metadata, spec and status (nil when the
	// kind has no status).
	parts func(T) (meta *metav1.ObjectMeta, spec, status any)
	// labels are the filter labels derived from the record; empty values are left out.
	labels func(T) map[string]string
	// ids are the OSB ids a record uses or may hold at the broker, each labelled
	// (IDLabel); nil for kinds without.
	ids func(T) []string
	// remember: the store remembers the spec of every record of the kind it reads, so
	// that a write leaving the spec unchanged leaves DataKey byte for byte as it was
	// (records whose spec has an author: brokers, instances, bindings).
	remember bool
	// maxSpecBytes bounds the spec of a record of the kind stored compressed (format
	// 3), as decompressed JSON; 0: records of the kind are never compressed, and a
	// ConfigMap's own limit bounds them. A reader never decodes more, whatever a
	// ConfigMap's writer put in it.
	maxSpecBytes int
}

func brokerKind() kind[*v1alpha1.Broker] {
	return kind[*v1alpha1.Broker]{
		name:      v1alpha1.KindBroker,
		remember:  true,
		finalize:  HoldsInstances,
		newRecord: func() *v1alpha1.Broker { return &v1alpha1.Broker{} },
		parts: func(o *v1alpha1.Broker) (*metav1.ObjectMeta, any, any) {
			return &o.ObjectMeta, &o.Spec, &o.Status
		},
		labels: func(o *v1alpha1.Broker) map[string]string {
			return map[string]string{LabelBroker: o.Name, LabelScope: string(o.Spec.Scope)}
		},
	}
}

// HoldsInstances reports whether broker b carries Finalizer: a namespace-scoped broker
// does, so that deleting its namespace cannot delete it (and its credentials Secret,
// which carries BrokerSecretFinalizer) before its instances are deprovisioned. A
// cluster-scoped broker does not: its instances live in other namespaces.
func HoldsInstances(b *v1alpha1.Broker) bool { return b.Spec.Scope == v1alpha1.ScopeNamespace }

func classKind() kind[*v1alpha1.ServiceClass] {
	return kind[*v1alpha1.ServiceClass]{
		name:         v1alpha1.KindServiceClass,
		maxSpecBytes: maxCompressedSpecBytes,
		newRecord:    func() *v1alpha1.ServiceClass { return &v1alpha1.ServiceClass{} },
		parts: func(o *v1alpha1.ServiceClass) (*metav1.ObjectMeta, any, any) {
			return &o.ObjectMeta, &o.Spec, &o.Status
		},
		labels: func(o *v1alpha1.ServiceClass) map[string]string {
			return map[string]string{
				LabelBroker: o.Spec.BrokerName, LabelClass: o.Spec.ExternalName, LabelScope: string(o.Spec.Scope),
			}
		},
	}
}

func schemasKind() kind[*v1alpha1.ServicePlanSchemas] {
	return kind[*v1alpha1.ServicePlanSchemas]{
		name:         v1alpha1.KindServicePlanSchemas,
		maxSpecBytes: maxCompressedSpecBytes,
		newRecord:    func() *v1alpha1.ServicePlanSchemas { return &v1alpha1.ServicePlanSchemas{} },
		parts: func(o *v1alpha1.ServicePlanSchemas) (*metav1.ObjectMeta, any, any) {
			return &o.ObjectMeta, &o.Spec, nil
		},
		labels: func(o *v1alpha1.ServicePlanSchemas) map[string]string {
			return map[string]string{LabelBroker: o.Spec.BrokerName, LabelScope: string(o.Spec.Scope)}
		},
	}
}

func accessKind() kind[*v1alpha1.CatalogAccess] {
	return kind[*v1alpha1.CatalogAccess]{
		name:      v1alpha1.KindCatalogAccess,
		newRecord: func() *v1alpha1.CatalogAccess { return &v1alpha1.CatalogAccess{} },
		parts: func(o *v1alpha1.CatalogAccess) (*metav1.ObjectMeta, any, any) {
			return &o.ObjectMeta, &o.Spec, nil
		},
		labels: func(*v1alpha1.CatalogAccess) map[string]string { return nil },
	}
}

func instanceKind() kind[*v1alpha1.ServiceInstance] {
	return kind[*v1alpha1.ServiceInstance]{
		name:      v1alpha1.KindServiceInstance,
		remember:  true,
		finalize:  func(*v1alpha1.ServiceInstance) bool { return true },
		newRecord: func() *v1alpha1.ServiceInstance { return &v1alpha1.ServiceInstance{} },
		parts: func(o *v1alpha1.ServiceInstance) (*metav1.ObjectMeta, any, any) {
			return &o.ObjectMeta, &o.Spec, &o.Status
		},
		labels: func(o *v1alpha1.ServiceInstance) map[string]string {
			return map[string]string{
				LabelBroker: o.Spec.BrokerName, LabelClass: o.Spec.ClassExternalName,
				LabelPlan: o.Spec.PlanExternalName, LabelScope: string(o.Spec.Scope),
			}
		},
		ids: func(o *v1alpha1.ServiceInstance) []string {
			ids := append([]string{o.Spec.ExternalID, o.Status.ExternalID}, o.Status.ExternalIDs...)
			if op := o.Status.InFlight; op != nil {
				ids = append(ids, op.InstanceID)
			}
			return ids
		},
	}
}

func bindingKind() kind[*v1alpha1.ServiceBinding] {
	return kind[*v1alpha1.ServiceBinding]{
		name:      v1alpha1.KindServiceBinding,
		remember:  true,
		finalize:  func(*v1alpha1.ServiceBinding) bool { return true },
		newRecord: func() *v1alpha1.ServiceBinding { return &v1alpha1.ServiceBinding{} },
		parts: func(o *v1alpha1.ServiceBinding) (*metav1.ObjectMeta, any, any) {
			return &o.ObjectMeta, &o.Spec, &o.Status
		},
		labels: func(o *v1alpha1.ServiceBinding) map[string]string {
			l := map[string]string{LabelInstance: o.Spec.InstanceName}
			if o.CrossNamespace() {
				l[LabelInstanceNamespace] = o.Spec.InstanceNamespace
			}
			return l
		},
		ids: func(o *v1alpha1.ServiceBinding) []string {
			ids := append([]string{o.Spec.ExternalID, o.Status.ExternalID}, o.Status.ExternalIDs...)
			ids = append(ids, o.Status.Retired...)
			if op := o.Status.InFlight; op != nil {
				ids = append(ids, op.BindingID)
			}
			if b := o.Status.Bound; b != nil {
				ids = append(ids, b.BindingID)
			}
			for _, p := range []*v1alpha1.BindingReference{o.Spec.Predecessor, o.Status.Predecessor} {
				if p != nil {
					ids = append(ids, p.ExternalID)
				}
			}
			return ids
		},
	}
}

// derivedLabels are the labels the store owns; whatever a record carries under these
// keys is replaced on every write.
func derivedLabels() []string {
	return []string{LabelKind, LabelBroker, LabelClass, LabelPlan, LabelInstance, LabelInstanceNamespace, LabelScope, LabelPending, LabelManagedBy}
}
