package osb

import (
	"encoding/json"
	"time"
)

// APIVersion is the OSB API version this package speaks; it is sent in
// HeaderAPIVersion on every request.
const APIVersion = "2.17"

// Header names used by the OSB API.
const (
	// HeaderAPIVersion carries APIVersion on every request.
	HeaderAPIVersion = "X-Broker-API-Version"
	// HeaderOriginatingIdentity names the user on whose behalf a request is made.
	HeaderOriginatingIdentity = "X-Broker-API-Originating-Identity"
	// HeaderRequestIdentity correlates one request across platform and broker logs.
	HeaderRequestIdentity = "X-Broker-API-Request-Identity"
	// HeaderRetryAfter may come with a last-operation answer to pace polling.
	HeaderRetryAfter = "Retry-After"
)

// PlatformKubernetes is the platform name of the Kubernetes profile. It is the
// value of KubernetesContext.Platform and the platform part of the
// originating-identity header, which the spec requires to be equal.
const PlatformKubernetes = "kubernetes"

// Error codes a broker may put in the "error" field of an error body. Only
// these are defined by the spec; brokers may invent others.
const (
	// ErrorCodeAsyncRequired: the broker only runs this request asynchronously;
	// retry with accepts_incomplete=true.
	ErrorCodeAsyncRequired = "AsyncRequired"
	// ErrorCodeConcurrencyError: another operation on the resource is in
	// progress; wait for it and retry, without orphan mitigation.
	ErrorCodeConcurrencyError = "ConcurrencyError"
	// ErrorCodeRequiresApp: the bind needs bind_resource.app_guid.
	ErrorCodeRequiresApp = "RequiresApp"
	// ErrorCodeMaintenanceInfoConflict: the maintenance_info.version sent does
	// not match the catalog; re-fetch the catalog and retry.
	ErrorCodeMaintenanceInfoConflict = "MaintenanceInfoConflict"
)

// LastOperationState is the state of an asynchronous operation as reported by
// a last_operation endpoint.
type LastOperationState string

// The three states the spec defines. Any other value makes the answer
// malformed.
const (
	StateInProgress LastOperationState = "in progress"
	StateSucceeded  LastOperationState = "succeeded"
	StateFailed     LastOperationState = "failed"
)

// Values of BindResponse.VolumeMounts[].Mode and Endpoint.Protocol defined by
// the spec.
const (
	VolumeModeReadOnly  = "r"
	VolumeModeReadWrite = "rw"
	DeviceTypeShared    = "shared"
	ProtocolTCP         = "tcp"
	ProtocolUDP         = "udp"
	ProtocolAll         = "all"
)

// Values of Service.Requires defined by the spec.
const (
	RequiresSyslogDrain     = "syslog_drain"
	RequiresRouteForwarding = "route_forwarding"
	RequiresVolumeMount     = "volume_mount"
)

// ErrorResponse is the body a broker may send with a non-2xx status. Every
// field is optional and the body may be absent or not JSON at all.
type ErrorResponse struct {
	// Error is a single CamelCase word such as ErrorCodeAsyncRequired.
	Error string `json:"error,omitempty"`
	// Description is meant for the end user.
	Description string `json:"description,omitempty"`
	// InstanceUsable, sent on update and deprovision failures, is nil when
	// absent, which means usable.
	InstanceUsable *bool `json:"instance_usable,omitempty"`
	// UpdateRepeatable, sent on update failures, is nil when absent, which
	// means repeatable.
	UpdateRepeatable *bool `json:"update_repeatable,omitempty"`
}

// EmptyResponse is the "{}" body of a successful delete.
type EmptyResponse struct{}

// ---------------------------------------------------------------------------
// Catalog

// CatalogResponse is the body of GET /v2/catalog.
type CatalogResponse struct {
	Services []Service `json:"services"` // every service offering; may be empty
}

