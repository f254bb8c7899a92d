package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceInstance is a service instance: what the user asked for (spec), what the broker
// is known to hold (status.provisioned) and the broker call in flight (status.inFlight).
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ServiceInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceInstanceSpec   `json:"spec"`
	Status ServiceInstanceStatus `json:"status,omitempty"`
}

// ServiceInstanceSpec is what the user asked for.
type ServiceInstanceSpec struct {
	// Scope is where the class's broker lives.
	Scope Scope `json:"scope"`
	// BrokerName is the name of the Broker record.
	BrokerName string `json:"brokerName"`
	// ClassExternalName and ClassID are the class's OSB name and id.
	ClassExternalName string `json:"classExternalName"`
	ClassID           string `json:"classID"`
	// PlanExternalName and PlanID are the plan's OSB name and id.
	PlanExternalName string `json:"planExternalName"`
	PlanID           string `json:"planID"`
	// Parameters are the inline parameters, a JSON object.
	Parameters *runtime.RawExtension `json:"parameters,omitempty"`
	// ParametersFrom are parameters read from Secrets, merged with the inline ones.
	ParametersFrom []ParametersFromSource `json:"parametersFrom,omitempty"`
	// MaintenanceInfoVersion asks for an upgrade to this maintenance_info.version of the
	// plan. Empty: whatever the plan offered when the instance was provisioned.
	MaintenanceInfoVersion string `json:"maintenanceInfoVersion,omitempty"`
	// ExternalID is the OSB instance id, generated once when the record is created and
	// reused on every call of an attempt; after orphan mitigation the next attempt uses a
	// new id, kept in status.externalID.
	ExternalID string `json:"externalID"`
	// SharedWith are the other namespaces whose bindings may use the instance ("kubectl
	// catalog share"). The grant counts only while the spec's author is verified and may
	// write the record (see docs/security.md).
	SharedWith []string `json:"sharedWith,omitempty"`
	// MaxBindings limits the bindings of the instance, from every namespace together;
	// nil: no limit. Enforced with status.consumers.
	MaxBindings *int32 `json:"maxBindings,omitempty"`
	// AllowedNamespaces, when not empty, are the only namespaces (the instance's own
	// included) whose bindings may use the instance.
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
	// UserProvided, when set, makes this a user-provided service instance: a service the
	// catalog does not provision (a database run by another team, say). No broker is
	// called; the broker, class and plan fields are empty, and each binding gets a copy
	// of the credentials, which are kept in a Secret owned by the instance's record.
	UserProvided *UserProvidedService `json:"userProvided,omitempty"`
	// RebindOnUpdate says whether the instance's bindings are rotated once an update of
	// the instance settled: Never (also when empty), Always, or PlanChange (only after an
	// update that changed the plan). See status.rebind.
	RebindOnUpdate RebindPolicy `json:"rebindOnUpdate,omitempty"`
}

// RebindPolicy is an instance's spec.rebindOnUpdate.
type RebindPolicy string

// The values of spec.rebindOnUpdate.
const (
	RebindNever      RebindPolicy = "Never"
	RebindAlways     RebindPolicy = "Always"
	RebindPlanChange RebindPolicy = "PlanChange"
)

// RebindPolicies are the values spec.rebindOnUpdate accepts (empty aside).
var RebindPolicies = []RebindPolicy{RebindNever, RebindAlways, RebindPlanChange}

// UserProvidedService is what a user-provided service instance offers its bindings.
type UserProvidedService struct {
	// CredentialsSecret is the Secret, in the instance's namespace and owned by its
	// record, that holds the credentials (one key per credential; values never appear in
	// a record). A Secret the record does not own is never read. A syslog drain or route
	// service URL is a credential too (keys syslog_drain_url and route_service_url), as
	// in a broker's bind answer.
	CredentialsSecret string `json:"credentialsSecret"`
	// Revision counts the changes of the credentials ("kubectl catalog update
	// --credentials-..."): each is a change of the spec, so that it is its author's, and
	// so that the instance is pending until every binding has a copy of the new ones.
	Revision int64 `json:"revision,omitempty"`
}

