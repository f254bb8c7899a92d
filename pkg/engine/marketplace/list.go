package marketplace

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Filter narrows List.
type Filter struct {
	// Broker is a broker's record name.
	Broker string
	// Class is a class as MatchClasses takes it.
	Class string
	// IncludeRemoved keeps classes and plans the broker no longer offers.
	IncludeRemoved bool
	// IgnoreAccess keeps classes and plans that access rules disable (for administrators'
	// views such as "get classes").
	IgnoreAccess bool
	// Selector is an additional label selector on the class records (the user's -l).
	Selector labels.Selector
	// AllNamespaces lists the class records of every namespace instead of those visible
	// from one; access rules apply as in each record's own namespace, so the classes of
	// cluster-scoped brokers appear once, under the catalog namespace, as the rules for
	// every namespace leave them.
	AllNamespaces bool
}

// Offering is a class and the plans of it that the namespace may see.
type Offering struct {
	Class *v1alpha1.ServiceClass
	Plans []*v1alpha1.ServicePlan
}

// List returns what namespace may see: the classes of cluster-scoped brokers and of the
// namespace's brokers, each with its visible plans, sorted by class name then broker
// (with f.AllNamespaces, those of every namespace, sorted by namespace first).
// Classes with no visible plan are left out. It makes one paginated LIST of class records
// per scope and one GET of the access rules (none with IgnoreAccess), all at once.
//
// Unreadable class records do not hide the others: List returns what it could read
// together with an error (see store.Records.List).
func List(ctx context.Context, st *store.Store, namespace string, f Filter, opts ...Option) ([]Offering, error) {
	cfg := newConfig(opts)
	sf := store.Filter{Broker: f.Broker, Class: f.Class, Selector: f.Selector}
	if b, n, ok := strings.Cut(f.Class, "/"); ok {
		sf.Class = n
		if sf.Broker == "" {
			sf.Broker = b
		}
	}
	list := func(sf store.Filter) ([]*v1alpha1.ServiceClass, error) {
		if f.AllNamespaces {
			classes, err := st.Classes().List(ctx, "", sf)
			sortClasses(classes)
			slices.SortStableFunc(classes, func(a, b *v1alpha1.ServiceClass) int { return cmp.Compare(a.Namespace, b.Namespace) })
			return classes, err
		}
		return listClasses(ctx, st, cfg, namespace, sf)
	}
	// The access rules are read together with the classes.
	loaded := ahead.Done(Rules{}, nil)
	if !f.IgnoreAccess {
		loaded = ahead.Start(ctx, func() (Rules, error) { return LoadRules(ctx, st, opts...) })
	}
	classes, listErr := list(sf)
	if f.Class != "" {
		// The label selects by external name; an id or record name needs the full list.
		if classes = MatchClasses(classes, f.Class); len(classes) == 0 && listErr == nil {
			sf.Class = ""
			classes, listErr = list(sf)
			classes = MatchClasses(classes, f.Class)
		}
	}
	if listErr != nil && len(classes) == 0 {
		return nil, listErr
	}
	rules, err := loaded.Wait()
	if err != nil {
		return nil, err
	}
	var out []Offering
	for _, c := range classes {
		if c.Status.RemovedFromBroker && !f.IncludeRemoved {
			continue
		}
		o := Offering{Class: c}
		for i := range c.Spec.Plans {
			p := &c.Spec.Plans[i]
			if !f.IncludeRemoved && c.PlanRemoved(p.ID) {
				continue
			}
			seenFrom := namespace
			if f.AllNamespaces {
				seenFrom = c.Namespace
			}
			if !f.IgnoreAccess && !rules.PlanVisible(seenFrom, c, p.ID) {
				continue
			}
			o.Plans = append(o.Plans, p)
		}
		if len(o.Plans) == 0 && len(c.Spec.Plans) > 0 {
			continue
		}
		out = append(out, o)
	}
	return out, listErr
}

// ListClasses returns the class records of both scopes visible from namespace, without
// applying removal or access rules: one paginated LIST per scope.
func ListClasses(ctx context.Context, st *store.Store, namespace string, f store.Filter, opts ...Option) ([]*v1alpha1.ServiceClass, error) {
	return listClasses(ctx, st, newConfig(opts), namespace, f)
}

func listClasses(ctx context.Context, st *store.Store, cfg config, namespace string, f store.Filter) ([]*v1alpha1.ServiceClass, error) {
	var all []*v1alpha1.ServiceClass
	var errs []error
	if namespace == cfg.catalogNamespace || namespace == "" {
		cs, err := st.Classes().List(ctx, cfg.catalogNamespace, f)
		all, errs = append(all, cs...), append(errs, err)
	} else {
		// The two lists go out together; their results are taken in this order.
		cf, nf := f, f
		cf.Scope, nf.Scope = v1alpha1.ScopeCluster, v1alpha1.ScopeNamespace
		own := ahead.Start(ctx, func() ([]*v1alpha1.ServiceClass, error) { return st.Classes().List(ctx, namespace, nf) })
		cs, err := st.Classes().List(ctx, cfg.catalogNamespace, cf)
		if store.IsForbidden(err) {
			// A user who may not read the catalog namespace still sees the namespace's
			// own brokers; the error says why the cluster's are missing.
			errs = append(errs, err)
		} else {
			all, errs = append(all, cs...), append(errs, err)
		}
		ns, err := own.Wait()
		all, errs = append(all, ns...), append(errs, err)
	}
	sortClasses(all)
	return all, errors.Join(errs...)
}

// sortClasses sorts classes by name, then broker, then namespace.
func sortClasses(all []*v1alpha1.ServiceClass) {
	slices.SortStableFunc(all, func(a, b *v1alpha1.ServiceClass) int {
		return cmp.Or(cmp.Compare(a.Spec.ExternalName, b.Spec.ExternalName),
			cmp.Compare(a.Spec.BrokerName, b.Spec.BrokerName), cmp.Compare(a.Namespace, b.Namespace))
	})
}
