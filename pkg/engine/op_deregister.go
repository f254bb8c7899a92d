package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
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
	// A provision that started after that look would be made at the broker and then be
	// an instance nobody can deprovision (its broker gone): the broker is marked first,
	// which every new provision, update and bind checks before its call, and only then
	// are its instances looked for again.
	marked, err := markDeregistering(ctx, e.cfg.Store, b, e.now())
	if err != nil {
		return nil, fmt.Errorf("cannot mark broker %q as being deregistered: %w; nothing was deleted, run the command again", b.Name, err)
	}
	b = marked
	e.hook(ctx, HookDeregisterMarked, nil)
	if !req.Force {
		if err := brokerInUse(ctx, e.cfg.Store, b, false, note); err != nil {
			if _, uerr := unmarkDeregistering(ctx, e.cfg.Store, b); uerr != nil {
				return nil, fmt.Errorf("%w; and the mark that refuses new provisions, updates and bindings through it could not be removed (%v): run the command again once they are deprovisioned, or remove annotation %s from the broker's ConfigMap to keep it", err, uerr, store.AnnotationDeregistering)
			}
			return nil, err
		}
	}
	e.hook(ctx, HookDeregisterChecked, nil)
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

// Hook points of Deregister (Config.Hook is called with no operation).
const (
	// HookDeregisterMarked: the broker is marked as being deregistered, its instances are
	// not looked for again yet.
	HookDeregisterMarked HookPoint = "deregister-marked"
	// HookDeregisterChecked: the broker is marked and has no instance (or Force), nothing
	// is deleted yet.
	HookDeregisterChecked HookPoint = "deregister-checked"
)

// markDeregistering marks broker b as being deregistered (store.AnnotationDeregistering,
// at now), a change right on any version of the record. It returns the record as stored.
func markDeregistering(ctx context.Context, st *store.Store, b *v1alpha1.Broker, now time.Time) (*v1alpha1.Broker, error) {
	return st.Brokers().UpdateWithRetry(ctx, b.Namespace, b.Name, func(cur *v1alpha1.Broker) error {
		if cur.UID != b.UID {
			return fmt.Errorf("broker %q was deleted and created again meanwhile", b.Name)
		}
		if _, ok := cur.Annotations[store.AnnotationDeregistering]; ok {
			return nil
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[store.AnnotationDeregistering] = now.UTC().Format(time.RFC3339)
		return nil
	})
}

// unmarkDeregistering removes the mark of markDeregistering from broker b.
func unmarkDeregistering(ctx context.Context, st *store.Store, b *v1alpha1.Broker) (*v1alpha1.Broker, error) {
	return st.Brokers().UpdateWithRetry(ctx, b.Namespace, b.Name, func(cur *v1alpha1.Broker) error {
		if cur.UID == b.UID {
			delete(cur.Annotations, store.AnnotationDeregistering)
		}
		return nil
	})
}

// brokerClosed is why nothing new may be sent to broker b: it is being deregistered
// (marked by Deregister); nil when it is open. Re-sends, polls, deprovisions and unbinds
// are not new: they finish what the broker may hold. (A provision through a broker being
// deleted is refused by the provision step.)
func brokerClosed(b *v1alpha1.Broker) error {
	if b == nil {
		return nil
	}
	if at, ok := b.Annotations[store.AnnotationDeregistering]; ok {
		return fmt.Errorf("broker %q is being deregistered (marked at %s): no new instance, update or binding is sent to it; an interrupted %s leaves the mark: run it again to finish, or remove annotation %s from the broker's ConfigMap in namespace %q to keep the broker",
			b.Name, at, deregisterCommand(b), store.AnnotationDeregistering, b.Namespace)
	}
	return nil
}

// deregisterCommand is the deregister command line of broker b, quoted.
func deregisterCommand(b *v1alpha1.Broker) string {
	if b.Spec.Scope == v1alpha1.ScopeNamespace {
		return hint.Quoted(b.Namespace, "deregister", b.Name, "--scope", "namespace")
	}
	return hint.Quoted("", "deregister", b.Name, "--scope", "cluster")
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
