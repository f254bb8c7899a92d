package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// GroupName is the API group of every record. It is also the prefix of every label,
// annotation and finalizer key kubectl-catalog writes (see pkg/store).
const GroupName = "catalog.kubectl-catalog.io"

// Version is the version of the record types in this package.
const Version = "v1alpha1"

// Kinds of records.
const (
	KindBroker             = "Broker"
	KindServiceClass       = "ServiceClass"
	KindServicePlanSchemas = "ServicePlanSchemas"
	KindServiceInstance    = "ServiceInstance"
	KindServiceBinding     = "ServiceBinding"
)

// SchemeGroupVersion is the group and version of the records in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

// AddToScheme registers the record types and their lists with s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&Broker{}, &BrokerList{},
		&ServiceClass{}, &ServiceClassList{},
		&ServicePlanSchemas{}, &ServicePlanSchemasList{},
		&ServiceInstance{}, &ServiceInstanceList{},
		&ServiceBinding{}, &ServiceBindingList{},
		&CatalogAccess{}, &CatalogAccessList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// NewScheme returns a new scheme that knows the record types. Use it with cli-runtime's
// printers.NewTypeSetter so that -o json|yaml|name print apiVersion and kind.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(err) // AddToScheme cannot fail; a panic here is a programming error.
	}
	return s
}

// NewCodecs returns a codec factory for the records of s (see NewScheme), for callers that
// need to encode or decode records as standalone JSON or YAML documents.
func NewCodecs(s *runtime.Scheme) serializer.CodecFactory {
	return serializer.NewCodecFactory(s)
}

// Record is implemented by every record kind.
// +k8s:deepcopy-gen=false
type Record interface {
	runtime.Object
	metav1.Object
	// HasPendingWork reports whether the record has unfinished work, i.e. whether
	// reconcile must look at it. pkg/store derives the pending label from it on every
	// write, so the label can never disagree with the record.
	HasPendingWork() bool
}
