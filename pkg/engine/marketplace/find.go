package marketplace

import (
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// The one way a user's class or plan argument names records, shared by every command
// that takes one (provision, marketplace, access, describe, get, migrate), so that a
// name that works in one works in all and the errors read the same.

// MatchClasses returns the classes among classes that name names. name is a class's
// external name, "BROKER/CLASS" (one broker's class of that external name or OSB id),
// a class record name ("BROKER.ID") or an OSB service id. External names win: an id or
// record name is looked at only when no external name matches. Several brokers may
// offer a class of one name, so several classes may match.
func MatchClasses(classes []*v1alpha1.ServiceClass, name string) []*v1alpha1.ServiceClass {
	brokerName, cname, qualified := strings.Cut(name, "/")
	if !qualified {
		cname = name
	}
	var byName, byID []*v1alpha1.ServiceClass
	for _, c := range classes {
		if qualified && c.Spec.BrokerName != brokerName {
			continue
		}
		switch {
		case c.Spec.ExternalName == cname:
			byName = append(byName, c)
		case c.Spec.ID == cname || c.Name == cname:
			byID = append(byID, c)
		}
	}
	if len(byName) > 0 {
		return byName
	}
	return byID
}

// FindClass returns the one class among classes that name names (see MatchClasses), as
// seen from namespace ("" for every namespace). It fails with an *Error: ReasonNotFound
// suggesting the closest external names among classes, or ReasonAmbiguous naming the
// BROKER/CLASS candidates.
func FindClass(classes []*v1alpha1.ServiceClass, name, namespace string) (*v1alpha1.ServiceClass, error) {
	matches := MatchClasses(classes, name)
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, ClassNotFound(name, namespace, classes)
	}
	return nil, AmbiguousClass(name, namespace, matches)
}

// ClassNotFound is the error for a class argument that names none of candidates; the
// suggestions are the closest of their external names.
func ClassNotFound(name, namespace string, candidates []*v1alpha1.ServiceClass) *Error {
	names := make([]string, 0, len(candidates))
	for _, c := range candidates {
		names = append(names, c.Spec.ExternalName)
	}
	typed := name
	if _, n, ok := strings.Cut(name, "/"); ok {
		typed = n
	}
	return &Error{Reason: ReasonNotFound, Kind: "class", Name: name, Namespace: namespace, Suggestions: Suggest(typed, names)}
}

// AmbiguousClass is the error for a class argument that names several brokers' classes.
func AmbiguousClass(name, namespace string, matches []*v1alpha1.ServiceClass) *Error {
	e := &Error{Reason: ReasonAmbiguous, Kind: "class", Name: name, Namespace: namespace}
	for _, c := range matches {
		e.Candidates = append(e.Candidates, c.Spec.BrokerName+"/"+c.Spec.ExternalName)
	}
	return e
}

// MatchPlan returns the plan of c that name names: its external name or OSB id.
func MatchPlan(c *v1alpha1.ServiceClass, name string) *v1alpha1.ServicePlan {
	if p := c.PlanByName(name); p != nil {
		return p
	}
	return c.PlanByID(name)
}

// FindPlan returns the plan of class c that name names (see MatchPlan), or an *Error of
// ReasonNotFound suggesting the closest of c's plans.
func FindPlan(c *v1alpha1.ServiceClass, name, namespace string) (*v1alpha1.ServicePlan, error) {
	if p := MatchPlan(c, name); p != nil {
		return p, nil
	}
	return nil, PlanNotFound(c, name, namespace, nil)
}

// PlanNotFound is the error for a plan argument that names no plan of class c;
// suggestions are the closest of c's plans that offered accepts (all when nil).
func PlanNotFound(c *v1alpha1.ServiceClass, name, namespace string, offered func(*v1alpha1.ServicePlan) bool) *Error {
	var names []string
	for i := range c.Spec.Plans {
		if p := &c.Spec.Plans[i]; offered == nil || offered(p) {
			names = append(names, p.ExternalName)
		}
	}
	return &Error{Reason: ReasonNotFound, Kind: "plan", Name: name, Class: c.Spec.ExternalName, Broker: c.Spec.BrokerName,
		Namespace: namespace, Suggestions: Suggest(name, names)}
}

// MatchPlanIn reports whether name names plan p of class c: the plan's external name or
// OSB id, or CLASS/PLAN with CLASS as MatchClasses takes it (so BROKER/CLASS/PLAN too).
func MatchPlanIn(c *v1alpha1.ServiceClass, p *v1alpha1.ServicePlan, name string) bool {
	if i := strings.LastIndex(name, "/"); i > 0 {
		if len(MatchClasses([]*v1alpha1.ServiceClass{c}, name[:i])) == 0 {
			return false
		}
		name = name[i+1:]
	}
	return name == p.ExternalName || name == p.ID
}

// PlanNotFoundAmong is the error for a plan argument that names no plan of classes;
// suggestions are the closest of their plans as CLASS/PLAN.
func PlanNotFoundAmong(name, namespace string, classes []*v1alpha1.ServiceClass) *Error {
	var names []string
	for _, c := range classes {
		for _, p := range c.Spec.Plans {
			names = append(names, c.Spec.ExternalName+"/"+p.ExternalName)
		}
	}
	e := &Error{Reason: ReasonNotFound, Kind: "plan", Name: name, Namespace: namespace, Suggestions: Suggest(name, names)}
	if len(classes) == 1 {
		e.Class, e.Broker = classes[0].Spec.ExternalName, classes[0].Spec.BrokerName
	}
	return e
}