// Service is a service offering. ID is the only immutable key: two services
// with different ids are different even if every other field matches.
type Service struct {
	Name        string   `json:"name"`           // unique, case-sensitive, CLI-friendly name
	ID          string   `json:"id"`             // globally unique, immutable key
	Description string   `json:"description"`    // short user-facing description
	Tags        []string `json:"tags,omitempty"` // free-form labels
	// Requires lists permissions the service needs (RequiresSyslogDrain, ...).
	Requires []string `json:"requires,omitempty"`
	// Bindable is the default for Plan.Bindable; use Plan.EffectiveBindable.
	Bindable             bool `json:"bindable"`
	InstancesRetrievable bool `json:"instances_retrievable,omitempty"` // GetInstance is supported
	BindingsRetrievable  bool `json:"bindings_retrievable,omitempty"`  // GetBinding is supported, so async binds are possible
	AllowContextUpdates  bool `json:"allow_context_updates,omitempty"` // an update carrying only context is allowed
	// Metadata is opaque; see ServiceMetadata for the profile's conventional keys.
	Metadata        map[string]any   `json:"metadata,omitempty"`
	DashboardClient *DashboardClient `json:"dashboard_client,omitempty"` // Cloud Foundry extension; nil when absent
	// PlanUpdateable is the default for Plan.PlanUpdateable (nil means false);
	// use Plan.EffectivePlanUpdateable. The spelling is the spec's.
	PlanUpdateable *bool  `json:"plan_updateable,omitempty"`
	Plans          []Plan `json:"plans"` // at least one plan
}

// DashboardClient is the Cloud Foundry extension describing an OAuth client
// for the service dashboard.
type DashboardClient struct {
	ID          string `json:"id"`                     // OAuth client id
	Secret      string `json:"secret"`                 // OAuth client secret
	RedirectURI string `json:"redirect_uri,omitempty"` // OAuth redirect URI
}

// Plan is a tier of a service. Optional booleans are pointers because an
// absent value means "inherit from the service" or a non-false default.
type Plan struct {
	ID          string `json:"id"`          // globally unique, immutable key
	Name        string `json:"name"`        // unique within the service
	Description string `json:"description"` // short user-facing description
	// Metadata is opaque; see PlanMetadata for the profile's conventional keys.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Free is nil when absent, which means free; use IsFree.
	Free *bool `json:"free,omitempty"`
	// Bindable overrides Service.Bindable when set; use EffectiveBindable.
	Bindable         *bool `json:"bindable,omitempty"`
	BindingRotatable bool  `json:"binding_rotatable,omitempty"` // bindings may be rotated with predecessor_binding_id
	// PlanUpdateable overrides Service.PlanUpdateable when set; use
	// EffectivePlanUpdateable.
	PlanUpdateable *bool    `json:"plan_updateable,omitempty"`
	Schemas        *Schemas `json:"schemas,omitempty"` // parameter schemas; nil when none
	// MaximumPollingDuration is in seconds; nil when the plan sets no limit.
	MaximumPollingDuration *int             `json:"maximum_polling_duration,omitempty"`
	MaintenanceInfo        *MaintenanceInfo `json:"maintenance_info,omitempty"` // current maintenance level; nil when not versioned
}

// Schemas holds the JSON Schemas of a plan's parameters.
type Schemas struct {
	ServiceInstance *ServiceInstanceSchema `json:"service_instance,omitempty"` // provision and update schemas
	ServiceBinding  *ServiceBindingSchema  `json:"service_binding,omitempty"`  // bind schema
}

// ServiceInstanceSchema holds the schemas of provision and update parameters.
type ServiceInstanceSchema struct {
	Create *InputParametersSchema `json:"create,omitempty"` // schema of provision parameters
	Update *InputParametersSchema `json:"update,omitempty"` // schema of update parameters
}

// ServiceBindingSchema holds the schema of bind parameters.
type ServiceBindingSchema struct {
	Create *InputParametersSchema `json:"create,omitempty"` // schema of bind parameters
}

// InputParametersSchema wraps one JSON Schema. Parameters is kept as raw JSON
// so that callers can hand it unchanged to a JSON Schema validator.
type InputParametersSchema struct {
	Parameters json.RawMessage `json:"parameters,omitempty"` // a JSON Schema document (draft-04 or later)
}

// MaintenanceInfo identifies the maintenance level of a plan or instance.
// Brokers only read Version (a SemVer 2.0 string) from requests.
type MaintenanceInfo struct {
	Version     string `json:"version"`               // SemVer 2.0 version; the only field brokers read
	Description string `json:"description,omitempty"` // user-facing description of the level
}

// ---------------------------------------------------------------------------
// Request context, identity, bind resource

