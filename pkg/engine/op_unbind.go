package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// UnbindRequest is what unbind is asked for: the bindings named in Bindings, or, with
// Instance, every binding of the instance (All) or those of its bindings named in Names.
type UnbindRequest struct {
	Namespace string
	Bindings  []string
	Instance  string
	All       bool
	Names     []string
	// Abandon drops the records, Secrets and projections without calling the broker.
	Abandon bool
	DryRun  DryRun
	Follow  Follow
	// Confirm is asked, once the bindings are known and before anything is written,
	// whether to go on; false stops there, with Confirm's error. Nil goes on.
	Confirm func(bindings []*v1alpha1.ServiceBinding) (bool, error)
	// Unbound is told of each binding as it is done with: abandoned, gone, or marked for
	// deletion and on its way at the broker. An error it returns counts as that
	// binding's failure. Nil tells no one.
	Unbound func(UnbindOutcome) error
}

// UnbindOutcome is where one binding stands once unbind is done with it.
type UnbindOutcome struct {
	// Binding is the binding as it was selected, before anything was written.
	Binding *v1alpha1.ServiceBinding
	// Abandoned: the record went without a call to the broker.
	Abandoned bool
	// Followed is where the drive left the binding (zero when abandoned).
	Followed Result
}

// UnbindResult is what unbind did, for the verb to print.
type UnbindResult struct {
	// Bindings are the bindings selected, as read before anything was written; none
	// when the instance has none.
	Bindings []*v1alpha1.ServiceBinding
	// Confirmed says that Confirm let the unbind go on (false for a dry run).
	Confirmed bool
}

// Unbind unbinds bindings, as "kubectl catalog unbind" does: the bindings are read,
// confirmed, all marked for deletion first (so a broker that is down or refuses leaves
// them pending, visibly), and then driven one after the other as req.Follow says. With
// req.Abandon the records go without calling the broker. A dry run writes nothing and
// calls no broker (DryRunServer sends the deletions to the API server as dry runs). One
// binding's failure stops the unbind; with several, the others are still driven and the
// failures are counted in the error, except a timeout or an interruption, which stop it.
func (e *Engine) Unbind(ctx context.Context, req UnbindRequest) (UnbindResult, error) {
	if !req.DryRun.Enabled() && !req.Abandon {
		e.readAhead(ctx, "", false)
	}
	bindings, err := bindingVerbs{e}.unbindSelected(ctx, req)
	if err != nil {
		return UnbindResult{}, err
	}
	res := UnbindResult{Bindings: bindings}
	if len(bindings) == 0 {
		return res, nil
	}
	if req.DryRun.Enabled() {
		return res, bindingVerbs{e}.unbindDryRun(ctx, req, bindings)
	}
	if req.Confirm != nil {
		if ok, err := req.Confirm(bindings); !ok {
			return res, err
		}
	}
	res.Confirmed = true
	if req.Abandon {
		return res, bindingVerbs{e}.abandonBindings(ctx, req, bindings)
	}
	// The instance of the first binding the broker may hold goes out with the deletion
	// marks, its broker after it and the broker's credentials Secret after that, ahead of
	// the unbind's call (instanceSecretAhead).
	for _, b := range bindings {
		if len(bindingIDsAtBroker(b)) > 0 {
			ns, name := b.InstanceRef()
			e.instanceSecretAhead(ctx, ns, name)
			break
		}
	}
	for _, b := range bindings {
		if b.DeletionTimestamp != nil {
			continue
		}
		if err := e.cfg.Store.Bindings().Delete(ctx, req.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
			return res, fmt.Errorf("marking binding %q for deletion: %w", b.Name, err)
		}
	}
	return res, bindingVerbs{e}.driveUnbinds(ctx, req, bindings)
}

// unbindSelected reads the bindings req names.
func (e bindingVerbs) unbindSelected(ctx context.Context, req UnbindRequest) ([]*v1alpha1.ServiceBinding, error) {
	if req.Instance == "" {
		return e.bindingsNamed(ctx, req.Namespace, req.Bindings)
	}
	if _, err := e.cfg.Store.Instances().Get(ctx, req.Namespace, req.Instance); store.IsNotFound(err) {
		// The bindings of a gone instance can still be listed (and abandoned).
		req.Follow.note("Note: instance %q does not exist in namespace %q; looking for its bindings anyway.", req.Instance, req.Namespace)
	} else if err != nil {
		return nil, err
	}
	all, err := e.cfg.Store.Bindings().List(ctx, req.Namespace, store.Filter{Instance: req.Instance})
	if err != nil {
		return nil, err
	}
	if req.All {
		return all, nil
	}
	var out []*v1alpha1.ServiceBinding
	for _, name := range req.Names {
		var found *v1alpha1.ServiceBinding
		for _, b := range all {
			if b.Name == name {
				found = b
			}
		}
		if found == nil {
			return nil, fmt.Errorf(`instance %q has no binding %q in namespace %q: list its bindings with "kubectl catalog get bindings --instance %s"`, req.Instance, name, req.Namespace, req.Instance)
		}
		if !containsBinding(out, name) {
			out = append(out, found)
		}
	}
	return out, nil
}

