package migrate

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// The retired Service Catalog's manifests (files of servicecatalog.k8s.io/v1beta1
// objects, as kept in Git) read as what a user asks the catalog's verbs for: "kubectl
// catalog apply -f" provisions and binds them. They are read with the same rules as the
// live objects "migrate svcat" moves, and refused for the same reasons.

// ManifestInstance is a ServiceInstance manifest as a provision request.
type ManifestInstance struct {
	// Class and Plan name the class and plan as provision takes them: the external
	// name, or the OSB id (svcat named its class and plan objects by their OSB ids).
	Class, Plan string
	Parameters  *runtime.RawExtension
	// ParametersFrom are Secret references, read on every broker call, never copied.
	ParametersFrom []v1alpha1.ParametersFromSource
	// ExternalID is the OSB instance id the manifest gives; empty for a new one.
	ExternalID string
	// Ignored say which fields the catalog does not act on, and why.
	Ignored []string
}

// ManifestBinding is a ServiceBinding manifest as a bind request.
type ManifestBinding struct {
	Instance, SecretName string
	Parameters           *runtime.RawExtension
	ParametersFrom       []v1alpha1.ParametersFromSource
	Transforms           []v1alpha1.SecretTransform
	ExternalID           string
	Ignored              []string
}

// manifestParameters reads an object's spec.parameters and spec.parametersFrom.
func manifestParameters(u *unstructured.Unstructured) (*runtime.RawExtension, []v1alpha1.ParametersFromSource, error) {
	params, err := rawParameters(u)
	if err != nil {
		return nil, nil, err
	}
	from, err := parametersFrom(u)
	if err != nil {
		return nil, nil, err
	}
	return params, from, nil
}

// InstanceFromManifest reads a ServiceInstance manifest.
func InstanceFromManifest(u *unstructured.Unstructured) (*ManifestInstance, error) {
	classRef, planRef := refsOf(u, "clusterService")
	if classRef.empty() {
		classRef, planRef = refsOf(u, "service")
	}
	if classRef.empty() || planRef.empty() {
		return nil, errors.New("it names no class or no plan")
	}
	params, from, err := manifestParameters(u)
	if err != nil {
		return nil, err
	}
	return &ManifestInstance{
		Class: classRef.request(), Plan: planRef.request(), Parameters: params, ParametersFrom: from,
		ExternalID: str(u, "spec", "externalID"), Ignored: ignoredFields(u),
	}, nil
}

// BindingFromManifest reads a ServiceBinding manifest.
func BindingFromManifest(u *unstructured.Unstructured) (*ManifestBinding, error) {
	inst := str(u, "spec", "instanceRef", "name")
	if inst == "" {
		return nil, errors.New("it names no instance (spec.instanceRef.name)")
	}
	params, from, err := manifestParameters(u)
	if err != nil {
		return nil, err
	}
	transforms, err := secretTransforms(u)
	if err != nil {
		return nil, err
	}
	return &ManifestBinding{
		Instance: inst, SecretName: str(u, "spec", "secretName"), Parameters: params, ParametersFrom: from,
		Transforms: transforms, ExternalID: str(u, "spec", "externalID"), Ignored: ignoredFields(u),
	}, nil
}

// request is how a provision request names what r names: the external name, else the
// OSB id (an old object's name is its OSB id).
func (r oldRef) request() string {
	switch {
	case r.externalName != "":
		return r.externalName
	case r.externalID != "":
		return r.externalID
	}
	return r.objectName
}

// ignoredFields say which fields of an old object's spec have svcat semantics the
// catalog does not have.
func ignoredFields(u *unstructured.Unstructured) []string {
	var out []string
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "updateRequests"); ok {
		out = append(out, `spec.updateRequests ignored: the catalog sends an update when the plan or parameters change; re-send unchanged parameters with "kubectl catalog touch instance"`)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "userInfo"); ok {
		out = append(out, "spec.userInfo ignored: the record's author is whoever applies the manifest")
	}
	return out
}

// BrokerIgnoredFields say which fields of a ServiceBroker or ClusterServiceBroker manifest
// the catalog does not act on, and why (the others are read by BrokerFromManifest).
func BrokerIgnoredFields(u *unstructured.Unstructured) []string {
	var out []string
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "relistRequests"); ok {
		out = append(out, `spec.relistRequests ignored: fetch the catalog again with "kubectl catalog sync broker"`)
	}
	return out
}