// KubernetesContext is the "context" object of the Kubernetes profile.
// Platform must be PlatformKubernetes. Provision and update need Namespace,
// ClusterID and InstanceName; bind needs Namespace and ClusterID.
type KubernetesContext struct {
	Platform             string            `json:"platform"`                        // always PlatformKubernetes
	Namespace            string            `json:"namespace,omitempty"`             // namespace of the instance or binding
	ClusterID            string            `json:"clusterid,omitempty"`             // stable, non-empty id of the cluster
	InstanceName         string            `json:"instance_name,omitempty"`         // name of the instance object
	NamespaceAnnotations map[string]string `json:"namespace_annotations,omitempty"` // annotations of the namespace, optional
	InstanceAnnotations  map[string]string `json:"instance_annotations,omitempty"`  // annotations of the instance object, optional
}

// OriginatingIdentity is the Kubernetes profile's user description, sent
// base64-encoded in HeaderOriginatingIdentity. All four keys are always sent.
type OriginatingIdentity struct {
	Username string              `json:"username"` // the user's name
	UID      string              `json:"uid"`      // the user's uid
	Groups   []string            `json:"groups"`   // the user's groups
	Extra    map[string][]string `json:"extra"`    // extra authentication attributes
}

// BindResource describes what a binding is for. In Kubernetes AppGUID
// typically names a namespace; it must be unique within the platform.
type BindResource struct {
	AppGUID string `json:"app_guid,omitempty"` // what the credentials are for; unique within the platform
	Route   string `json:"route,omitempty"`    // route address, for route services
}

// RequestOptions are the per-request knobs shared by every request type. They
// never go into a request body.
type RequestOptions struct {
	// RequestIdentity is sent as HeaderRequestIdentity; a new UUID is
	// generated when empty. Set it to correlate retries of one logical call.
	RequestIdentity string `json:"-"`
	// OriginatingIdentity, when set, overrides ClientConfig.OriginatingIdentity
	// for this request.
	OriginatingIdentity *OriginatingIdentity `json:"-"`
	// OmitOriginatingIdentity suppresses the header for requests that are not
	// user-initiated (catalog refresh, orphan mitigation), as the spec allows.
	OmitOriginatingIdentity bool `json:"-"`
}

// InstanceMetadata is the "metadata" of a service instance. Values are kept
// untyped so a broker sending a malformed label cannot make the whole answer
// undecodable; use StringLabels to get the well-formed ones.
type InstanceMetadata struct {
	Labels     map[string]any `json:"labels,omitempty"`     // replace all previously known labels
	Attributes map[string]any `json:"attributes,omitempty"` // broker-specific attributes
}

// ---------------------------------------------------------------------------
// Catalog request

// CatalogRequest is the (empty) request of GetCatalog; it exists for
// RequestOptions. A nil *CatalogRequest is valid.
type CatalogRequest struct {
	RequestOptions
	// MaxBytes, when positive and below the client's ClientConfig.MaxCatalogBytes, caps
	// this catalog's body instead: a caller that trusts a broker less than others (a
	// namespace-scoped broker, whose URL a tenant chooses) reads less of it.
	MaxBytes int64 `json:"-"`
}

// ---------------------------------------------------------------------------
// Provision

// ProvisionRequest is PUT /v2/service_instances/:instance_id.
type ProvisionRequest struct {
	RequestOptions
	// InstanceID goes into the path; required.
	InstanceID string `json:"-"`
	// AcceptsIncomplete is sent as the accepts_incomplete query parameter.
	AcceptsIncomplete bool `json:"-"`

	ServiceID string             `json:"service_id"`        // required
	PlanID    string             `json:"plan_id"`           // required
	Context   *KubernetesContext `json:"context,omitempty"` // the Kubernetes context; send it with the GUIDs
	// OrganizationGUID and SpaceGUID are deprecated but still required and
	// non-empty.
	OrganizationGUID string `json:"organization_guid"`
	SpaceGUID        string `json:"space_guid"` // deprecated but required
	// Parameters is a JSON object sent verbatim; nil omits it.
	Parameters      json.RawMessage  `json:"parameters,omitempty"`
	MaintenanceInfo *MaintenanceInfo `json:"maintenance_info,omitempty"` // the plan's maintenance level, when versioned
}

