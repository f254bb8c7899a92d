package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceBinding is a binding to a service instance. Its credentials are written to a
// Secret owned by the binding's ConfigMap, never to the record.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ServiceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceBindingSpec   `json:"spec"`
	Status ServiceBindingStatus `json:"status,omitempty"`
}

// ServiceBindingSpec is what the user asked for.
type ServiceBindingSpec struct {
	// InstanceName is the name of the ServiceInstance record, in the same namespace
	// unless InstanceNamespace says otherwise.
	InstanceName string `json:"instanceName"`
	// InstanceNamespace is the namespace of an instance shared with the binding's
	// namespace ("kubectl catalog share"); empty: the binding's own namespace.
	InstanceNamespace string `json:"instanceNamespace,omitempty"`
	// ExternalID is the OSB binding id, generated once and reused on every call of an
	// attempt; after orphan mitigation or a rotation the binding uses a new id, kept in
	// status.externalID.
	ExternalID string `json:"externalID"`
	// Parameters are the inline parameters, a JSON object.
	Parameters *runtime.RawExtension `json:"parameters,omitempty"`
	// ParametersFrom are parameters read from Secrets, merged with the inline ones.
	ParametersFrom []ParametersFromSource `json:"parametersFrom,omitempty"`
	// SecretName is the Secret the credentials are written to.
	SecretName string `json:"secretName"`
	// SecretTransforms are applied in order to the credentials before they are written.
	SecretTransforms []SecretTransform `json:"secretTransforms,omitempty"`
	// SecretTemplate renders Secret keys from the credentials, the instance and the
	// binding, after the transforms. It holds templates, never credentials.
	SecretTemplate *SecretTemplate `json:"secretTemplate,omitempty"`
	// Predecessor is the binding id this one rotates, as records written before
	// rotations were kept in the status had it; status.predecessor takes precedence.
	Predecessor *BindingReference `json:"predecessor,omitempty"`
	// Projections are the workloads the credentials Secret is to be projected into, once
	// the binding is ready.
	Projections []WorkloadProjection `json:"projections,omitempty"`
}

// WorkloadProjection is a workload a binding's Secret is projected into: by default as
// files under $SERVICE_BINDING_ROOT/<binding> (the servicebinding.io convention), or as
// environment variables when Env is set.
type WorkloadProjection struct {
	// Kind is Deployment, StatefulSet, DaemonSet, CronJob or Job.
	Kind string `json:"kind"`
	// Name is the workload's name, in the binding's namespace.
	Name string `json:"name"`
	// Env exposes the Secret's keys as environment variables (envFrom) instead of files.
	Env bool `json:"env,omitempty"`
	// EnvPrefix is prepended to every variable's name, with Env.
	EnvPrefix string `json:"envPrefix,omitempty"`
}

// BindingReference names a binding record and its OSB id; the id outlives the record.
type BindingReference struct {
	Name       string `json:"name"`
	ExternalID string `json:"externalID"`
	// PlanID is the plan the broker bound ExternalID under, when known: its unbind
	// names it, whatever plan the instance has moved to since.
	PlanID string `json:"planID,omitempty"`
}

// SecretTransform is one change to the credentials before they are written. Exactly one
// field is set.
type SecretTransform struct {
	RenameKey   *RenameKeyTransform   `json:"renameKey,omitempty"`
	AddKey      *AddKeyTransform      `json:"addKey,omitempty"`
	AddKeysFrom *AddKeysFromTransform `json:"addKeysFrom,omitempty"`
	RemoveKey   *RemoveKeyTransform   `json:"removeKey,omitempty"`
}

// SecretTemplate renders keys of a binding's Secret with Go text/template
// (docs/bindings.md#secret-templates).
type SecretTemplate struct {
	// Keys maps each Secret key to the template of its value.
	Keys map[string]string `json:"keys"`
	// Only: the Secret holds the rendered keys alone (and the servicebinding.io "type"
	// and "provider"), not the credentials they were rendered from.
	Only bool `json:"only,omitempty"`
}

// RenameKeyTransform renames a credentials key.
type RenameKeyTransform struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// AddKeyTransform adds a key; exactly one of Value, StringValue and JSONPathExpression is
// set.
type AddKeyTransform struct {
	Key         string  `json:"key"`
	Value       []byte  `json:"value,omitempty"`
	StringValue *string `json:"stringValue,omitempty"`
	// JSONPathExpression is evaluated against the credentials, e.g. "{.host}:{.port}".
	JSONPathExpression *string `json:"jsonPathExpression,omitempty"`
}

// AddKeysFromTransform adds every key of another Secret.
type AddKeysFromTransform struct {
	SecretRef SecretReference `json:"secretRef"`
}

