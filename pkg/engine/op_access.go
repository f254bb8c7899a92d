package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// AccessRequest is what "access enable" and "access disable" ask for: a rule enabling or
// disabling a class, or one plan of it, in one namespace or in all.
type AccessRequest struct {
	// Target names the class or plan: CLASS, CLASS/PLAN, BROKER/CLASS/PLAN, or the
	// class's record name (BROKER/CLASS).
	Target  string
	Enabled bool
	// Namespace is the rule's namespace; "" for every namespace.
	Namespace string
	// ViewNamespace is the user's namespace, whose namespace-scoped brokers' classes
	// Target may name too.
	ViewNamespace string
	DryRun        DryRun
	// Record asks for the access rules record as written, in AccessResult.Access.
	Record bool
	// Note is given the line said before the write ("Disabling class "redis" (broker
	// "acme") in every namespace..."); nil drops it.
	Note func(string)
}

// AccessResult is what SetAccess did.
type AccessResult struct {
	// What names the class or plan of the rule: `class "redis"`, `plan "small" of class
	// "redis"`.
	What string
	// Where names the rule's namespace: `namespace "dev"`, `every namespace`.
	Where string
	// Changed says the rules changed (false: the rule was there already).
	Changed bool
	// Access is the access rules record as written (when Record is asked for), or as the
	// dry run would leave it.
	Access *v1alpha1.CatalogAccess
	// Operation is what the dry run would do to the record: "created", "configured" or
	// "unchanged".
	Operation string
}

// SetAccess records an access rule in the catalog's access rules record (in the catalog
// namespace, so only who may write there can). The class (and plan) is found whatever
// the rules say: the rule may be what makes it visible again. A dry run writes nothing
// (DryRunServer sends the write to the API server as a dry run).
func (e *Engine) SetAccess(ctx context.Context, req AccessRequest) (AccessResult, error) {
	c, plan, err := e.accessTarget(ctx, req.Target, req.ViewNamespace)
	if err != nil {
		return AccessResult{}, err
	}
	rule := v1alpha1.AccessRule{Namespace: req.Namespace, BrokerName: c.Spec.BrokerName, ClassID: c.Spec.ID,
		ClassExternalName: c.Spec.ExternalName, Enabled: req.Enabled}
	res := AccessResult{What: fmt.Sprintf("class %q", c.Spec.ExternalName), Where: "every namespace"}
	if plan != nil {
		rule.PlanID, rule.PlanExternalName = plan.ID, plan.ExternalName
		res.What = fmt.Sprintf("plan %q of class %q", plan.ExternalName, c.Spec.ExternalName)
	}
	if req.Namespace != "" {
		res.Where = fmt.Sprintf("namespace %q", req.Namespace)
	}
	if req.DryRun.Enabled() {
		res.Access, res.Operation, err = e.dryRunAccess(ctx, req.DryRun, rule)
		res.Changed = res.Operation != "unchanged"
		return res, err
	}
	verb := "Disabling"
	if req.Enabled {
		verb = "Enabling"
	}
	if req.Note != nil {
		req.Note(fmt.Sprintf("%s %s (broker %q) in %s...", verb, res.What, c.Spec.BrokerName, res.Where))
	}
	res.Changed, err = marketplace.SetRule(ctx, e.cfg.Store, rule, marketplace.InCatalogNamespace(e.cfg.CatalogNamespace))
	if err != nil || !req.Record {
		return res, err
	}
	res.Access, err = e.cfg.Store.Access().Get(ctx, e.cfg.CatalogNamespace, v1alpha1.CatalogAccessName)
	return res, err
}

// accessTarget finds the class (and plan) target names, whatever access rules say.
func (e *Engine) accessTarget(ctx context.Context, target, viewNamespace string) (*v1alpha1.ServiceClass, *v1alpha1.ServicePlan, error) {
	parts := strings.Split(target, "/")
	var brokerName, className, planName string
	switch len(parts) {
	case 1:
		className = parts[0]
	case 2:
		className, planName = parts[0], parts[1]
	case 3:
		brokerName, className, planName = parts[0], parts[0]+"/"+parts[1], parts[2]
	}
	classes, err := marketplace.ListClasses(ctx, e.cfg.Store, viewNamespace, store.Filter{Broker: brokerName},
		marketplace.InCatalogNamespace(e.cfg.CatalogNamespace))
	if err != nil && len(classes) == 0 {
		return nil, nil, err
	}
	// "BROKER/CLASS" without a plan, when CLASS/PLAN names nothing.
	if len(parts) == 2 && len(marketplace.MatchClasses(classes, className)) == 0 && len(marketplace.MatchClasses(classes, target)) > 0 {
		className, planName = target, ""
	}
	c, err := marketplace.FindClass(classes, className, viewNamespace)
	if err != nil || planName == "" {
		return c, nil, err
	}
	p, err := marketplace.FindPlan(c, planName, viewNamespace)
	if err != nil {
		return nil, nil, err
	}
	return c, p, nil
}

// dryRunAccess is the access rules record as rule would leave it, and what would be done
// to it; with DryRunServer the write is sent to the API server as a dry run.
func (e *Engine) dryRunAccess(ctx context.Context, dry DryRun, rule v1alpha1.AccessRule) (*v1alpha1.CatalogAccess, string, error) {
	a, err := e.cfg.Store.Access().Get(ctx, e.cfg.CatalogNamespace, v1alpha1.CatalogAccessName)
	exists := err == nil
	switch {
	case store.IsNotFound(err):
		a = &v1alpha1.CatalogAccess{}
		a.Namespace, a.Name = e.cfg.CatalogNamespace, v1alpha1.CatalogAccessName
	case err != nil:
		return nil, "", err
	}
	operation := "configured"
	if !marketplace.ApplyRule(a, rule) {
		operation = "unchanged"
	} else if !exists {
		operation = "created"
	}
	if dry != DryRunServer || operation == "unchanged" {
		return a, operation, nil
	}
	sent := store.WithDryRun(ctx)
	if exists {
		a, err = e.cfg.Store.Access().Update(sent, a)
	} else {
		a, err = e.cfg.Store.Access().Create(sent, a)
	}
	if err != nil {
		return nil, "", fmt.Errorf("cannot record the access rule: %w", err)
	}
	return a, operation, nil
}