// ProvisionResponse is the 200, 201 or 202 answer to a provision.
type ProvisionResponse struct {
	// DashboardURL is only sent on the first answer, even an async one, so
	// persist it.
	DashboardURL string            `json:"dashboard_url,omitempty"`
	Operation    string            `json:"operation,omitempty"` // async operation key to poll with; may be empty
	Metadata     *InstanceMetadata `json:"metadata,omitempty"`  // instance labels and attributes

	// StatusCode is the HTTP status the broker answered (200, 201 or 202).
	StatusCode int `json:"-"`
	// Async is true for 202: poll LastOperation with Operation.
	Async bool `json:"-"`
}

// ---------------------------------------------------------------------------
// Update

// UpdateRequest is PATCH /v2/service_instances/:instance_id. Leave PlanID and
// Parameters empty to keep the plan and parameters unchanged.
type UpdateRequest struct {
	RequestOptions
	InstanceID        string `json:"-"` // goes into the path; required
	AcceptsIncomplete bool   `json:"-"` // sent as the accepts_incomplete query parameter

	ServiceID       string             `json:"service_id"`                 // required
	PlanID          string             `json:"plan_id,omitempty"`          // new plan; only when the effective plan_updateable is true
	Parameters      json.RawMessage    `json:"parameters,omitempty"`       // only the parameters the user specified; nil keeps them
	Context         *KubernetesContext `json:"context,omitempty"`          // the Kubernetes context
	PreviousValues  *PreviousValues    `json:"previous_values,omitempty"`  // the instance before the update
	MaintenanceInfo *MaintenanceInfo   `json:"maintenance_info,omitempty"` // the maintenance level to move to
}

// PreviousValues describes the instance before an update.
type PreviousValues struct {
	PlanID          string           `json:"plan_id,omitempty"`          // plan before the update
	MaintenanceInfo *MaintenanceInfo `json:"maintenance_info,omitempty"` // maintenance level before the update
	// ServiceID, OrganizationID and SpaceID are deprecated.
	ServiceID      string `json:"service_id,omitempty"`
	OrganizationID string `json:"organization_id,omitempty"` // deprecated
	SpaceID        string `json:"space_id,omitempty"`        // deprecated
}

// UpdateResponse is the 200 or 202 answer to an update. An empty
// DashboardURL means the previous one stays valid.
type UpdateResponse struct {
	DashboardURL string            `json:"dashboard_url,omitempty"` // new dashboard URL; empty keeps the old one
	Operation    string            `json:"operation,omitempty"`     // async operation key; may be empty
	Metadata     *InstanceMetadata `json:"metadata,omitempty"`      // instance labels and attributes

	// StatusCode is 200 or 202.
	StatusCode int `json:"-"`
	// Async is true for 202.
	Async bool `json:"-"`
}

// ---------------------------------------------------------------------------
// Deprovision

// DeprovisionRequest is DELETE /v2/service_instances/:instance_id. ServiceID
// and PlanID are required and sent as query parameters.
type DeprovisionRequest struct {
	RequestOptions
	InstanceID        string `json:"-"` // goes into the path; required
	ServiceID         string `json:"-"` // required, sent in the query
	PlanID            string `json:"-"` // required, sent in the query
	AcceptsIncomplete bool   `json:"-"` // sent as the accepts_incomplete query parameter
}

// DeprovisionResponse is the 200 or 202 answer to a deprovision. A 410 is
// returned as an error matched by IsGoneError instead.
type DeprovisionResponse struct {
	Operation string `json:"operation,omitempty"` // async operation key; may be empty

	// StatusCode is 200 or 202.
	StatusCode int `json:"-"`
	// Async is true for 202.
	Async bool `json:"-"`
}

// ---------------------------------------------------------------------------
// Last operation

// LastOperationRequest is GET /v2/service_instances/:instance_id/last_operation.
// ServiceID and PlanID are optional but should be sent; after a plan change
// PlanID must be the plan before the update. OperationKey is sent back
// exactly as the broker returned it.
type LastOperationRequest struct {
	RequestOptions
	InstanceID   string `json:"-"` // goes into the path; required
	ServiceID    string `json:"-"` // optional, should be sent
	PlanID       string `json:"-"` // optional; the plan before an update
	OperationKey string `json:"-"` // the operation the broker returned, verbatim
}

// BindingLastOperationRequest is
// GET /v2/service_instances/:instance_id/service_bindings/:binding_id/last_operation.
type BindingLastOperationRequest struct {
	RequestOptions
	InstanceID   string `json:"-"` // goes into the path; required
	BindingID    string `json:"-"` // goes into the path; required
	ServiceID    string `json:"-"` // optional, should be sent
	PlanID       string `json:"-"` // optional, should be sent
	OperationKey string `json:"-"` // the operation the broker returned, verbatim
}

