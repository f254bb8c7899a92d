package broker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// InstanceState is where an instance is in its life.
type InstanceState string

// Instance states. An instance in a "-ing" state has an operation in
// progress, which blocks other changes (422 ConcurrencyError).
const (
	InstanceProvisioning   InstanceState = "provisioning"
	InstanceReady          InstanceState = "ready"
	InstanceUpdating       InstanceState = "updating"
	InstanceDeprovisioning InstanceState = "deprovisioning"
	// InstanceFailed: provisioning failed. The instance still exists until
	// it is deprovisioned, which is what orphan mitigation does.
	InstanceFailed InstanceState = "failed"
)

// BindingState is where a binding is in its life.
type BindingState string

// Binding states.
const (
	BindingCreating BindingState = "creating"
	BindingReady    BindingState = "ready"
	BindingDeleting BindingState = "deleting"
	BindingFailed   BindingState = "failed"
)

// Operation is the last operation of an instance or binding.
type Operation struct {
	// Key is the "operation" value given to the platform; empty for
	// synchronous operations.
	Key         string                 `json:"key,omitempty"`
	Kind        Op                     `json:"kind"`
	Async       bool                   `json:"async"`
	State       osb.LastOperationState `json:"state"`
	Description string                 `json:"description,omitempty"`
	StartedAt   time.Time              `json:"started_at"`
	// DoneAt is when an async operation completes, unless Stuck.
	DoneAt time.Time `json:"done_at,omitzero"`
	// Stuck operations never complete (ActionStickOperation).
	Stuck bool `json:"stuck,omitempty"`
	// Failure, when set, makes the operation end "failed" (ActionFailOperation).
	Failure *OperationFailure `json:"failure,omitempty"`
	// InstanceUsable and UpdateRepeatable are reported with a failed state.
	InstanceUsable   *bool `json:"instance_usable,omitempty"`
	UpdateRepeatable *bool `json:"update_repeatable,omitempty"`
	// RequestDigest identifies the request that started the operation, so a
	// re-sent identical request can be told from a conflicting one.
	RequestDigest string `json:"request_digest,omitempty"`
	// PlanID is the instance's plan when the operation started: the plan a
	// platform must name when polling after a plan change.
	PlanID string `json:"plan_id,omitempty"`
	// Pending is the change an async update applies when it succeeds.
	Pending *PendingUpdate `json:"pending,omitempty"`
}

// OperationFailure is how an operation will fail.
type OperationFailure struct {
	Description      string `json:"description,omitempty"`
	InstanceUsable   *bool  `json:"instance_usable,omitempty"`
	UpdateRepeatable *bool  `json:"update_repeatable,omitempty"`
}

// PendingUpdate is what an update changes once it succeeds; a failed update
// leaves the instance as it was, as the spec requires.
type PendingUpdate struct {
	PlanID          string               `json:"plan_id"`
	Parameters      map[string]any       `json:"parameters,omitempty"`
	MaintenanceInfo *osb.MaintenanceInfo `json:"maintenance_info,omitempty"`
	Context         json.RawMessage      `json:"context,omitempty"`
}

