package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scope says where a broker and its classes live: cluster-wide brokers in the catalog
// namespace (default catalog-system), namespaced brokers in the user's namespace.
type Scope string

// Scopes.
const (
	ScopeCluster   Scope = "Cluster"
	ScopeNamespace Scope = "Namespace"
)

// Phase is a one-word summary of where an instance or binding is. The conditions and the
// inFlight/retry fields hold the detail.
type Phase string

// Phases of instances and bindings.
const (
	// PhasePending: recorded, no broker call made yet.
	PhasePending          Phase = "Pending"
	PhaseProvisioning     Phase = "Provisioning"
	PhaseUpdating         Phase = "Updating"
	PhaseDeprovisioning   Phase = "Deprovisioning"
	PhaseBinding          Phase = "Binding"
	PhaseUnbinding        Phase = "Unbinding"
	PhaseOrphanMitigation Phase = "OrphanMitigation"
	PhaseReady            Phase = "Ready"
	// PhaseFailed: the last operation failed; Retry says whether and when it is retried.
	PhaseFailed Phase = "Failed"
)

// Condition types. Reasons are CamelCase words a user can search for; the engine defines
// them.
const (
	ConditionReady            = "Ready"
	ConditionFailed           = "Failed"
	ConditionOrphanMitigation = "OrphanMitigation"
	// ConditionRefused is True while the engine refuses to act on the record: what it
	// names needs more authority than its author has, or cannot be trusted (see
	// docs/security.md). Nothing is sent to a broker for it meanwhile.
	ConditionRefused = "Refused"
	// ConditionUpdateFailed is True while the broker's refusal of an instance's last
	// update stands: the broker still holds the instance as it was (status.provisioned),
	// not as the spec asks. The instance stays Ready unless the broker said it is not
	// usable.
	ConditionUpdateFailed = "UpdateFailed"
)

// OperationStatus is the part of an instance's or binding's status that the engine's
// protocol keeps: where the record is, the broker call in flight, the retry scheduled and
// orphan mitigation. Its fields appear directly in the status.
type OperationStatus struct {
	Phase Phase `json:"phase,omitempty"`
	// Conditions: Ready, Failed, OrphanMitigation.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation of the spec the engine last acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// InFlight is the broker call being made, recorded before it is made.
	InFlight *Operation `json:"inFlight,omitempty"`
	// Retry is set while failed work is to be retried.
	Retry *RetryState `json:"retry,omitempty"`
	// OrphanMitigation is set while what an uncertain provision or bind may have created
	// is to be deleted at the broker.
	OrphanMitigation *OrphanMitigationState `json:"orphanMitigation,omitempty"`
	// ExternalID is the OSB id (the instance's, or the binding's) the current attempt
	// uses at the broker when it is not spec.externalID: a provision or bind after orphan
	// mitigation, or a rotation, gets a new id, since OSB ids are not reused. Empty:
	// spec.externalID. Only the engine sets it; the spec stays as the user wrote it.
	ExternalID string `json:"externalID,omitempty"`
	// ExternalIDs are the OSB ids of the record the broker may hold: each id a provision
	// or bind was written ahead for, until the broker confirmed it deleted (or refused
	// the first request that named it). A deletion deletes every one of them at the
	// broker before the finalizer comes off.
	ExternalIDs []string `json:"externalIDs,omitempty"`
	// ParametersSalt is the random key of this record's parameters checksums
	// (HMAC-SHA256), created the first time parameters are checksummed and never changed:
	// a checksum cannot be compared with one of the same values in another record or
	// computed in advance.
	ParametersSalt string `json:"parametersSalt,omitempty"`
}

// OperationType is the broker call an Operation stands for.
type OperationType string

// Operation types. Orphan mitigation is a Deprovision or Unbind while the record's
// OrphanMitigation status is set.
const (
	OperationProvision   OperationType = "Provision"
	OperationUpdate      OperationType = "Update"
	OperationDeprovision OperationType = "Deprovision"
	OperationBind        OperationType = "Bind"
	OperationUnbind      OperationType = "Unbind"
)