// LastOperationResponse is the 200 answer of both last_operation endpoints.
// InstanceUsable and UpdateRepeatable only come from the instance endpoint.
type LastOperationResponse struct {
	State            LastOperationState `json:"state"`                       // one of StateInProgress, StateSucceeded, StateFailed
	Description      string             `json:"description,omitempty"`       // user-facing progress or failure message
	InstanceUsable   *bool              `json:"instance_usable,omitempty"`   // nil means usable
	UpdateRepeatable *bool              `json:"update_repeatable,omitempty"` // nil means repeatable

	// RetryAfter is how long the broker asks the platform to wait before the
	// next poll, from the Retry-After header; 0 when absent or unparsable.
	RetryAfter time.Duration `json:"-"`
}

// ---------------------------------------------------------------------------
// Fetch instance

// GetInstanceRequest is GET /v2/service_instances/:instance_id. Only call it
// when the service has instances_retrievable.
type GetInstanceRequest struct {
	RequestOptions
	InstanceID string `json:"-"` // goes into the path; required
	ServiceID  string `json:"-"` // optional, sent in the query
	PlanID     string `json:"-"` // optional, sent in the query
}

// GetInstanceResponse is the 200 answer of GetInstance.
type GetInstanceResponse struct {
	ServiceID       string            `json:"service_id,omitempty"`       // service of the instance
	PlanID          string            `json:"plan_id,omitempty"`          // current plan of the instance
	DashboardURL    string            `json:"dashboard_url,omitempty"`    // dashboard URL, if any
	Parameters      json.RawMessage   `json:"parameters,omitempty"`       // parameters as the broker knows them; may be partial
	MaintenanceInfo *MaintenanceInfo  `json:"maintenance_info,omitempty"` // current maintenance level
	Metadata        *InstanceMetadata `json:"metadata,omitempty"`         // instance labels and attributes
}

// ---------------------------------------------------------------------------
// Bind

// BindRequest is PUT /v2/service_instances/:instance_id/service_bindings/:binding_id.
// Send AcceptsIncomplete only when the service has bindings_retrievable, and
// PredecessorBindingID only when the plan has binding_rotatable.
type BindRequest struct {
	RequestOptions
	InstanceID        string `json:"-"` // goes into the path; required
	BindingID         string `json:"-"` // goes into the path; required
	AcceptsIncomplete bool   `json:"-"` // only when the service has bindings_retrievable

	ServiceID    string             `json:"service_id"`              // required
	PlanID       string             `json:"plan_id"`                 // required
	Context      *KubernetesContext `json:"context,omitempty"`       // the Kubernetes context
	BindResource *BindResource      `json:"bind_resource,omitempty"` // what the binding is for
	// AppGUID is deprecated in favour of BindResource.AppGUID.
	AppGUID              string          `json:"app_guid,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`             // a JSON object sent verbatim; nil omits it
	PredecessorBindingID string          `json:"predecessor_binding_id,omitempty"` // binding being rotated; only for binding_rotatable plans
}

// BindingMetadata carries the lifetime of a binding's credentials as ISO 8601
// strings (yyyy-mm-ddThh:mm:ss.sZ); see ExpiresAtTime and RenewBeforeTime.
type BindingMetadata struct {
	ExpiresAt   string `json:"expires_at,omitempty"`   // when the credentials stop working
	RenewBefore string `json:"renew_before,omitempty"` // when to rotate, at or before ExpiresAt
}

// VolumeMount is one entry of a binding's volume_mounts.
type VolumeMount struct {
	Driver       string            `json:"driver"`        // volume driver name
	ContainerDir string            `json:"container_dir"` // mount path inside the container
	Mode         string            `json:"mode"`          // VolumeModeReadOnly or VolumeModeReadWrite
	DeviceType   string            `json:"device_type"`   // DeviceTypeShared
	Device       VolumeMountDevice `json:"device"`        // the volume to mount
}

// VolumeMountDevice identifies the volume of a VolumeMount.
type VolumeMountDevice struct {
	VolumeID    string         `json:"volume_id"`              // id of the volume
	MountConfig map[string]any `json:"mount_config,omitempty"` // driver-specific options
}

