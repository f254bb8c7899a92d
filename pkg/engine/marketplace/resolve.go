package marketplace

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Resolution is a class and plan the namespace may provision.
type Resolution struct {
	// Class is the class record (with every plan; use Plan, not Class.Spec.Plans[0]).
	Class *v1alpha1.ServiceClass
	// Plan is the chosen plan, a pointer into Class.Spec.Plans; nil when Resolve was
	// given no plan name.
	Plan *v1alpha1.ServicePlan
	// Rules are the access rules the resolution was checked against.
	Rules Rules

	st *store.Store
}

// Schemas reads the JSON schemas of the resolved plan from its ServicePlanSchemas record
// (one GET). It returns nil, nil when the plan has no schema.
func (r *Resolution) Schemas(ctx context.Context) (*v1alpha1.PlanSchemas, error) {
	if r.Plan == nil {
		return nil, fmt.Errorf("class %q: no plan chosen, so no schemas to read", r.Class.Spec.ExternalName)
	}
	s, err := r.st.PlanSchemas().Get(ctx, r.Class.Namespace, r.Class.Name)
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the schemas of plan %q of class %q: %w", r.Plan.ExternalName, r.Class.Spec.ExternalName, err)
	}
	return s.ForPlan(r.Plan.ID), nil
}

// Resolve finds the class and plan a user named, as seen from namespace: classes of
// cluster-scoped brokers (in the catalog namespace, see InCatalogNamespace) and of the
// namespace's own brokers.
//
// className is a class's external name, "BROKER/CLASS" to pick one broker's class when
// several offer that name, a class record name ("BROKER.ID") or an OSB service id.
// planName is a plan's external name or OSB id; empty resolves the class only
// (Resolution.Plan is nil), for callers that then ask the user.
//
// Errors are *Error values: IsNotFound (with "did you mean" suggestions), IsAmbiguous,
// IsRemoved (the broker no longer offers it: it cannot be provisioned) and IsDisabled (an
// access rule hides it from the namespace); other errors come from the store.
//
// Cost: one or two LISTs of class records (label-selected by name) per scope and one GET
// of the access rules, the first LISTs and the GET all at once; schemas are read only by
// Resolution.Schemas.
func Resolve(ctx context.Context, st *store.Store, namespace, className, planName string, opts ...Option) (*Resolution, error) {
	cfg := newConfig(opts)
	brokerName, name := "", className
	if b, n, ok := strings.Cut(className, "/"); ok {
		brokerName, name = b, n
	}
	// The access rules are read together with the classes, and looked at after them.
	loaded := ahead.Start(ctx, func() (Rules, error) { return LoadRules(ctx, st, opts...) })
	matches, err := listClasses(ctx, st, cfg, namespace, store.Filter{Broker: brokerName, Class: name})
	if err != nil && len(matches) == 0 {
		return nil, err
	}
	// The label selects by external name; MatchClasses keeps the exact matches.
	matches = MatchClasses(matches, className)
	var all []*v1alpha1.ServiceClass
	if len(matches) == 0 {
		// Not an external name: an id or record name, or a typo. One unfiltered list
		// serves both the lookup and the suggestions.
		all, err = listClasses(ctx, st, cfg, namespace, store.Filter{Broker: brokerName})
		if err != nil && len(all) == 0 {
			return nil, err
		}
		matches = MatchClasses(all, className)
	}
	rules, err := loaded.Wait()
	if err != nil {
		return nil, err
	}

	var usable, removed, disabled []*v1alpha1.ServiceClass
	for _, c := range matches {
		switch {
		case c.Status.RemovedFromBroker:
			removed = append(removed, c)
		case !rules.ClassVisible(namespace, c):
			disabled = append(disabled, c)
		default:
			usable = append(usable, c)
		}
	}
	cerr := &Error{Kind: "class", Name: className, Namespace: namespace}
	switch {
	case len(usable) > 1:
		return nil, AmbiguousClass(className, namespace, usable)
	case len(usable) == 0 && len(disabled) > 0:
		cerr.Reason, cerr.Broker = ReasonDisabled, disabled[0].Spec.BrokerName
		return nil, cerr
	case len(usable) == 0 && len(removed) > 0:
		cerr.Reason, cerr.Broker = ReasonRemoved, removed[0].Spec.BrokerName
		return nil, cerr
	case len(usable) == 0:
		var offered []*v1alpha1.ServiceClass
		for _, c := range all {
			if !c.Status.RemovedFromBroker && rules.ClassVisible(namespace, c) {
				offered = append(offered, c)
			}
		}
		return nil, ClassNotFound(className, namespace, offered)
	}

	class := usable[0]
	res := &Resolution{Class: class, Rules: rules, st: st}
	if planName == "" {
		return res, nil
	}
	plan := MatchPlan(class, planName)
	if plan == nil {
		return nil, PlanNotFound(class, planName, namespace, func(p *v1alpha1.ServicePlan) bool {
			return !class.PlanRemoved(p.ID) && rules.PlanVisible(namespace, class, p.ID)
		})
	}
	perr := &Error{Kind: "plan", Name: planName, Class: class.Spec.ExternalName, Broker: class.Spec.BrokerName, Namespace: namespace}
	switch {
	case class.PlanRemoved(plan.ID):
		perr.Reason = ReasonRemoved
		return nil, perr
	case !rules.PlanVisible(namespace, class, plan.ID):
		perr.Reason = ReasonDisabled
		return nil, perr
	}
	res.Plan = plan
	return res, nil
}
