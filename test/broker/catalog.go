package broker

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

//go:embed catalog.yaml
var defaultCatalogYAML []byte

//go:embed catalog-paired.yaml
var pairedCatalogYAML []byte

// BehaviourKey is the plan field, in catalog files, that holds the broker's
// PlanBehaviour. It is stripped from what GET /v2/catalog serves.
const BehaviourKey = "x-test-broker"

// Catalog is what the broker advertises plus how it acts for each plan.
type Catalog struct {
	Services []osb.Service
	// Behaviours maps a plan id to the broker's behaviour for it. A plan with
	// no entry is synchronous and has no special requirements.
	Behaviours map[string]PlanBehaviour
}

// PlanBehaviour is the broker-specific part of a plan: nothing in it is sent
// to the platform; it decides how the broker answers.
type PlanBehaviour struct {
	// Async lists the operations that run asynchronously. Such an operation
	// answers 202 and needs accepts_incomplete=true (422 AsyncRequired
	// otherwise). Allowed: provision, update, deprovision, bind, unbind; an
	// async bind or unbind needs the service to be bindings_retrievable,
	// because the platform can only get the credentials with GET binding.
	Async []Op `json:"async,omitempty"`
	// AsyncDelay is how long an asynchronous operation stays "in progress";
	// 3s when unset. Options.AsyncDelay and Broker.SetAsyncDelay override it.
	AsyncDelay Duration `json:"async_delay,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header (whole seconds,
	// rounded up) on last_operation answers that are still in progress.
	RetryAfter Duration `json:"retry_after,omitempty"`
	// RequiresApp makes bind answer 422 RequiresApp unless the request names
	// an app (bind_resource.app_guid, or the deprecated app_guid).
	RequiresApp bool `json:"requires_app,omitempty"`
	// BindingTTL gives bindings metadata.expires_at = creation + BindingTTL.
	BindingTTL Duration `json:"binding_ttl,omitempty"`
	// RenewBefore sets metadata.renew_before = expires_at - RenewBefore;
	// defaults to a fifth of BindingTTL.
	RenewBefore Duration `json:"renew_before,omitempty"`
	// Credentials shapes the credentials of a binding.
	Credentials CredentialsTemplate `json:"credentials,omitzero"`
	// HaltProvisionOnDelete makes a deprovision sent while an async
	// provision is in progress stop the provision (spec "Polling Last
	// Operation": the broker may halt creation) instead of answering 422
	// ConcurrencyError.
	HaltProvisionOnDelete bool `json:"halt_provision_on_delete,omitempty"`
	// Dashboard makes provision return a dashboard_url served by the broker
	// under /dashboard/.
	Dashboard bool `json:"dashboard,omitempty"`
}

// CredentialsTemplate decides what the credentials of a binding look like.
type CredentialsTemplate struct {
	// Scheme is the URI scheme of credentials.uri (e.g. "postgresql"); the
	// service name when empty.
	Scheme string `json:"scheme,omitempty"`
	// Port is credentials.port; 443 when zero.
	Port int `json:"port,omitempty"`
}

// isAsync reports whether op runs asynchronously for this plan.
func (pb PlanBehaviour) isAsync(op Op) bool { return slices.Contains(pb.Async, op) }

// Duration is a time.Duration that reads and writes as a Go duration string
// ("1500ms", "3s") in catalog and fault documents. A bare number is taken as
// seconds, which is what people tend to write in YAML.
type Duration time.Duration

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts "3s"-style strings and numbers of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s == "" {
			*d = 0
			return nil
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q: use a Go duration such as \"500ms\" or \"3s\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("invalid duration %s: use a string such as \"3s\" or a number of seconds", b)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// DefaultCatalog returns the demo catalog embedded in the package (see
// docs/test-broker.md for a tour of it).
func DefaultCatalog() Catalog {
	c, err := ParseCatalog(defaultCatalogYAML)
	if err != nil {
		// The file is embedded and covered by tests, so this is a build defect.
		panic(fmt.Sprintf("embedded demo catalog is invalid: %v", err))
	}
	return c
}

// PairedCatalog returns the second catalog embedded in the package
// (catalog-paired.yaml): service "svc", whose plans' update schemas ask every
// update for parameters foo and bar together, which the broker enforces.
func PairedCatalog() Catalog {
	c, err := ParseCatalog(pairedCatalogYAML)
	if err != nil {
		panic(fmt.Sprintf("embedded paired catalog is invalid: %v", err))
	}
	return c
}

// DefaultCatalogYAML returns the source of the embedded demo catalog, a
// starting point for writing one's own.
func DefaultCatalogYAML() []byte { return bytes.Clone(defaultCatalogYAML) }

// LoadCatalogFile reads a catalog from a YAML or JSON file.
func LoadCatalogFile(path string) (Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Catalog{}, fmt.Errorf("reading catalog: %w", err)
	}
	c, err := ParseCatalog(data)
	if err != nil {
		return Catalog{}, fmt.Errorf("catalog file %s: %w", path, err)
	}
	return c, nil
}

// ParseCatalog reads a catalog document (YAML or JSON, since JSON is YAML):
// an OSB catalog response whose plans may carry an "x-test-broker" object
// with the plan's PlanBehaviour. The catalog is validated the way
// Broker.ReplaceCatalog validates it.
func ParseCatalog(data []byte) (Catalog, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Catalog{}, fmt.Errorf("not valid YAML or JSON: %w", err)
	}
	var c Catalog
	if err := json.Unmarshal(js, &c); err != nil {
		return Catalog{}, err
	}
	if _, err := indexCatalog(c); err != nil {
		return Catalog{}, err
	}
	return c, nil
}

// MarshalJSON writes the catalog in the file format, behaviours inline.
func (c Catalog) MarshalJSON() ([]byte, error) {
	services := c.Services
	if services == nil {
		services = []osb.Service{}
	}
	plain, err := json.Marshal(osb.CatalogResponse{Services: services})
	if err != nil {
		return nil, err
	}
	if len(c.Behaviours) == 0 {
		return plain, nil
	}
	var doc struct {
		Services []map[string]json.RawMessage `json:"services"`
	}
	if err := json.Unmarshal(plain, &doc); err != nil {
		return nil, err
	}
	for si, svc := range c.Services {
		var plans []map[string]json.RawMessage
		if err := json.Unmarshal(doc.Services[si]["plans"], &plans); err != nil {
			return nil, err
		}
		for pi, p := range svc.Plans {
			if pb, ok := c.Behaviours[p.ID]; ok {
				b, err := json.Marshal(pb)
				if err != nil {
					return nil, err
				}
				plans[pi][BehaviourKey] = b
			}
		}
		b, err := json.Marshal(plans)
		if err != nil {
			return nil, err
		}
		doc.Services[si]["plans"] = b
	}
	return json.Marshal(doc)
}

// UnmarshalJSON reads the file format. Behaviour objects are decoded
// strictly, since a misspelt knob would otherwise silently do nothing.
func (c *Catalog) UnmarshalJSON(data []byte) error {
	var plain osb.CatalogResponse
	if err := json.Unmarshal(data, &plain); err != nil {
		return fmt.Errorf("not an OSB catalog: %w", err)
	}
	var ext struct {
		Services []struct {
			Plans []map[string]json.RawMessage `json:"plans"`
		} `json:"services"`
	}
	if err := json.Unmarshal(data, &ext); err != nil {
		return fmt.Errorf("not an OSB catalog: %w", err)
	}
	out := Catalog{Services: plain.Services, Behaviours: map[string]PlanBehaviour{}}
	for si, svc := range plain.Services {
		for pi, p := range svc.Plans {
			raw, ok := ext.Services[si].Plans[pi][BehaviourKey]
			if !ok {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			var pb PlanBehaviour
			if err := dec.Decode(&pb); err != nil {
				return fmt.Errorf("service %q plan %q: %s: %w", svc.Name, p.Name, BehaviourKey, err)
			}
			out.Behaviours[p.ID] = pb
		}
	}
	*c = out
	return nil
}

// clone deep-copies the catalog so callers cannot change the broker's copy.
func (c Catalog) clone() Catalog {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("catalog does not marshal: %v", err))
	}
	var out Catalog
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("catalog does not round-trip: %v", err))
	}
	return out
}

// catalogIndex is a validated catalog ready for lookups.
type catalogIndex struct {
	catalog  Catalog
	services map[string]*osb.Service
	plans    map[string]*planInfo
	// body is the served /v2/catalog document, and etag its hash.
	body []byte
	etag string
}

type planInfo struct {
	service   *osb.Service
	plan      *osb.Plan
	behaviour PlanBehaviour
	create    *paramSchema
	update    *paramSchema
	bind      *paramSchema
}

func (p *planInfo) bindable() bool {
	if p.plan.Bindable != nil {
		return *p.plan.Bindable
	}
	return p.service.Bindable
}

func (p *planInfo) planUpdateable() bool {
	if p.plan.PlanUpdateable != nil {
		return *p.plan.PlanUpdateable
	}
	return p.service.PlanUpdateable != nil && *p.service.PlanUpdateable
}

var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$`)

