package osb

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// EffectiveBindable reports whether instances of the plan may be bound: the
// plan's own value when set, else the service's.
func (p *Plan) EffectiveBindable(svc *Service) bool {
	if p.Bindable != nil {
		return *p.Bindable
	}
	return svc != nil && svc.Bindable
}

// EffectivePlanUpdateable reports whether an instance of the plan may change
// plan: the plan's value when set, else the service's, else false.
func (p *Plan) EffectivePlanUpdateable(svc *Service) bool {
	if p.PlanUpdateable != nil {
		return *p.PlanUpdateable
	}
	if svc != nil && svc.PlanUpdateable != nil {
		return *svc.PlanUpdateable
	}
	return false
}

// IsFree reports whether the plan is free; an absent "free" means free.
func (p *Plan) IsFree() bool {
	return p.Free == nil || *p.Free
}

// MaxPollingDuration is the plan's maximum_polling_duration, or 0 when the
// plan sets none (or sets a non-positive value, which cannot be honoured).
func (p *Plan) MaxPollingDuration() time.Duration {
	if p.MaximumPollingDuration == nil || *p.MaximumPollingDuration <= 0 {
		return 0
	}
	return time.Duration(*p.MaximumPollingDuration) * time.Second
}

// InstanceCreateSchema is schemas.service_instance.create.parameters, or nil.
func (p *Plan) InstanceCreateSchema() json.RawMessage {
	if p.Schemas == nil || p.Schemas.ServiceInstance == nil || p.Schemas.ServiceInstance.Create == nil {
		return nil
	}
	return p.Schemas.ServiceInstance.Create.Parameters
}

// InstanceUpdateSchema is schemas.service_instance.update.parameters, or nil.
func (p *Plan) InstanceUpdateSchema() json.RawMessage {
	if p.Schemas == nil || p.Schemas.ServiceInstance == nil || p.Schemas.ServiceInstance.Update == nil {
		return nil
	}
	return p.Schemas.ServiceInstance.Update.Parameters
}

// BindingCreateSchema is schemas.service_binding.create.parameters, or nil.
// The spec only gives it meaning when the plan is bindable, so it is nil for
// a plan that is not (given its service).
func (p *Plan) BindingCreateSchema(svc *Service) json.RawMessage {
	if !p.EffectiveBindable(svc) || p.Schemas == nil || p.Schemas.ServiceBinding == nil || p.Schemas.ServiceBinding.Create == nil {
		return nil
	}
	return p.Schemas.ServiceBinding.Create.Parameters
}

// ServiceByID returns the service with the given id, or nil. Ids, not names,
// identify catalog entries.
func (c *CatalogResponse) ServiceByID(id string) *Service {
	for i := range c.Services {
		if c.Services[i].ID == id {
			return &c.Services[i]
		}
	}
	return nil
}

// ServiceByName returns the service with the given (case-sensitive) name, or nil.
func (c *CatalogResponse) ServiceByName(name string) *Service {
	for i := range c.Services {
		if c.Services[i].Name == name {
			return &c.Services[i]
		}
	}
	return nil
}

// PlanByID returns the plan with the given id, or nil.
func (s *Service) PlanByID(id string) *Plan {
	for i := range s.Plans {
		if s.Plans[i].ID == id {
			return &s.Plans[i]
		}
	}
	return nil
}

// PlanByName returns the plan with the given name, or nil.
func (s *Service) PlanByName(name string) *Plan {
	for i := range s.Plans {
		if s.Plans[i].Name == name {
			return &s.Plans[i]
		}
	}
	return nil
}

// Validate checks the rules of the spec a platform relies on: required
// fields, at least one plan per service, unique service ids and names, and
// plan ids and names unique within their service. Decoding never enforces
// these so that a caller can still show a partly broken catalog.
func (c *CatalogResponse) Validate() error {
	var v CatalogValidator
	for i := range c.Services {
		v.Add(&c.Services[i])
	}
	return v.Err()
}

// CatalogValidator applies Validate's rules to services given one at a time, so that
// a catalog decoded service by service (WalkCatalog) is checked without being held
// whole. The zero value is ready to use.
type CatalogValidator struct {
	n                        int
	serviceIDs, serviceNames map[string]bool
	errs                     []error
}

// Add checks service s, the next of the catalog.
func (v *CatalogValidator) Add(s *Service) {
	if v.serviceIDs == nil {
		v.serviceIDs, v.serviceNames = map[string]bool{}, map[string]bool{}
	}
	where := fmt.Sprintf("service %d (%q)", v.n, s.Name)
	v.n++
	switch {
	case s.ID == "":
		v.errs = append(v.errs, fmt.Errorf("%s has no id", where))
	case v.serviceIDs[s.ID]:
		v.errs = append(v.errs, fmt.Errorf("%s repeats id %q", where, s.ID))
	}
	switch {
	case s.Name == "":
		v.errs = append(v.errs, fmt.Errorf("%s has no name", where))
	case v.serviceNames[s.Name]:
		v.errs = append(v.errs, fmt.Errorf("%s repeats name %q", where, s.Name))
	}
	v.serviceIDs[s.ID], v.serviceNames[s.Name] = true, true
	if len(s.Plans) == 0 {
		v.errs = append(v.errs, fmt.Errorf("%s has no plans", where))
	}
	planIDs := map[string]bool{}
	planNames := map[string]bool{}
	for j, p := range s.Plans {
		pwhere := fmt.Sprintf("%s plan %d (%q)", where, j, p.Name)
		switch {
		case p.ID == "":
			v.errs = append(v.errs, fmt.Errorf("%s has no id", pwhere))
		case planIDs[p.ID]:
			v.errs = append(v.errs, fmt.Errorf("%s repeats id %q", pwhere, p.ID))
		}
		switch {
		case p.Name == "":
			v.errs = append(v.errs, fmt.Errorf("%s has no name", pwhere))
		case planNames[p.Name]:
			v.errs = append(v.errs, fmt.Errorf("%s repeats name %q", pwhere, p.Name))
		}
		planIDs[p.ID], planNames[p.Name] = true, true
		if p.MaintenanceInfo != nil && p.MaintenanceInfo.Version == "" {
			v.errs = append(v.errs, fmt.Errorf("%s has maintenance_info without a version", pwhere))
		}
	}
}