// ServiceInstanceStatus is what the broker holds and what is being done about it.
type ServiceInstanceStatus struct {
	// OperationStatus: phase, conditions (Ready, Failed, OrphanMitigation), the broker
	// call in flight, the retry scheduled and orphan mitigation.
	OperationStatus `json:",inline"`
	// Provisioned is what the broker is known to hold; nil before the first provision
	// succeeded.
	Provisioned *ProvisionedState `json:"provisioned,omitempty"`
	// Usable is the broker's instance_usable after a failed update or deprovision; nil
	// means the broker did not say (usable).
	Usable *bool `json:"usable,omitempty"`
	// UpdateRepeatable is the broker's update_repeatable after a failed update.
	UpdateRepeatable *bool `json:"updateRepeatable,omitempty"`
	// Consumers are the bindings holding a place under spec.maxBindings: a binding is
	// added (guarded by resourceVersion) before its first bind call is sent, and removed
	// when it is gone or its bind failed for good.
	Consumers []ConsumerReservation `json:"consumers,omitempty"`
	// SharedBefore are the namespaces the instance has been shared with (spec.sharedWith
	// now, or before an unshare): bindings there may still use it. A deletion whose driver
	// may not list the bindings of one of them waits for reconcile, which sees every
	// namespace.
	SharedBefore []string `json:"sharedBefore,omitempty"`
	// RevokedGeneration is the spec generation whose withdrawn grants were last revoked
	// by a driver that could look at every namespace of sharedBefore: the bindings of
	// namespaces the spec no longer lets bind were marked for deletion. While a namespace
	// of sharedBefore is no longer granted and this is not the spec's generation, the
	// instance has pending work (see RevokePending).
	RevokedGeneration int64 `json:"revokedGeneration,omitempty"`
	// Rebind is the rotation of the instance's bindings that follows an update ("update
	// --rebind", or spec.rebindOnUpdate): recorded before the update is sent, carried out
	// one binding at a time once the instance settled, and removed when every binding
	// was rotated. Nil when there is none to do.
	Rebind *RebindStatus `json:"rebind,omitempty"`
}

// RebindStatus is the rotation of an instance's bindings after an update.
type RebindStatus struct {
	// Generation is the spec generation the bindings follow: nothing is rotated before
	// the instance settled that generation.
	Generation int64 `json:"generation"`
	// Reason says why the bindings are rotated, for the Events and the conditions.
	Reason string `json:"reason"`
	// AfterUpdate: the rotation follows an update to the broker, so an update the broker
	// refused (the instance holds what it held) rotates nothing.
	AfterUpdate bool        `json:"afterUpdate,omitempty"`
	RequestedAt metav1.Time `json:"requestedAt"`
	// Current is the binding being rotated: one at a time, the next once its old
	// credentials were unbound, or its rotation failed.
	Current *RebindTarget `json:"current,omitempty"`
	// Rotated, Failed and Gone are the bindings done, as NAMESPACE/NAME: rotated,
	// whose rotation failed (they keep their old credentials), or deleted meanwhile.
	Rotated []string `json:"rotated,omitempty"`
	Failed  []string `json:"failed,omitempty"`
	Gone    []string `json:"gone,omitempty"`
}

// RebindTarget is the binding a rebind rotates now.
type RebindTarget struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UID is the binding record's uid: a record re-created under the name is not it.
	UID string `json:"uid"`
	// FromID is the OSB binding id the rotation replaces.
	FromID string `json:"fromID"`
}

// ConsumerReservation is a binding's place under an instance's spec.maxBindings.
type ConsumerReservation struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UID is the binding record's uid: a record re-created under the same name does not
	// inherit the place.
	UID        string      `json:"uid"`
	ReservedAt metav1.Time `json:"reservedAt"`
}

// ProvisionedState is what the broker holds for an instance.
type ProvisionedState struct {
	// PlanID is the OSB plan id of the instance at the broker.
	PlanID string `json:"planID"`
	// ParametersChecksum identifies the parameters last accepted by the broker.
	ParametersChecksum string `json:"parametersChecksum,omitempty"`
	// MaintenanceInfoVersion is the maintenance_info.version last accepted.
	MaintenanceInfoVersion string `json:"maintenanceInfoVersion,omitempty"`
	// DashboardURL is the instance's dashboard, if the broker gave one.
	DashboardURL string `json:"dashboardURL,omitempty"`
	// ParameterHashes identify each inline parameter last accepted (top-level key to a
	// hash of its JSON value), so that an update sends only the parameters that changed.
	// Secret-sourced parameters are never hashed one by one.
	ParameterHashes map[string]string `json:"parameterHashes,omitempty"`
	// Parameters are the parameters last accepted as the spec named them then: what
	// "update --revert" writes back into the spec after the broker refused an update.
	// Nil when not known (an instance provisioned by an earlier release, or a spec
	// edited while the call was in flight).
	Parameters *AppliedParameters `json:"parameters,omitempty"`
	// ContextOutdated says the broker holds the context of the cluster the instance was
	// moved from (kubectl catalog export, apply -f): an update carrying only this
	// cluster's context is due. A successful update clears it.
	ContextOutdated bool `json:"contextOutdated,omitempty"`
}

// AppliedParameters are an instance's parameters as its spec named them when the broker
// accepted them: the inline values, which the spec holds in clear anyway, and the
// references to Secrets, never a Secret's values.
type AppliedParameters struct {
	// Inline are the inline parameters, a JSON object.
	Inline *runtime.RawExtension `json:"inline,omitempty"`
	// From are the Secrets the other parameters were read from.
	From []ParametersFromSource `json:"from,omitempty"`
}

// ServiceInstanceList is a list of instances.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ServiceInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceInstance `json:"items"`
}
