package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceClass is one OSB service of a broker's catalog, with its plans. The plans' JSON
// schemas are kept apart in a ServicePlanSchemas record of the same name, so listing
// classes for the marketplace never transfers them. Name a class record with
// ClassRecordName: the OSB id is its only identity.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ServiceClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceClassSpec   `json:"spec"`
	Status ServiceClassStatus `json:"status,omitempty"`
}

// ServiceClassSpec is the service as the broker's catalog describes it.
type ServiceClassSpec struct {
	// BrokerName is the name of the Broker record offering the class.
	BrokerName string `json:"brokerName"`
	// Scope is the broker's scope.
	Scope Scope `json:"scope"`
	// ID is the OSB service id.
	ID string `json:"id"`
	// ExternalName is the OSB service name, the name users type.
	ExternalName string   `json:"externalName"`
	Description  string   `json:"description,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	// Requires lists the permissions the service needs (syslog_drain, route_forwarding,
	// volume_mount).
	Requires             []string `json:"requires,omitempty"`
	Bindable             bool     `json:"bindable"`
	InstancesRetrievable bool     `json:"instancesRetrievable,omitempty"`
	BindingsRetrievable  bool     `json:"bindingsRetrievable,omitempty"`
	AllowContextUpdates  bool     `json:"allowContextUpdates,omitempty"`
	// PlanUpdateable is the service's plan_updateable; a plan may override it.
	PlanUpdateable bool `json:"planUpdateable,omitempty"`
	// Metadata is the service's opaque metadata (displayName, imageUrl, ...).
	Metadata *runtime.RawExtension `json:"metadata,omitempty"`
	// Plans of the service, including plans the broker no longer offers (see status).
	Plans []ServicePlan `json:"plans"`
}

// ServicePlan is one plan of a service.
type ServicePlan struct {
	// ID is the OSB plan id.
	ID string `json:"id"`
	// ExternalName is the OSB plan name, the name users type.
	ExternalName string `json:"externalName"`
	Description  string `json:"description,omitempty"`
	// Free is the plan's free flag, true when the broker omitted it.
	Free bool `json:"free"`
	// Bindable overrides the service's bindable when set.
	Bindable *bool `json:"bindable,omitempty"`
	// PlanUpdateable overrides the service's plan_updateable when set.
	PlanUpdateable   *bool `json:"planUpdateable,omitempty"`
	BindingRotatable bool  `json:"bindingRotatable,omitempty"`
	// MaximumPollingDuration bounds how long an async operation on this plan is polled.
	MaximumPollingDuration *metav1.Duration `json:"maximumPollingDuration,omitempty"`
	MaintenanceInfo        *MaintenanceInfo `json:"maintenanceInfo,omitempty"`
	Metadata               *PlanMetadata    `json:"metadata,omitempty"`
}

// MaintenanceInfo is a plan's maintenance_info.
type MaintenanceInfo struct {
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

// PlanMetadata is the part of a plan's metadata the CLI shows (the OSB profile's
// conventions).
type PlanMetadata struct {
	DisplayName string     `json:"displayName,omitempty"`
	Bullets     []string   `json:"bullets,omitempty"`
	Costs       []PlanCost `json:"costs,omitempty"`
}

// PlanCost is one cost of a plan: amounts per currency code, per unit ("MONTHLY").
type PlanCost struct {
	Amount map[string]float64 `json:"amount"`
	Unit   string             `json:"unit"`
}

// ServiceClassStatus says what the broker stopped offering. Classes and plans that vanish
// from the catalog are marked, not deleted, while instances may use them.
type ServiceClassStatus struct {
	RemovedFromBroker bool `json:"removedFromBroker,omitempty"`
	// Plans holds an entry for each plan whose status is not the default.
	Plans []ServicePlanStatus `json:"plans,omitempty"`
}

// ServicePlanStatus is the status of one plan.
type ServicePlanStatus struct {
	// ID is the OSB plan id.
	ID                string `json:"id"`
	RemovedFromBroker bool   `json:"removedFromBroker,omitempty"`
}

// ServiceClassList is a list of classes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ServiceClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceClass `json:"items"`
}

// ServicePlanSchemas holds the JSON schemas of the plans of one class. It has the same
// name as its ServiceClass record and is read only when a schema is needed (prompting,
// validating parameters, describe --show-schemas). It has no status.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ServicePlanSchemas struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ServicePlanSchemasSpec `json:"spec"`
}

// ServicePlanSchemasSpec holds the schemas of the plans of one class.
type ServicePlanSchemasSpec struct {
	// BrokerName is the name of the Broker record offering the class.
	BrokerName string `json:"brokerName"`
	// Scope is the broker's scope.
	Scope Scope `json:"scope"`
	// ClassID is the OSB service id.
	ClassID string `json:"classID"`
	// Plans holds one entry per plan that has at least one schema.
	Plans []PlanSchemas `json:"plans,omitempty"`
}

// PlanSchemas are the JSON schemas of one plan, each kept as the broker sent it.
type PlanSchemas struct {
	// PlanID is the OSB plan id.
	PlanID string `json:"planID"`
	// InstanceCreate is schemas.service_instance.create.parameters.
	InstanceCreate *runtime.RawExtension `json:"instanceCreate,omitempty"`
	// InstanceUpdate is schemas.service_instance.update.parameters.
	InstanceUpdate *runtime.RawExtension `json:"instanceUpdate,omitempty"`
	// BindingCreate is schemas.service_binding.create.parameters.
	BindingCreate *runtime.RawExtension `json:"bindingCreate,omitempty"`
}

// ServicePlanSchemasList is a list of plan schema records.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ServicePlanSchemasList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServicePlanSchemas `json:"items"`
}
