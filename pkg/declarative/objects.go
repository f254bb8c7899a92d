package declarative

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/migrate"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// Object is a document as what it asks of the catalog: an instance, a binding or a
// broker, in a namespace.
type Object struct {
	Doc             Document
	Kind            string // v1alpha1.KindServiceInstance, KindServiceBinding or KindBroker
	Namespace, Name string
	Metadata        engine.RecordMetadata
	Inst            *InstanceSpec
	Bind            *BindingSpec
	Broker          *v1alpha1.BrokerSpec
	// SvcatBroker is a ServiceBroker or ClusterServiceBroker manifest, read into broker
	// once its namespace is known (brokerFromSvcat).
	SvcatBroker *unstructured.Unstructured
	// Notes say what of the manifest was ignored.
	Notes []string
}

// InstanceSpec is what a manifest asks of an instance.
type InstanceSpec struct {
	// Class and Plan as provision takes them; Broker, when given, must be the Class's.
	Class, Broker, Plan string
	Params              *runtime.RawExtension
	From                []v1alpha1.ParametersFromSource
	ExternalID          string
	MaxBindings         *int32
	Allowed             []string
	SharedWith          []string
	UserProvided        bool
	// RebindOnUpdate is spec.rebindOnUpdate, empty for Never (RebindPolicy).
	RebindOnUpdate v1alpha1.RebindPolicy
}

// BindingSpec is what a manifest asks of a binding.
type BindingSpec struct {
	Instance, InstanceNamespace, SecretName string
	Params                                  *runtime.RawExtension
	From                                    []v1alpha1.ParametersFromSource
	Transforms                              []v1alpha1.SecretTransform
	Projections                             []v1alpha1.WorkloadProjection
	ExternalID                              string

	// SecretTemplate is spec.secretTemplate; nil for none.
	SecretTemplate *v1alpha1.SecretTemplate
}

// Order is the Order apply acts in: brokers, then instances, then bindings.
func (o *Object) Order() int {
	switch o.Kind {
	case v1alpha1.KindBroker:
		return 0
	case v1alpha1.KindServiceInstance:
		return 1
	}
	return 2
}

// Resource names the object as kubectl does ("serviceinstance/db").
func (o *Object) Resource() string { return strings.ToLower(o.Kind) + "/" + o.Name }

// Decode reads a document: an object of the catalog, or nil with a note for a kind
// apply does not handle.
func Decode(d Document) (obj *Object, skip string, err error) {
	u := d.Obj
	av, kind := u.GetAPIVersion(), u.GetKind()
	switch av {
	case ownAPIVersion:
		obj, err = decodeOwn(d, kind)
	case SvcatAPIVersion:
		obj, err = decodeSvcat(d, kind)
	default:
		return nil, fmt.Sprintf("skipped %s %q (%s): not a kind of the catalog", kind, u.GetName(), av), nil
	}
	if err != nil || obj == nil {
		if obj == nil && err == nil {
			return nil, fmt.Sprintf("skipped %s %q (%s): records of this kind are written by the catalog, not applied", kind, u.GetName(), av), nil
		}
		return nil, "", err
	}
	if obj.Name == "" {
		return nil, "", fmt.Errorf("%s has no metadata.name", kind)
	}
	if p := records.NameProblem(obj.Kind, obj.Name); p != "" {
		return nil, "", fmt.Errorf("%q is not a valid %s name: %s", obj.Name, kind, p)
	}
	obj.Doc = d
	obj.Metadata = engine.RecordMetadata{Labels: u.GetLabels(), Annotations: u.GetAnnotations()}
	return obj, "", nil
}

