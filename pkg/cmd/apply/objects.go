package apply

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/migrate"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/records"
)

// object is a document as what it asks of the catalog: an instance, a binding or a
// broker, in a namespace.
type object struct {
	doc             document
	kind            string // v1alpha1.KindServiceInstance, KindServiceBinding or KindBroker
	namespace, name string
	metadata        engine.RecordMetadata
	inst            *instanceSpec
	bind            *bindingSpec
	broker          *v1alpha1.BrokerSpec
	// svcatBroker is a ServiceBroker or ClusterServiceBroker manifest, read into broker
	// once its namespace is known (brokerFromSvcat).
	svcatBroker *unstructured.Unstructured
	// notes say what of the manifest was ignored.
	notes []string
}

// instanceSpec is what a manifest asks of an instance.
type instanceSpec struct {
	// class and plan as provision takes them; broker, when given, must be the class's.
	class, broker, plan string
	params              *runtime.RawExtension
	from                []v1alpha1.ParametersFromSource
	externalID          string
	maxBindings         *int32
	allowed             []string
	sharedWith          []string
	userProvided        bool
}

// bindingSpec is what a manifest asks of a binding.
type bindingSpec struct {
	instance, instanceNamespace, secretName string
	params                                  *runtime.RawExtension
	from                                    []v1alpha1.ParametersFromSource
	transforms                              []v1alpha1.SecretTransform
	projections                             []v1alpha1.WorkloadProjection
	externalID                              string
}

// order is the order apply acts in: brokers, then instances, then bindings.
func (o *object) order() int {
	switch o.kind {
	case v1alpha1.KindBroker:
		return 0
	case v1alpha1.KindServiceInstance:
		return 1
	}
	return 2
}

// resource names the object as kubectl does ("serviceinstance/db").
func (o *object) resource() string { return strings.ToLower(o.kind) + "/" + o.name }

// decode reads a document: an object of the catalog, or nil with a note for a kind
// apply does not handle.
func decode(d document) (obj *object, skip string, err error) {
	u := d.Obj
	av, kind := u.GetAPIVersion(), u.GetKind()
	switch av {
	case ownAPIVersion:
		obj, err = decodeOwn(d, kind)
	case svcatAPIVersion:
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
	if obj.name == "" {
		return nil, "", fmt.Errorf("%s has no metadata.name", kind)
	}
	if p := records.NameProblem(obj.kind, obj.name); p != "" {
		return nil, "", fmt.Errorf("%q is not a valid %s name: %s", obj.name, kind, p)
	}
	obj.doc = d
	obj.metadata = engine.RecordMetadata{Labels: u.GetLabels(), Annotations: u.GetAnnotations()}
	return obj, "", nil
}

func decodeOwn(d document, kind string) (*object, error) {
	switch kind {
	case v1alpha1.KindServiceInstance:
		var r v1alpha1.ServiceInstance
		if err := d.strict(&r); err != nil {
			return nil, err
		}
		s := r.Spec
		spec := &instanceSpec{
			class: s.ClassExternalName, broker: s.BrokerName, plan: s.PlanExternalName, params: s.Parameters, from: s.ParametersFrom,
			externalID: s.ExternalID, maxBindings: s.MaxBindings, allowed: s.AllowedNamespaces, sharedWith: s.SharedWith,
			userProvided: s.UserProvided != nil,
		}
		if spec.class == "" {
			spec.class = s.ClassID
		}
		if spec.plan == "" {
			spec.plan = s.PlanID
		}
		if spec.class == "" && !spec.userProvided {
			return nil, fmt.Errorf("ServiceInstance %q names no class: give spec.classExternalName", r.Name)
		}
		return &object{kind: kind, namespace: r.Namespace, name: r.Name, inst: spec}, nil
	case v1alpha1.KindServiceBinding:
		var r v1alpha1.ServiceBinding
		if err := d.strict(&r); err != nil {
			return nil, err
		}
		s := r.Spec
		if s.InstanceName == "" {
			return nil, fmt.Errorf("ServiceBinding %q names no instance: give spec.instanceName", r.Name)
		}
		return &object{kind: kind, namespace: r.Namespace, name: r.Name, bind: &bindingSpec{
			instance: s.InstanceName, instanceNamespace: s.InstanceNamespace, secretName: s.SecretName, params: s.Parameters,
			from: s.ParametersFrom, transforms: s.SecretTransforms, projections: s.Projections, externalID: s.ExternalID,
		}}, nil
	case v1alpha1.KindBroker:
		var r v1alpha1.Broker
		if err := d.strict(&r); err != nil {
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
		return &object{kind: kind, namespace: r.Namespace, name: r.Name, broker: &r.Spec}, nil
	}
	return nil, nil
}

func decodeSvcat(d document, kind string) (*object, error) {
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
		return &object{kind: v1alpha1.KindServiceInstance, namespace: u.GetNamespace(), name: u.GetName(), notes: m.Ignored, inst: &instanceSpec{
			class: m.Class, plan: m.Plan, params: m.Parameters, from: m.ParametersFrom, externalID: m.ExternalID,
		}}, nil
	case "ServiceBinding":
		m, err := migrate.BindingFromManifest(u)
		if err != nil {
			return nil, refused(err)
		}
		return &object{kind: v1alpha1.KindServiceBinding, namespace: u.GetNamespace(), name: u.GetName(), notes: m.Ignored, bind: &bindingSpec{
			instance: m.Instance, secretName: m.SecretName, params: m.Parameters, from: m.ParametersFrom,
			transforms: m.Transforms, externalID: m.ExternalID,
		}}, nil
	case "ServiceBroker", "ClusterServiceBroker":
		scope := v1alpha1.ScopeCluster
		if kind == "ServiceBroker" {
			scope = v1alpha1.ScopeNamespace
		}
		return &object{kind: v1alpha1.KindBroker, namespace: u.GetNamespace(), name: u.GetName(), notes: migrate.BrokerIgnoredFields(u),
			broker: &v1alpha1.BrokerSpec{Scope: scope}, svcatBroker: u}, nil
	}
	return nil, nil
}

// brokerFromSvcat reads obj's ServiceBroker or ClusterServiceBroker manifest, in obj's
// namespace, as "migrate svcat" reads the live object, refused for the same reasons.
func brokerFromSvcat(obj *object, catalogNamespace string) error {
	u := obj.svcatBroker.DeepCopy()
	if obj.broker.Scope == v1alpha1.ScopeNamespace {
		u.SetNamespace(obj.namespace)
	} else {
		u.SetNamespace("")
	}
	b, err := migrate.BrokerFromManifest(u, catalogNamespace)
	if err != nil {
		return fmt.Errorf("%s %q is refused, as \"kubectl catalog migrate svcat\" refuses it: %w", u.GetKind(), u.GetName(), err)
	}
	obj.broker = &b.Spec
	return nil
}