// Err returns every problem found so far, or nil.
func (v *CatalogValidator) Err() error {
	if len(v.errs) > 0 {
		return fmt.Errorf("osb: invalid catalog: %w", errors.Join(v.errs...))
	}
	return nil
}

// ServiceMetadata holds the service metadata keys the Kubernetes profile
// defines.
type ServiceMetadata struct {
	DisplayName         string `json:"displayName,omitempty"`         // name to show users
	ImageURL            string `json:"imageUrl,omitempty"`            // URL of an icon
	LongDescription     string `json:"longDescription,omitempty"`     // long user-facing description
	ProviderDisplayName string `json:"providerDisplayName,omitempty"` // name of the provider
	DocumentationURL    string `json:"documentationUrl,omitempty"`    // link to documentation
	SupportURL          string `json:"supportUrl,omitempty"`          // link to support
}

// PlanMetadata holds the plan metadata keys the Kubernetes profile defines.
type PlanMetadata struct {
	Bullets     []string   `json:"bullets,omitempty"`     // feature bullet points
	Costs       []PlanCost `json:"costs,omitempty"`       // prices per unit
	DisplayName string     `json:"displayName,omitempty"` // name to show users
}

// PlanCost is one entry of PlanMetadata.Costs, e.g. {"usd": 9.99} per "MONTHLY".
type PlanCost struct {
	Amount map[string]float64 `json:"amount"` // price per currency code
	Unit   string             `json:"unit"`   // billing unit, e.g. "MONTHLY"
}

// ProfileMetadata extracts the conventional keys from the service's opaque
// metadata. Keys of the wrong type are left empty rather than failing, since
// metadata is only ever displayed.
func (s *Service) ProfileMetadata() ServiceMetadata {
	var m ServiceMetadata
	m.DisplayName = stringKey(s.Metadata, "displayName")
	m.ImageURL = stringKey(s.Metadata, "imageUrl")
	m.LongDescription = stringKey(s.Metadata, "longDescription")
	m.ProviderDisplayName = stringKey(s.Metadata, "providerDisplayName")
	m.DocumentationURL = stringKey(s.Metadata, "documentationUrl")
	m.SupportURL = stringKey(s.Metadata, "supportUrl")
	return m
}

// ProfileMetadata extracts the conventional keys from the plan's opaque
// metadata, skipping malformed entries.
func (p *Plan) ProfileMetadata() PlanMetadata {
	m := PlanMetadata{DisplayName: stringKey(p.Metadata, "displayName")}
	if bullets, ok := p.Metadata["bullets"].([]any); ok {
		for _, b := range bullets {
			if s, ok := b.(string); ok {
				m.Bullets = append(m.Bullets, s)
			}
		}
	}
	if costs, ok := p.Metadata["costs"].([]any); ok {
		for _, c := range costs {
			obj, ok := c.(map[string]any)
			if !ok {
				continue
			}
			amounts, ok := obj["amount"].(map[string]any)
			if !ok {
				continue
			}
			cost := PlanCost{Amount: map[string]float64{}, Unit: stringKey(obj, "unit")}
			for currency, v := range amounts {
				if f, ok := v.(float64); ok {
					cost.Amount[currency] = f
				}
			}
			m.Costs = append(m.Costs, cost)
		}
	}
	return m
}

func stringKey(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// StringLabels returns the labels whose values are strings. The profile asks
// platforms to ignore labels with invalid syntax rather than fail.
func (m *InstanceMetadata) StringLabels() map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m.Labels))
	for k, v := range m.Labels {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// ExpiresAtTime parses ExpiresAt; it returns the zero time and no error when
// the field is absent.
func (m *BindingMetadata) ExpiresAtTime() (time.Time, error) {
	if m == nil {
		return time.Time{}, nil
	}
	return parseISO8601("expires_at", m.ExpiresAt)
}

// RenewBeforeTime parses RenewBefore; it returns the zero time and no error
// when the field is absent.
func (m *BindingMetadata) RenewBeforeTime() (time.Time, error) {
	if m == nil {
		return time.Time{}, nil
	}
	return parseISO8601("renew_before", m.RenewBefore)
}

func parseISO8601(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	// RFC 3339 accepts the spec's yyyy-mm-ddThh:mm:ss.sZ as well as offsets.
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("osb: binding metadata %s %q is not an ISO 8601 timestamp: %w", field, v, err)
	}
	return t, nil
}