// indexCatalog validates c against the spec's catalog rules and the broker's
// own, and compiles the schemas. Errors name the service and plan.
func indexCatalog(c Catalog) (*catalogIndex, error) {
	var errs []error
	// Checked before cloning: the clone goes through the file format, which
	// has nowhere to put a behaviour of a plan that does not exist.
	planIDs := map[string]bool{}
	for _, svc := range c.Services {
		for _, p := range svc.Plans {
			planIDs[p.ID] = true
		}
	}
	for planID := range c.Behaviours {
		if !planIDs[planID] {
			errs = append(errs, fmt.Errorf("behaviour for plan id %q: no such plan in the catalog", planID))
		}
	}
	c = c.clone()
	idx := &catalogIndex{catalog: c, services: map[string]*osb.Service{}, plans: map[string]*planInfo{}}
	serviceNames := map[string]bool{}
	for si := range c.Services {
		svc := &c.Services[si]
		where := fmt.Sprintf("service %d (%q)", si, svc.Name)
		if svc.Name == "" || svc.ID == "" || svc.Description == "" {
			errs = append(errs, fmt.Errorf("%s: name, id and description are required", where))
		}
		if _, dup := idx.services[svc.ID]; dup && svc.ID != "" {
			errs = append(errs, fmt.Errorf("%s: id %q is used by another service", where, svc.ID))
		}
		if serviceNames[svc.Name] {
			errs = append(errs, fmt.Errorf("%s: name is used by another service", where))
		}
		serviceNames[svc.Name] = true
		idx.services[svc.ID] = svc
		if len(svc.Plans) == 0 {
			errs = append(errs, fmt.Errorf("%s: a service needs at least one plan", where))
		}
		planNames := map[string]bool{}
		for pi := range svc.Plans {
			p := &svc.Plans[pi]
			pwhere := fmt.Sprintf("service %q plan %q", svc.Name, p.Name)
			if p.Name == "" || p.ID == "" || p.Description == "" {
				errs = append(errs, fmt.Errorf("%s: name, id and description are required", pwhere))
			}
			if planNames[p.Name] {
				errs = append(errs, fmt.Errorf("%s: name is used by another plan of the service", pwhere))
			}
			planNames[p.Name] = true
			if _, dup := idx.plans[p.ID]; dup && p.ID != "" {
				errs = append(errs, fmt.Errorf("%s: id %q is used by another plan", pwhere, p.ID))
			}
			if p.ID == svc.ID {
				errs = append(errs, fmt.Errorf("%s: plan id equals its service id", pwhere))
			}
			if p.MaintenanceInfo != nil && !semverRE.MatchString(p.MaintenanceInfo.Version) {
				errs = append(errs, fmt.Errorf("%s: maintenance_info.version %q is not SemVer 2.0", pwhere, p.MaintenanceInfo.Version))
			}
			if p.MaximumPollingDuration != nil && *p.MaximumPollingDuration <= 0 {
				errs = append(errs, fmt.Errorf("%s: maximum_polling_duration must be a positive number of seconds", pwhere))
			}
			info := &planInfo{service: svc, plan: p, behaviour: c.Behaviours[p.ID]}
			if s := p.Schemas; s != nil {
				var err error
				if s.ServiceInstance != nil && s.ServiceInstance.Create != nil {
					if info.create, err = compileParamSchema(s.ServiceInstance.Create.Parameters, pwhere+" schemas.service_instance.create"); err != nil {
						errs = append(errs, err)
					}
				}
				if s.ServiceInstance != nil && s.ServiceInstance.Update != nil {
					if info.update, err = compileParamSchema(s.ServiceInstance.Update.Parameters, pwhere+" schemas.service_instance.update"); err != nil {
						errs = append(errs, err)
					}
				}
				if s.ServiceBinding != nil && s.ServiceBinding.Create != nil {
					if info.bind, err = compileParamSchema(s.ServiceBinding.Create.Parameters, pwhere+" schemas.service_binding.create"); err != nil {
						errs = append(errs, err)
					}
				}
			}
			errs = append(errs, checkBehaviour(info, pwhere)...)
			if p.ID != "" {
				idx.plans[p.ID] = info
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	services := c.Services
	if services == nil {
		services = []osb.Service{}
	}
	body, err := json.Marshal(osb.CatalogResponse{Services: services})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	idx.body = body
	idx.etag = strconv.Quote(hex.EncodeToString(sum[:16]))
	return idx, nil
}

func checkBehaviour(info *planInfo, where string) []error {
	pb := info.behaviour
	var errs []error
	for _, op := range pb.Async {
		switch op {
		case OpProvision, OpUpdate, OpDeprovision:
		case OpBind, OpUnbind:
			if !info.service.BindingsRetrievable {
				errs = append(errs, fmt.Errorf("%s: async %s needs the service to set bindings_retrievable: true, or the platform cannot fetch the credentials", where, op))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: %s.async: %q cannot be asynchronous (use provision, update, deprovision, bind or unbind)", where, BehaviourKey, op))
		}
	}
	if pb.AsyncDelay < 0 || pb.RetryAfter < 0 || pb.BindingTTL < 0 || pb.RenewBefore < 0 {
		errs = append(errs, fmt.Errorf("%s: %s: durations cannot be negative", where, BehaviourKey))
	}
	if pb.RenewBefore > 0 && pb.BindingTTL == 0 {
		errs = append(errs, fmt.Errorf("%s: %s.renew_before needs binding_ttl", where, BehaviourKey))
	}
	if pb.RenewBefore > pb.BindingTTL && pb.BindingTTL > 0 {
		errs = append(errs, fmt.Errorf("%s: %s.renew_before (%s) is longer than binding_ttl (%s)", where, BehaviourKey, time.Duration(pb.RenewBefore), time.Duration(pb.BindingTTL)))
	}
	if (pb.RequiresApp || pb.BindingTTL > 0) && !info.bindable() {
		errs = append(errs, fmt.Errorf("%s: %s sets binding behaviour but the plan is not bindable", where, BehaviourKey))
	}
	if pb.Credentials.Port < 0 || pb.Credentials.Port > 65535 {
		errs = append(errs, fmt.Errorf("%s: %s.credentials.port %d is not a TCP port", where, BehaviourKey, pb.Credentials.Port))
	}
	if strings.ContainsAny(pb.Credentials.Scheme, ":/ ") {
		errs = append(errs, fmt.Errorf("%s: %s.credentials.scheme %q must be a bare URI scheme such as \"postgresql\"", where, BehaviourKey, pb.Credentials.Scheme))
	}
	return errs
}

// plan returns what the broker knows of a plan id; nil when the catalog no
// longer has it (instances outlive catalog changes).
func (idx *catalogIndex) plan(id string) *planInfo { return idx.plans[id] }