// Instance is a service instance as the broker stores it.
type Instance struct {
	ID               string          `json:"id"`
	ServiceID        string          `json:"service_id"`
	PlanID           string          `json:"plan_id"`
	OrganizationGUID string          `json:"organization_guid"`
	SpaceGUID        string          `json:"space_guid"`
	Context          json.RawMessage `json:"context,omitempty"`
	// Parameters are the effective parameters: what was sent plus schema
	// defaults, with updates merged in.
	Parameters      map[string]any        `json:"parameters,omitempty"`
	MaintenanceInfo *osb.MaintenanceInfo  `json:"maintenance_info,omitempty"`
	DashboardURL    string                `json:"dashboard_url,omitempty"`
	Metadata        *osb.InstanceMetadata `json:"metadata,omitempty"`
	State           InstanceState         `json:"state"`
	// Usable is false after a failure reported instance_usable: false.
	Usable bool `json:"usable"`
	// LastOperation is the most recent operation on the instance.
	LastOperation *Operation `json:"last_operation,omitempty"`
	// OriginatingIdentity is the decoded identity of the request that
	// created the instance, if the platform sent one.
	OriginatingIdentity *OriginatingIdentity `json:"originating_identity,omitempty"`
	// ProvisionDigest identifies the provision request, for 200/409 on a
	// re-sent PUT.
	ProvisionDigest string    `json:"provision_digest"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// Binding is a service binding as the broker stores it.
type Binding struct {
	ID                   string               `json:"id"`
	InstanceID           string               `json:"instance_id"`
	ServiceID            string               `json:"service_id"`
	PlanID               string               `json:"plan_id"`
	AppGUID              string               `json:"app_guid,omitempty"`
	BindResource         json.RawMessage      `json:"bind_resource,omitempty"`
	Context              json.RawMessage      `json:"context,omitempty"`
	Parameters           map[string]any       `json:"parameters,omitempty"`
	PredecessorBindingID string               `json:"predecessor_binding_id,omitempty"`
	Credentials          map[string]any       `json:"credentials,omitempty"`
	Metadata             *osb.BindingMetadata `json:"metadata,omitempty"`
	Endpoints            []osb.Endpoint       `json:"endpoints,omitempty"`
	SyslogDrainURL       string               `json:"syslog_drain_url,omitempty"`
	RouteServiceURL      string               `json:"route_service_url,omitempty"`
	VolumeMounts         []osb.VolumeMount    `json:"volume_mounts,omitempty"`
	State                BindingState         `json:"state"`
	LastOperation        *Operation           `json:"last_operation,omitempty"`
	OriginatingIdentity  *OriginatingIdentity `json:"originating_identity,omitempty"`
	BindDigest           string               `json:"bind_digest"`
	CreatedAt            time.Time            `json:"created_at"`
}

// tombstone remembers a deleted resource so polling its delete answers 410.
type tombstone struct {
	LastOperation *Operation `json:"last_operation,omitempty"`
	DeletedAt     time.Time  `json:"deleted_at"`
}

// state is everything the broker remembers; guarded by Broker.mu and saved
// as a whole to the state file.
type state struct {
	Instances        map[string]*Instance  `json:"instances"`
	Bindings         map[string]*Binding   `json:"bindings"`
	DeletedInstances map[string]*tombstone `json:"deleted_instances"`
	DeletedBindings  map[string]*tombstone `json:"deleted_bindings"`
}

func newState() *state {
	return &state{
		Instances:        map[string]*Instance{},
		Bindings:         map[string]*Binding{},
		DeletedInstances: map[string]*tombstone{},
		DeletedBindings:  map[string]*tombstone{},
	}
}

func (s *state) bindingsOf(instanceID string) []*Binding {
	var out []*Binding
	for _, b := range s.Bindings {
		if b.InstanceID == instanceID {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// busyOperation returns the in-progress operation that blocks changes to the
// instance: its own, or one of its bindings'.
func (s *state) busyOperation(instanceID string) (*Operation, string) {
	if inst := s.Instances[instanceID]; inst != nil && inst.LastOperation != nil && inst.LastOperation.State == osb.StateInProgress {
		return inst.LastOperation, "instance " + instanceID
	}
	for _, b := range s.bindingsOf(instanceID) {
		if b.LastOperation != nil && b.LastOperation.State == osb.StateInProgress {
			return b.LastOperation, "binding " + b.ID
		}
	}
	return nil, ""
}

func (s *state) forgetInstance(id string) bool {
	_, ok := s.Instances[id]
	delete(s.Instances, id)
	for _, b := range s.bindingsOf(id) {
		delete(s.Bindings, b.ID)
	}
	return ok
}

// loadState reads the state file; a missing file is an empty state.
func loadState(path string) (*state, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return newState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state file: %w", err)
	}
	s := newState()
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("state file %s is not valid (delete it to start empty): %w", path, err)
	}
	for _, m := range []*map[string]*tombstone{&s.DeletedInstances, &s.DeletedBindings} {
		if *m == nil {
			*m = map[string]*tombstone{}
		}
	}
	if s.Instances == nil {
		s.Instances = map[string]*Instance{}
	}
	if s.Bindings == nil {
		s.Bindings = map[string]*Binding{}
	}
	return s, nil
}

// saveState writes the state atomically: a reader (or a broker restarted
// after a crash) sees the old file or the new one, never half of one.
func saveState(path string, s *state) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing state file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing state file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing state file: %w", err)
	}
	return nil
}

// cloneJSON deep-copies a value through JSON; used to hand out copies of
// stored records so callers cannot race with the broker.
func cloneJSON[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cloning %T: %v", v, err))
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("cloning %T: %v", v, err))
	}
	return out
}
