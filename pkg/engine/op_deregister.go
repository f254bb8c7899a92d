package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// DeregisterRequest is what "kubectl catalog deregister" was asked for.
type DeregisterRequest struct {
	// Name names the broker.
	Name string
	// Scope is the broker's scope when both scopes have one of that name; "" looks in
	// both.
	Scope v1alpha1.Scope
	// Namespace is the user's namespace, where a namespace-scoped broker is looked for.
	Namespace string
	// Force deregisters even though instances of the broker's classes exist.
	Force bool
	// DryRun says what is written: a dry run deletes nothing (a server dry run has the
	// API server check the deletions).
	DryRun DryRun
	// Note is given the lines the operation says as it goes ("Deregistering broker ...",
	// the instances --force leaves behind): the verb prints them to standard error. Nil
	// drops them.
	Note func(string)
}

// DeregisterResult is what Deregister did.
type DeregisterResult struct {
	// Broker is the broker record deregistered, or that would be on a dry run.
	Broker *v1alpha1.Broker
	// Classes is how many class records were removed with it, or would be.
	Classes int
}

// maxInstancesNamed is how many of a broker's instances a refused deregister names.
const maxInstancesNamed = 10

// Deregister deletes a broker's record and its classes and plans on the user's command,
// and the finalizers of a namespace-scoped broker and of its credentials Secret (the
// Secret's only when no other broker uses it; the Secret itself stays). It is refused
// while instances of the broker's classes exist, unless Force, which leaves them behind.
// Nothing is sent to the broker.
func (e *Engine) Deregister(ctx context.Context, req DeregisterRequest) (*DeregisterResult, error) {
	sync, b, err := e.registered(ctx, req.Namespace, req.Name, req.Scope)
	if err != nil {
		return nil, err
	}
	note := Follow{Note: req.Note}.note
	if !req.DryRun.Enabled() {
		note("Deregistering broker %q (%s scope, namespace %q)...", b.Name, strings.ToLower(string(b.Spec.Scope)), b.Namespace)
	}
	if err := brokerInUse(ctx, e.cfg.Store, b, req.Force, note); err != nil {
		// A dry run says the same: the real command would be refused.
		return nil, err
	}
	if req.DryRun.Enabled() {
		return deregisterDryRun(ctx, e.cfg.Store, sync, req.DryRun, b)
	}
	n, err := sync.DeleteCatalog(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("cannot delete the classes of broker %q: %w; the broker stays registered, run the command again", b.Name, err)
	}
	if err := e.cfg.Store.Brokers().Delete(ctx, b.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
		return nil, fmt.Errorf("classes of broker %q deleted, but the broker record was not: %w; run the command again", b.Name, err)
	}
	// A namespace-scoped broker keeps its record and credentials Secret with finalizers
	// while instances need them: none does now, or force leaves them behind.
	if err := e.cfg.Store.ReleaseBroker(ctx, b); err != nil {
		return nil, fmt.Errorf("broker %q is marked deleted, but its finalizer could not be removed: %w; run the command again", b.Name, err)
	}
	return &DeregisterResult{Broker: b, Classes: n}, nil
}

// brokerInUse refuses to deregister broker b while instances of its classes exist, or
// when they cannot be listed, unless force; with force it notes the instances left
// behind.
func brokerInUse(ctx context.Context, st *store.Store, b *v1alpha1.Broker, force bool, note func(string, ...any)) error {
	insts, err := catalogsync.InstancesOf(ctx, st, b)
	if err != nil && !force {
		return fmt.Errorf("cannot check whether instances of broker %q exist: %w (use --force to deregister without checking)", b.Name, err)
	}
	if len(insts) == 0 {
		return nil
	}
	names := make([]string, 0, len(insts))
	for _, in := range insts {
		names = append(names, in.Namespace+"/"+in.Name)
	}
	list := listNames(names, maxInstancesNamed)
	if !force {
		return fmt.Errorf("broker %q still has %s: %s; deprovision them first (kubectl catalog deprovision NAME -n NAMESPACE), or deregister anyway with --force",
			b.Name, countNoun(len(insts), "instance", "instances"), list)
	}
	note("Warning: %s of broker %q are left behind (%s)", countNoun(len(insts), "instance", "instances"), b.Name, list)
	return nil
}

// deregisterDryRun counts the classes that would go with broker b and, for a server dry
// run, sends the deletions of its classes, plans and record to the API server as a dry
// run: nothing is stored.
func deregisterDryRun(ctx context.Context, st *store.Store, sync *catalogsync.Syncer, d DryRun, b *v1alpha1.Broker) (*DeregisterResult, error) {
	classes, err := st.Classes().List(ctx, b.Namespace, store.Filter{Broker: b.Name})
	if err != nil {
		return nil, fmt.Errorf("cannot list the classes of broker %q: %w", b.Name, err)
	}
	if d == DryRunServer {
		dry := store.WithDryRun(ctx)
		if _, err := sync.DeleteCatalog(dry, b); err != nil {
			return nil, fmt.Errorf("the classes of broker %q would not be deleted: %w", b.Name, err)
		}
		if err := st.Brokers().Delete(dry, b.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
			return nil, fmt.Errorf("broker %q would not be deregistered: %w", b.Name, err)
		}
	}
	return &DeregisterResult{Broker: b, Classes: len(classes)}, nil
}

// countNoun returns "1 class" or "3 classes".
func countNoun(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// listNames joins names, at most most of them, and says how many more there are.
func listNames(names []string, most int) string {
	list := strings.Join(names[:min(len(names), most)], ", ")
	if len(names) > most {
		list += fmt.Sprintf(" and %d more", len(names)-most)
	}
	return list
}