func decodeOwn(d Document, kind string) (*Object, error) {
	switch kind {
	case v1alpha1.KindServiceInstance:
		var r v1alpha1.ServiceInstance
		if err := d.Strict(&r); err != nil {
			return nil, err
		}
		s := r.Spec
		spec := &InstanceSpec{
			Class: s.ClassExternalName, Broker: s.BrokerName, Plan: s.PlanExternalName, Params: s.Parameters, From: s.ParametersFrom,
			ExternalID: s.ExternalID, MaxBindings: s.MaxBindings, Allowed: s.AllowedNamespaces, SharedWith: s.SharedWith,
			UserProvided: s.UserProvided != nil, RebindOnUpdate: RebindPolicy(s.RebindOnUpdate),
		}
		if !slices.Contains(v1alpha1.RebindPolicies, s.RebindOnUpdate) && s.RebindOnUpdate != "" {
			return nil, fmt.Errorf("ServiceInstance %q: spec.rebindOnUpdate %q is not one of Never, Always, PlanChange", r.Name, s.RebindOnUpdate)
		}
		if spec.UserProvided && spec.RebindOnUpdate != "" {
			return nil, fmt.Errorf("ServiceInstance %q: spec.rebindOnUpdate is for an instance of a broker: the bindings of a user-provided instance get a copy of its credentials whenever they change; leave it out", r.Name)
		}
		if spec.Class == "" {
			spec.Class = s.ClassID
		}
		if spec.Plan == "" {
			spec.Plan = s.PlanID
		}
		if spec.Class == "" && !spec.UserProvided {
			return nil, fmt.Errorf("ServiceInstance %q names no class: give spec.classExternalName", r.Name)
		}
		return &Object{Kind: kind, Namespace: r.Namespace, Name: r.Name, Inst: spec}, nil
	case v1alpha1.KindServiceBinding:
		var r v1alpha1.ServiceBinding
		if err := d.Strict(&r); err != nil {
			return nil, err
		}
		s := r.Spec
		if s.InstanceName == "" {
			return nil, fmt.Errorf("ServiceBinding %q names no instance: give spec.instanceName", r.Name)
		}
		return &Object{Kind: kind, Namespace: r.Namespace, Name: r.Name, Bind: &BindingSpec{
			Instance: s.InstanceName, InstanceNamespace: s.InstanceNamespace, SecretName: s.SecretName, Params: s.Parameters,
			From: s.ParametersFrom, Transforms: s.SecretTransforms, Projections: s.Projections, ExternalID: s.ExternalID,
			SecretTemplate: s.SecretTemplate,
		}}, nil
	case v1alpha1.KindBroker:
		var r v1alpha1.Broker
		if err := d.Strict(&r); err != nil {
			return nil, err
		}
		if r.Spec.Scope == "" {
			r.Spec.Scope = v1alpha1.ScopeCluster // register's default
		}
		if r.Spec.Scope != v1alpha1.ScopeCluster && r.Spec.Scope != v1alpha1.ScopeNamespace {
			return nil, fmt.Errorf("Broker %q: spec.scope must be %s or %s, not %q", r.Name, v1alpha1.ScopeCluster, v1alpha1.ScopeNamespace, r.Spec.Scope)
		}
		// Asked for by "sync broker", not by a manifest.
		r.Spec.RelistRequests = 0
		return &Object{Kind: kind, Namespace: r.Namespace, Name: r.Name, Broker: &r.Spec}, nil
	}
	return nil, nil
}

func decodeSvcat(d Document, kind string) (*Object, error) {
	u := d.Obj
	refused := func(err error) error {
		return fmt.Errorf("%s %q is refused, as \"kubectl catalog migrate svcat\" refuses it: %w", kind, u.GetName(), err)
	}
	switch kind {
	case "ServiceInstance":
		m, err := migrate.InstanceFromManifest(u)
		if err != nil {
			return nil, refused(err)
		}
		return &Object{Kind: v1alpha1.KindServiceInstance, Namespace: u.GetNamespace(), Name: u.GetName(), Notes: m.Ignored, Inst: &InstanceSpec{
			Class: m.Class, Plan: m.Plan, Params: m.Parameters, From: m.ParametersFrom, ExternalID: m.ExternalID,
		}}, nil
	case "ServiceBinding":
		m, err := migrate.BindingFromManifest(u)
		if err != nil {
			return nil, refused(err)
		}
		return &Object{Kind: v1alpha1.KindServiceBinding, Namespace: u.GetNamespace(), Name: u.GetName(), Notes: m.Ignored, Bind: &BindingSpec{
			Instance: m.Instance, SecretName: m.SecretName, Params: m.Parameters, From: m.ParametersFrom,
			Transforms: m.Transforms, ExternalID: m.ExternalID,
		}}, nil
	case "ServiceBroker", "ClusterServiceBroker":
		scope := v1alpha1.ScopeCluster
		if kind == "ServiceBroker" {
			scope = v1alpha1.ScopeNamespace
		}
		return &Object{Kind: v1alpha1.KindBroker, Namespace: u.GetNamespace(), Name: u.GetName(), Notes: migrate.BrokerIgnoredFields(u),
			Broker: &v1alpha1.BrokerSpec{Scope: scope}, SvcatBroker: u}, nil
	}
	return nil, nil
}

// BrokerFromSvcat reads obj's ServiceBroker or ClusterServiceBroker manifest, in obj's
// namespace, as "migrate svcat" reads the live object, refused for the same reasons.
func BrokerFromSvcat(obj *Object, catalogNamespace string) error {
	u := obj.SvcatBroker.DeepCopy()
	if obj.Broker.Scope == v1alpha1.ScopeNamespace {
		u.SetNamespace(obj.Namespace)
	} else {
		u.SetNamespace("")
	}
	b, err := migrate.BrokerFromManifest(u, catalogNamespace)
	if err != nil {
		return fmt.Errorf("%s %q is refused, as \"kubectl catalog migrate svcat\" refuses it: %w", u.GetKind(), u.GetName(), err)
	}
	obj.Broker = &b.Spec
	return nil
}