// bindingsNamed reads the bindings of namespace named in names, each once.
func (e bindingVerbs) bindingsNamed(ctx context.Context, namespace string, names []string) ([]*v1alpha1.ServiceBinding, error) {
	var out []*v1alpha1.ServiceBinding
	for _, name := range names {
		b, err := e.cfg.Store.Bindings().Get(ctx, namespace, name)
		if store.IsNotFound(err) {
			hint := `list the bindings with "kubectl catalog get bindings"`
			if _, ierr := e.cfg.Store.Instances().Get(ctx, namespace, name); ierr == nil {
				hint = fmt.Sprintf(`%q is an instance: unbind all its bindings with "kubectl catalog unbind %s --all"`, name, name)
			}
			return nil, fmt.Errorf("binding %q not found in namespace %q: %s", name, namespace, hint)
		}
		if err != nil {
			return nil, err
		}
		if !containsBinding(out, b.Name) {
			out = append(out, b)
		}
	}
	return out, nil
}

func containsBinding(list []*v1alpha1.ServiceBinding, name string) bool {
	for _, b := range list {
		if b.Name == name {
			return true
		}
	}
	return false
}

// unbindDryRun sends, for DryRunServer, the deletions of the bindings to the API server
// as dry runs, so that validation and admission (the trust policy included) see them.
func (e bindingVerbs) unbindDryRun(ctx context.Context, req UnbindRequest, bindings []*v1alpha1.ServiceBinding) error {
	if req.DryRun != DryRunServer {
		return nil
	}
	dry := store.WithDryRun(ctx)
	for _, b := range bindings {
		if b.DeletionTimestamp != nil {
			continue
		}
		if err := e.cfg.Store.Bindings().Delete(dry, req.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
			return fmt.Errorf("binding %q would not be unbound: %w", b.Name, err)
		}
	}
	return nil
}

// abandonBindings drops the bindings' records, Secrets and projections without calling
// the broker.
func (e bindingVerbs) abandonBindings(ctx context.Context, req UnbindRequest, bindings []*v1alpha1.ServiceBinding) error {
	for _, b := range bindings {
		if err := e.AbandonBinding(ctx, b); err != nil {
			return fmt.Errorf("abandoning binding %q: %w", b.Name, err)
		}
		if err := req.unbound(UnbindOutcome{Binding: b, Abandoned: true}); err != nil {
			return err
		}
	}
	return nil
}

// driveUnbinds drives the bindings marked for deletion, one after the other.
func (e bindingVerbs) driveUnbinds(ctx context.Context, req UnbindRequest, bindings []*v1alpha1.ServiceBinding) error {
	var failed []string
	var first error
	for _, b := range bindings {
		req.Follow.note("Unbinding %q...", b.Name)
		// Its instance and Secrets are read now, after its deletion mark, together with
		// the drive's first read of it.
		r, err := e.FollowBinding(withUnbindReadsAhead(e.Engine, ctx, b), req.Namespace, b.Name, "unbind", nil, req.Follow)
		if err == nil {
			err = unboundError(req.Namespace, b, r)
		}
		if err == nil {
			err = req.unbound(UnbindOutcome{Binding: b, Followed: r})
		}
		if err == nil {
			continue
		}
		var timeout *TimeoutError
		if errors.As(err, &timeout) || ctx.Err() != nil || len(bindings) == 1 {
			return err
		}
		req.Follow.note("error: %v", err)
		failed = append(failed, b.Name)
		if first == nil {
			first = err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d bindings are not unbound yet (%s); the first: %w", len(failed), len(bindings), strings.Join(failed, ", "), first)
	}
	return nil
}

func (req UnbindRequest) unbound(o UnbindOutcome) error {
	if req.Unbound == nil {
		return nil
	}
	return req.Unbound(o)
}

// unboundError says why a binding that was driven is not unbound: it cannot be, or its
// unbind failed and waits for a retry. nil when it is gone or on its way.
func unboundError(namespace string, b *v1alpha1.ServiceBinding, r Result) error {
	describe := fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, b.Name, namespace)
	switch r.State {
	case StateDeleted:
		return nil
	case StateNeedsUser:
		return fmt.Errorf("binding %q cannot be unbound: %s; see %s", b.Name, r.Message, describe)
	}
	cur := r.Binding
	if cur != nil && cur.Status.Retry != nil && (cur.Status.InFlight == nil || !cur.Status.InFlight.Async) {
		reason := r.Message
		if cur.Status.Retry.LastError != "" {
			reason = cur.Status.Retry.LastError
		}
		return fmt.Errorf("binding %q is marked for deletion but not unbound yet (%s): %s; \"kubectl catalog reconcile\" (or \"%s\") finishes it; see %s",
			b.Name, cur.Status.Retry.Reason, reason, WaitCommand(v1alpha1.KindServiceBinding, namespace, b.Name, WaitForDelete), describe)
	}
	return nil
}