// Operation is a broker call in flight, persisted before the call is made (write-ahead) so
// that an interrupted call can be re-sent identically.
type Operation struct {
	// Type is the call being made.
	Type OperationType `json:"type"`
	// InstanceID is the OSB instance id the call is about.
	InstanceID string `json:"instanceID"`
	// BindingID is the OSB binding id, for Bind and Unbind.
	BindingID string `json:"bindingID,omitempty"`
	// ServiceID and PlanID are the OSB service and plan ids sent.
	ServiceID string `json:"serviceID,omitempty"`
	PlanID    string `json:"planID,omitempty"`
	// MaintenanceInfoVersion is the maintenance_info.version sent, if any.
	MaintenanceInfoVersion string `json:"maintenanceInfoVersion,omitempty"`
	// ParametersChecksum identifies the parameters sent (inline and secret-sourced).
	ParametersChecksum string `json:"parametersChecksum,omitempty"`
	// ParameterHashes identify the inline parameters the instance has once the call
	// succeeds (see ProvisionedState.ParameterHashes).
	ParameterHashes map[string]string `json:"parameterHashes,omitempty"`
	// RequestID is the X-Broker-API-Request-Identity sent with the call.
	RequestID string `json:"requestID,omitempty"`
	// StartedAt is when the operation was first recorded.
	StartedAt metav1.Time `json:"startedAt"`
	// SentAt is when this send of a synchronous call was written ahead (by its sender's
	// clock); nil once its outcome is stored, and on operations earlier releases wrote.
	// While it is set, the sender may have ended with the request at the broker, which
	// may work on it for the grace (status.retry.brokerMayWorkUntil): no other request
	// for the id is sent before then.
	SentAt *metav1.Time `json:"sentAt,omitempty"`
	// Async is true once the broker answered 202 Accepted: the outcome comes from polling.
	Async bool `json:"async,omitempty"`
	// OperationKey is the broker's operation key from the 202 answer, if it sent one.
	OperationKey string `json:"operationKey,omitempty"`
	// DashboardURL from a 202 answer to a provision: it is only sent then.
	DashboardURL string `json:"dashboardURL,omitempty"`
	// NextPollAt is when last_operation is polled next.
	NextPollAt *metav1.Time `json:"nextPollAt,omitempty"`
	// PollDeadline is when polling gives up and treats the operation as failed
	// (maximum_polling_duration, or the engine's own bound).
	PollDeadline *metav1.Time `json:"pollDeadline,omitempty"`
	// LastDescription is the description of the last last_operation answer.
	LastDescription string `json:"lastDescription,omitempty"`
	// Sent keeps what the call sent beyond the fields above, so that a re-send is the
	// identical request whoever makes it. Nil on an operation an earlier release wrote:
	// its re-send is built from the spec again.
	Sent *SentRequest `json:"sent,omitempty"`
}

// SentRequest is what a provision, update or bind sent that the record cannot derive
// again: values of the platform, and the parameters as sent. Values that may be secret
// are never here but in a Secret owned by the record (ParametersSecret).
type SentRequest struct {
	// ClusterID is the context's clusterid (and organization_guid) sent.
	ClusterID string `json:"clusterID,omitempty"`
	// NamespaceUID is the space_guid, or the bind_resource.app_guid, sent.
	NamespaceUID string `json:"namespaceUID,omitempty"`
	// Parameters is the parameters object sent, less the values that came from Secrets
	// (those are in ParametersSecret); empty when the request carried no parameters.
	Parameters string `json:"parameters,omitempty"`
	// ParametersSecret names the Secret, in the record's namespace and owned by the
	// record's ConfigMap, that keeps the parameters sent whose values came from Secrets;
	// empty when there were none. It is deleted once the call's outcome is stored.
	ParametersSecret string `json:"parametersSecret,omitempty"`
	// PredecessorBindingID is the predecessor_binding_id a bind sent.
	PredecessorBindingID string `json:"predecessorBindingID,omitempty"`
}

// RetryState records failed attempts so a retry is never invisible. It is set while a
// retry is scheduled and cleared when the work succeeds or fails terminally.
type RetryState struct {
	// Attempts counts the failed attempts so far.
	Attempts int32 `json:"attempts"`
	// Reason is a CamelCase word for the last failure.
	Reason string `json:"reason,omitempty"`
	// LastError is the last failure, with the broker's message when there was one.
	LastError string `json:"lastError,omitempty"`
	// LastAttemptAt is when the last attempt failed.
	LastAttemptAt *metav1.Time `json:"lastAttemptAt,omitempty"`
	// NextRetryAt is when the next attempt is due.
	NextRetryAt *metav1.Time `json:"nextRetryAt,omitempty"`
	// BrokerMayWorkUntil is set when the last attempt got no answer (a client timeout, a
	// closed connection, a gateway's 504): the broker may still be working on that
	// request until then, so no other request about the record is sent before.
	BrokerMayWorkUntil *metav1.Time `json:"brokerMayWorkUntil,omitempty"`
}

// OrphanMitigationState is set while the broker must be asked to delete what an
// uncertain provision or bind may have created (OSB orphan mitigation).
type OrphanMitigationState struct {
	// Reason is a CamelCase word for what made the outcome uncertain.
	Reason string `json:"reason"`
	// Message explains it.
	Message string `json:"message,omitempty"`
	// StartedAt is when mitigation was decided.
	StartedAt metav1.Time `json:"startedAt"`
	// RetryAfter is true when the original call is to be made again once mitigation is
	// done (the original error was retriable).
	RetryAfter bool `json:"retryAfter,omitempty"`
}

// SecretReference names a Secret. An empty namespace means the namespace of the record.
type SecretReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// SecretKeyReference names a key of a Secret in the record's namespace.
type SecretKeyReference struct {
	Name string `json:"name"`
	// Key selects one key whose value is a JSON object of parameters. When empty, every
	// key of the Secret is a parameter, with its value as a string.
	Key string `json:"key,omitempty"`
}

// ParametersFromSource is a source of parameters other than the inline ones. Its values
// are read for every new call and compared by checksum, never copied into the record; a
// re-send of an interrupted call sends what the first send kept (Operation.Sent).
type ParametersFromSource struct {
	SecretKeyRef *SecretKeyReference `json:"secretKeyRef,omitempty"`
}