// RemoveKeyTransform removes a credentials key.
type RemoveKeyTransform struct {
	Key string `json:"key"`
}

// ServiceBindingStatus is what the broker holds for the binding and what is being done
// about it.
type ServiceBindingStatus struct {
	// OperationStatus: phase, conditions (Ready, Failed, OrphanMitigation), the broker
	// call in flight, the retry scheduled and orphan mitigation.
	OperationStatus `json:",inline"`
	// Bound is what the broker returned for the binding, credentials excepted; nil
	// before the bind succeeded.
	Bound *BoundState `json:"bound,omitempty"`
	// Secret is the credentials Secret once written; nil before.
	Secret *CredentialsSecret `json:"secret,omitempty"`
	// Projected are the workloads the Secret has been projected into.
	Projected []WorkloadProjection `json:"projected,omitempty"`
	// Projecting are workloads a projection change may have reached and Projected does
	// not list yet: recorded before any of them is changed, cleared once Projected says
	// what was done. An unbind removes the projection from these too.
	Projecting []WorkloadProjection `json:"projecting,omitempty"`
	// Retired are OSB binding ids replaced by a rotation and still to be unbound at the
	// broker; they are unbound once the new credentials are in the Secret.
	Retired []string `json:"retired,omitempty"`
	// Predecessor is the binding id the last rotation replaced: a rotation gives the
	// record a new status.externalID and sends the old id as predecessor_binding_id (for
	// plans with binding_rotatable).
	Predecessor *BindingReference `json:"predecessor,omitempty"`
}

// BoundState is the non-secret part of the broker's bind answer. Whatever of the answer
// may hold a secret is in the credentials Secret only: the credentials, the syslog drain
// and route service URLs (keys syslog_drain_url and route_service_url) and the volume
// mounts with their mount_config (key volume_mounts).
type BoundState struct {
	// BindingID is the OSB binding id the broker holds; it differs from the id in use
	// (status.externalID, else spec.externalID) while a rotation binds the new id.
	BindingID string `json:"bindingID"`
	// PlanID is the plan of the instance the broker bound BindingID under (empty for a
	// binding bound by an earlier release): the unbind of that id names it.
	PlanID string `json:"planID,omitempty"`
	// ParametersChecksum identifies the parameters the broker accepted.
	ParametersChecksum string `json:"parametersChecksum,omitempty"`
	// SyslogDrain is true when the broker returned a syslog_drain_url.
	SyslogDrain bool `json:"syslogDrain,omitempty"`
	// RouteService is true when the broker returned a route_service_url.
	RouteService bool `json:"routeService,omitempty"`
	// VolumeMounts are the volume mounts the broker returned, without their mount_config.
	VolumeMounts []VolumeMount `json:"volumeMounts,omitempty"`
	Endpoints    []Endpoint    `json:"endpoints,omitempty"`
	// ExpiresAt and RenewBefore are the binding's metadata.expires_at and renew_before.
	ExpiresAt   *metav1.Time `json:"expiresAt,omitempty"`
	RenewBefore *metav1.Time `json:"renewBefore,omitempty"`
	// UserProvided is true when the credentials are a copy of a user-provided instance's:
	// no broker holds the binding, and BindingID is only the record's id.
	UserProvided bool `json:"userProvided,omitempty"`
	// SourceVersion identifies the user-provided instance's credentials Secret the copy
	// was made from (its uid and resourceVersion, never a digest of its data): when the
	// Secret changes, the copy is made again.
	SourceVersion string `json:"sourceVersion,omitempty"`
}

// CredentialsSecret is the Secret a binding's credentials were written to.
type CredentialsSecret struct {
	Name string `json:"name"`
	// Keys are the Secret's keys after the transforms; values are never recorded.
	Keys      []string    `json:"keys,omitempty"`
	WrittenAt metav1.Time `json:"writtenAt"`
}

// Endpoint is a network endpoint of a binding.
type Endpoint struct {
	Host string `json:"host"`
	// Ports are single ports ("443") or ranges ("9000-9010").
	Ports []string `json:"ports"`
	// Protocol is tcp, udp or all; tcp when empty.
	Protocol string `json:"protocol,omitempty"`
}

// VolumeMount is a volume mount of a binding, as far as it holds no secret.
type VolumeMount struct {
	Driver       string       `json:"driver"`
	ContainerDir string       `json:"containerDir"`
	Mode         string       `json:"mode"`
	DeviceType   string       `json:"deviceType"`
	Device       VolumeDevice `json:"device"`
}

// VolumeDevice is the device of a volume mount. Its mount_config, which may hold the
// volume's credentials, is only in the Secret (key volume_mounts).
type VolumeDevice struct {
	VolumeID string `json:"volumeID"`
}

// ServiceBindingList is a list of bindings.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ServiceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceBinding `json:"items"`
}