// Endpoint is a network endpoint a binding's application may reach. Ports are
// strings because they may be ranges such as "9000-9010".
type Endpoint struct {
	Host     string   `json:"host"`               // host name or IP address
	Ports    []string `json:"ports"`              // ports or ranges such as "9000-9010"
	Protocol string   `json:"protocol,omitempty"` // ProtocolTCP (default), ProtocolUDP or ProtocolAll
}

// BindResponse is the 200, 201 or 202 answer to a bind. A 202 carries only
// Operation; fetch the binding with GetBinding once polling succeeds.
type BindResponse struct {
	Metadata        *BindingMetadata `json:"metadata,omitempty"`          // credential lifetime, if any
	Credentials     map[string]any   `json:"credentials,omitempty"`       // secret values for the application
	SyslogDrainURL  string           `json:"syslog_drain_url,omitempty"`  // needs Requires syslog_drain
	RouteServiceURL string           `json:"route_service_url,omitempty"` // needs Requires route_forwarding
	VolumeMounts    []VolumeMount    `json:"volume_mounts,omitempty"`     // needs Requires volume_mount
	Endpoints       []Endpoint       `json:"endpoints,omitempty"`         // network endpoints the application may reach
	Operation       string           `json:"operation,omitempty"`         // async operation key (202 only)

	// StatusCode is 200, 201 or 202.
	StatusCode int `json:"-"`
	// Async is true for 202.
	Async bool `json:"-"`
}

// ---------------------------------------------------------------------------
// Unbind

// UnbindRequest is DELETE …/service_bindings/:binding_id. ServiceID and PlanID
// are required and sent as query parameters.
type UnbindRequest struct {
	RequestOptions
	InstanceID        string `json:"-"` // goes into the path; required
	BindingID         string `json:"-"` // goes into the path; required
	ServiceID         string `json:"-"` // required, sent in the query
	PlanID            string `json:"-"` // required, sent in the query
	AcceptsIncomplete bool   `json:"-"` // sent as the accepts_incomplete query parameter
}

// UnbindResponse is the 200 or 202 answer to an unbind. A 410 is returned as
// an error matched by IsGoneError instead.
type UnbindResponse struct {
	Operation string `json:"operation,omitempty"` // async operation key; may be empty

	// StatusCode is 200 or 202.
	StatusCode int `json:"-"`
	// Async is true for 202.
	Async bool `json:"-"`
}

// ---------------------------------------------------------------------------
// Fetch binding

// GetBindingRequest is GET …/service_bindings/:binding_id. Only call it when
// the service has bindings_retrievable.
type GetBindingRequest struct {
	RequestOptions
	InstanceID string `json:"-"` // goes into the path; required
	BindingID  string `json:"-"` // goes into the path; required
	ServiceID  string `json:"-"` // optional, sent in the query
	PlanID     string `json:"-"` // optional, sent in the query
}

// GetBindingResponse is the 200 answer of GetBinding.
type GetBindingResponse struct {
	Metadata        *BindingMetadata `json:"metadata,omitempty"`          // credential lifetime, if any
	Credentials     map[string]any   `json:"credentials,omitempty"`       // secret values; brokers may hand them out only once
	SyslogDrainURL  string           `json:"syslog_drain_url,omitempty"`  // needs Requires syslog_drain
	RouteServiceURL string           `json:"route_service_url,omitempty"` // needs Requires route_forwarding
	VolumeMounts    []VolumeMount    `json:"volume_mounts,omitempty"`     // needs Requires volume_mount
	Endpoints       []Endpoint       `json:"endpoints,omitempty"`         // network endpoints the application may reach
	Parameters      json.RawMessage  `json:"parameters,omitempty"`        // parameters the binding was created with
}

// Status returns the HTTP status of the answer, or 0 for a nil response, so
// that OutcomeOf(resp.Status(), err) is safe whether or not the call failed.
func (r *ProvisionResponse) Status() int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// Status returns the HTTP status of the answer, or 0 for a nil response.
func (r *UpdateResponse) Status() int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// Status returns the HTTP status of the answer, or 0 for a nil response.
func (r *DeprovisionResponse) Status() int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// Status returns the HTTP status of the answer, or 0 for a nil response.
func (r *BindResponse) Status() int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// Status returns the HTTP status of the answer, or 0 for a nil response.
func (r *UnbindResponse) Status() int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}
