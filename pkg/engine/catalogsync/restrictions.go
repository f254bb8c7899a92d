package catalogsync

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Properties restriction rules may test. Rules use label-selector syntax ("name in (a,b)",
// "free==true", "name!=x", "id notin (...)"); several requirements in one rule, and
// several rules, must all hold. The "spec." forms are the names svcat used.
var (
	classProperties = []string{"name", "id", "bindable", "tag", "spec.externalName", "spec.externalID"}
	planProperties  = []string{"name", "id", "free", "bindable", "class", "spec.externalName", "spec.externalID", "spec.free", "spec.serviceClass.name"}
)

// Restrictions are parsed catalog restrictions. The zero value allows everything.
type Restrictions struct {
	class, plan []labels.Selector
}

// ParseRestrictions parses a broker's catalog restrictions. It does no I/O, so commands
// can call it from Validate.
func ParseRestrictions(r *v1alpha1.CatalogRestrictions) (Restrictions, error) {
	var out Restrictions
	if r == nil {
		return out, nil
	}
	var err error
	if out.class, err = parseRules("class", r.ServiceClass, classProperties); err != nil {
		return Restrictions{}, err
	}
	if out.plan, err = parseRules("plan", r.ServicePlan, planProperties); err != nil {
		return Restrictions{}, err
	}
	return out, nil
}

func parseRules(what string, rules []string, props []string) ([]labels.Selector, error) {
	var out []labels.Selector
	for _, rule := range rules {
		if strings.TrimSpace(rule) == "" {
			continue
		}
		sel, err := labels.Parse(rule)
		if err != nil {
			return nil, fmt.Errorf("%s restriction %q is not valid: %v (write rules such as \"name in (small,medium)\" or \"free==true\")", what, rule, err)
		}
		reqs, _ := sel.Requirements()
		for _, req := range reqs {
			if !slices.Contains(props, req.Key()) {
				return nil, fmt.Errorf("%s restriction %q tests %q, which is not a %s property: use one of %s",
					what, rule, req.Key(), what, strings.Join(props, ", "))
			}
		}
		out = append(out, sel)
	}
	return out, nil
}

func matchAll(sels []labels.Selector, set labels.Set) bool {
	for _, s := range sels {
		if !s.Matches(set) {
			return false
		}
	}
	return true
}

func classSet(s *osb.Service) labels.Set {
	set := labels.Set{
		"name": s.Name, "spec.externalName": s.Name, "id": s.ID, "spec.externalID": s.ID,
		"bindable": strconv.FormatBool(s.Bindable),
	}
	// A set holds one value per key, so "tag" matches the first tag a rule names that
	// the service has; see allowClass.
	return set
}

func (r Restrictions) allowClass(s *osb.Service) bool {
	if len(r.class) == 0 {
		return true
	}
	set := classSet(s)
	if len(s.Tags) == 0 {
		return matchAll(r.class, set)
	}
	// A tag rule holds when any of the service's tags satisfies it.
	for _, tag := range s.Tags {
		set["tag"] = tag
		if matchAll(r.class, set) {
			return true
		}
	}
	return false
}

func (r Restrictions) allowPlan(s *osb.Service, p *osb.Plan) bool {
	if len(r.plan) == 0 {
		return true
	}
	free := strconv.FormatBool(p.IsFree())
	return matchAll(r.plan, labels.Set{
		"name": p.Name, "spec.externalName": p.Name, "id": p.ID, "spec.externalID": p.ID,
		"free": free, "spec.free": free, "bindable": strconv.FormatBool(p.EffectiveBindable(s)),
		"class": s.Name, "spec.serviceClass.name": s.Name,
	})
}

// Apply returns the part of cat the restrictions allow: services that match the class
// rules, each with the plans that match the plan rules; a service left without plans is
// left out. cat is not modified.
func (r Restrictions) Apply(cat *osb.CatalogResponse) *osb.CatalogResponse {
	out := &osb.CatalogResponse{}
	for i := range cat.Services {
		if s := r.Service(&cat.Services[i]); s != nil {
			out.Services = append(out.Services, *s)
		}
	}
	return out
}

// Service returns the part of service s the restrictions allow, or nil when they allow
// none of it (the class rules do not match, or no plan is left). s is not modified.
func (r Restrictions) Service(s *osb.Service) *osb.Service {
	if !r.allowClass(s) {
		return nil
	}
	if len(r.plan) == 0 {
		return s
	}
	var plans []osb.Plan
	for j := range s.Plans {
		if r.allowPlan(s, &s.Plans[j]) {
			plans = append(plans, s.Plans[j])
		}
	}
	if len(plans) == 0 {
		return nil
	}
	out := *s
	out.Plans = plans
	return &out
}
