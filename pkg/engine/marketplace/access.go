package marketplace

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Rules are the access rules in force. The zero value enables everything.
type Rules struct {
	rules []v1alpha1.AccessRule
}

// NewRules returns rules from a CatalogAccess record's rules.
func NewRules(rules []v1alpha1.AccessRule) Rules { return Rules{rules: rules} }

// All returns the rules.
func (r Rules) All() []v1alpha1.AccessRule { return slices.Clone(r.rules) }

// LoadRules reads the access rules (one GET of the CatalogAccess record in the catalog
// namespace). No record means no rules: everything is visible.
func LoadRules(ctx context.Context, st *store.Store, opts ...Option) (Rules, error) {
	cfg := newConfig(opts)
	a, err := st.Access().Get(ctx, cfg.catalogNamespace, v1alpha1.CatalogAccessName)
	if store.IsNotFound(err) {
		return Rules{}, nil
	}
	if err != nil {
		return Rules{}, fmt.Errorf("cannot read the catalog's access rules: %w", err)
	}
	return Rules{rules: a.Spec.Rules}, nil
}

// PlanVisible reports whether the plan planID of class may be seen and provisioned in
// namespace. The most specific rule decides, in this order: the namespace's rule for the
// plan, the namespace's rule for the class, the every-namespace rule for the plan, the
// every-namespace rule for the class. Without a rule the plan is visible.
func (r Rules) PlanVisible(namespace string, class *v1alpha1.ServiceClass, planID string) bool {
	best := 0
	decision := true
	for _, rule := range r.rules {
		if rule.BrokerName != class.Spec.BrokerName || rule.ClassID != class.Spec.ID {
			continue
		}
		if rule.PlanID != "" && rule.PlanID != planID {
			continue
		}
		if rule.Namespace != "" && rule.Namespace != namespace {
			continue
		}
		rank := 1
		if rule.PlanID != "" {
			rank++
		}
		if rule.Namespace != "" {
			rank += 2
		}
		if rank > best {
			best, decision = rank, rule.Enabled
		}
	}
	return decision
}

// ClassVisible reports whether any plan of class is visible in namespace (or, for a class
// without plans, whether the class is).
func (r Rules) ClassVisible(namespace string, class *v1alpha1.ServiceClass) bool {
	if len(r.rules) == 0 {
		return true
	}
	if len(class.Spec.Plans) == 0 {
		return r.PlanVisible(namespace, class, "")
	}
	for i := range class.Spec.Plans {
		if r.PlanVisible(namespace, class, class.Spec.Plans[i].ID) {
			return true
		}
	}
	return false
}

func sameTarget(a, b v1alpha1.AccessRule) bool {
	return a.Namespace == b.Namespace && a.BrokerName == b.BrokerName && a.ClassID == b.ClassID && a.PlanID == b.PlanID
}

// ApplyRule puts rule into a (in memory), replacing any rule for the same namespace,
// class and plan, and reports whether anything changed: what SetRule writes.
func ApplyRule(a *v1alpha1.CatalogAccess, rule v1alpha1.AccessRule) bool {
	for i, r := range a.Spec.Rules {
		if sameTarget(r, rule) {
			if r == rule {
				return false
			}
			a.Spec.Rules[i] = rule
			return true
		}
	}
	a.Spec.Rules = append(a.Spec.Rules, rule)
	slices.SortFunc(a.Spec.Rules, func(x, y v1alpha1.AccessRule) int {
		return strings.Compare(ruleKey(x), ruleKey(y))
	})
	return true
}

// SetRule records rule, replacing any rule for the same namespace, class and plan, and
// reports whether anything changed. It creates the CatalogAccess record when needed.
func SetRule(ctx context.Context, st *store.Store, rule v1alpha1.AccessRule, opts ...Option) (bool, error) {
	cfg := newConfig(opts)
	changed := false
	mutate := func(a *v1alpha1.CatalogAccess) error {
		if ApplyRule(a, rule) {
			changed = true
		}
		return nil
	}
	_, err := st.Access().UpdateWithRetry(ctx, cfg.catalogNamespace, v1alpha1.CatalogAccessName, mutate)
	if store.IsNotFound(err) {
		a := &v1alpha1.CatalogAccess{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.catalogNamespace, Name: v1alpha1.CatalogAccessName}}
		changed = false
		if err := mutate(a); err != nil {
			return false, err
		}
		if _, err = st.Access().Create(ctx, a); store.IsAlreadyExists(err) {
			return SetRule(ctx, st, rule, opts...)
		}
		if err != nil {
			return false, fmt.Errorf("cannot record the access rule: %w", err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot record the access rule: %w", err)
	}
	return changed, nil
}

func ruleKey(r v1alpha1.AccessRule) string {
	return r.Namespace + "\x00" + r.BrokerName + "\x00" + r.ClassExternalName + "\x00" + r.ClassID + "\x00" + r.PlanExternalName + "\x00" + r.PlanID
}
