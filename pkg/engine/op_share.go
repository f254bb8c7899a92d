package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// ShareRequest is what "share" asks for: let namespace To bind to instance Name of
// Namespace.
type ShareRequest struct {
	Namespace, Name string
	To              string
	DryRun          DryRun
	// Vouch asks the user before the share makes her the author of what another person
	// wrote into the instance (see Voucher).
	Vouch Voucher
}

// ShareResult is what a share did.
type ShareResult struct {
	// Instance is the record as written, or as the dry run would leave it.
	Instance *v1alpha1.ServiceInstance
	// AlreadyShared says the instance was shared with To already: nothing was written.
	AlreadyShared bool
	// NamespaceUnchecked says the user may not read namespace To, so whether it exists
	// was not checked. It is set even when the share then fails.
	NamespaceUnchecked bool
}

// Share adds To to the instance's grant (spec.sharedWith), written as the user's intent:
// the grant counts only on the authority of whoever may write the instance's record.
// It refuses the instance's own namespace, an instance being deprovisioned, a namespace
// the instance's allowed namespaces leave out and one that does not exist. A dry run
// writes nothing (DryRunServer sends the write to the API server as a dry run).
func (e *Engine) Share(ctx context.Context, req ShareRequest) (ShareResult, error) {
	if req.To == req.Namespace {
		return ShareResult{}, inputErrorf("instance %q is in namespace %q already: bindings of its own namespace need no grant; give another namespace to --to-namespace", req.Name, req.Namespace)
	}
	inst, err := e.sharedInstance(ctx, req.Namespace, req.Name)
	if err != nil {
		return ShareResult{}, err
	}
	if inst.DeletionTimestamp != nil {
		return ShareResult{}, fmt.Errorf("instance %q is being deprovisioned and cannot be shared", req.Name)
	}
	if slices.Contains(inst.Spec.SharedWith, req.To) {
		return ShareResult{Instance: inst, AlreadyShared: true}, nil
	}
	if allowed := inst.Spec.AllowedNamespaces; len(allowed) > 0 && !slices.Contains(allowed, req.To) {
		return ShareResult{}, fmt.Errorf("instance %q allows bindings only from namespaces %s, so sharing it with %q would let nobody there bind: add it first with %s",
			req.Name, strings.Join(allowed, ", "), req.To, hint.Quoted(req.Namespace, "update", req.Name, "--allowed-namespaces", strings.Join(allowed, ",")+","+req.To))
	}
	var res ShareResult
	shown, err := e.vouchBeforeWrite(ctx, inst, "instance", req.DryRun, req.Vouch)
	if err != nil {
		return res, err
	}
	switch _, err := e.cfg.Store.GetNamespace(ctx, req.To); {
	case apierrors.IsNotFound(err):
		return res, fmt.Errorf("namespace %q does not exist: create it first, or check the name given to --to-namespace; instance %q was not shared", req.To, req.Name)
	case apierrors.IsForbidden(err):
		res.NamespaceUnchecked = true
	case err != nil:
		return res, err
	}
	res.Instance, err = e.changeGrant(ctx, req.DryRun, inst, shown, func(x *v1alpha1.ServiceInstance) {
		if !slices.Contains(x.Spec.SharedWith, req.To) {
			x.Spec.SharedWith = append(x.Spec.SharedWith, req.To)
			slices.Sort(x.Spec.SharedWith)
		}
		rememberGrants(x)
	})
	return res, err
}

// UnshareRequest is what "unshare" asks for: namespace From may no longer bind to
// instance Name of Namespace.
type UnshareRequest struct {
	Namespace, Name string
	From            string
	DryRun          DryRun
	// Confirm is given what the unshare removes, before anything is written (a dry run
	// included): false stops it, nothing changed. Nil goes on.
	Confirm func(Unsharing) (bool, error)
	// Vouch asks the user before the unshare makes her the author of what another
	// person wrote into the instance (see Voucher).
	Vouch Voucher
}

// Unsharing is what an unshare removes.
type Unsharing struct {
	// Instance is the instance as read before anything was written.
	Instance *v1alpha1.ServiceInstance
	// Bindings are the names of From's bindings of the instance, removed with the grant.
	Bindings []string
	// Unseen says the user may not list From's bindings: any there is removed too.
	Unseen bool
}

// UnshareResult is what an unshare did.
type UnshareResult struct {
	Unsharing
	// Declined says that Confirm said no: nothing was changed.
	Declined bool
	// Record is the instance as written, or as the dry run would leave it.
	Record *v1alpha1.ServiceInstance
	// Withdrawn says the grant is withdrawn (set even when marking the bindings then
	// failed).
	Withdrawn bool
	// Revoked are the bindings marked for deletion, as NAMESPACE/NAME.
	Revoked []string
	// LeftToReconcile says the user may not change From's bindings: reconcile removes
	// them.
	LeftToReconcile bool
}

// Unshare withdraws From's grant, then marks From's bindings of the instance for
// deletion where the user may (the instance's next reconcile step marks the others):
// each is then unbound like any binding being deleted. A dry run writes nothing and
// touches no binding.
func (e *Engine) Unshare(ctx context.Context, req UnshareRequest) (UnshareResult, error) {
	inst, err := e.sharedInstance(ctx, req.Namespace, req.Name)
	if err != nil {
		return UnshareResult{}, err
	}
	if !slices.Contains(inst.Spec.SharedWith, req.From) {
		return UnshareResult{}, fmt.Errorf("instance %q is not shared with namespace %q (shared with: %s); nothing was changed", req.Name, req.From, namespacesOrNone(inst.Spec.SharedWith))
	}
	consumers, unseen, err := e.Consumers(ctx, inst, req.From)
	if err != nil {
		return UnshareResult{}, err
	}
	res := UnshareResult{Unsharing: Unsharing{Instance: inst, Unseen: slices.Contains(unseen, req.From)}}
	shown, err := e.vouchBeforeWrite(ctx, inst, "instance", req.DryRun, req.Vouch)
	if err != nil {
		return res, err
	}
	for _, b := range consumers {
		if b.Namespace == req.From {
			res.Bindings = append(res.Bindings, b.Name)
		}
	}
	if req.Confirm != nil {
		ok, err := req.Confirm(res.Unsharing)
		if !ok {
			res.Declined = true
			return res, err
		}
	}
	withdraw := func(x *v1alpha1.ServiceInstance) { x.Spec.SharedWith = withdrawn(x.Spec.SharedWith, req.From) }
	if req.DryRun.Enabled() {
		res.Record, err = e.changeGrant(ctx, req.DryRun, inst, shown, withdraw)
		return res, err
	}
	res.Record, err = e.cfg.Store.Instances().UpdateWithRetry(req.DryRun.writes(ctx), req.Namespace, req.Name, func(x *v1alpha1.ServiceInstance) error {
		if err := shown.still(x); err != nil {
			return err
		}
		withdraw(x)
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Withdrawn = true
	revoked, unseen, err := e.RevokeConsumers(ctx, res.Record, req.From)
	res.Revoked, res.LeftToReconcile = revoked, slices.Contains(unseen, req.From)
	if err != nil {
		return res, fmt.Errorf("the grant is withdrawn, but marking the bindings of namespace %q for deletion failed (reconcile removes them): %w", req.From, err)
	}
	return res, nil
}

// sharedInstance reads the instance a share or unshare names.
func (e *Engine) sharedInstance(ctx context.Context, namespace, name string) (*v1alpha1.ServiceInstance, error) {
	inst, err := e.cfg.Store.Instances().Get(ctx, namespace, name)
	if store.IsNotFound(err) {
		return nil, fmt.Errorf(`instance %q not found in namespace %q: list the instances with "kubectl catalog get instances -n %s"`, name, namespace, namespace)
	}
	return inst, err
}

// changeGrant writes change to the instance as the user's intent, provided it is still
// the record inst was read from, with the spec shown. A client dry run returns inst as change would leave it,
// writing nothing; a server dry run sends the write to the API server as a dry run.
func (e *Engine) changeGrant(ctx context.Context, dry DryRun, inst *v1alpha1.ServiceInstance, shown shownSpec, change func(*v1alpha1.ServiceInstance)) (*v1alpha1.ServiceInstance, error) {
	if dry == DryRunClient {
		out := inst.DeepCopy()
		change(out)
		return out, nil
	}
	out, err := e.cfg.Store.Instances().UpdateWithRetry(dry.writes(ctx), inst.Namespace, inst.Name, func(x *v1alpha1.ServiceInstance) error {
		if x.UID != inst.UID {
			return fmt.Errorf("instance %q changed meanwhile: run the command again", inst.Name)
		}
		if err := shown.still(x); err != nil {
			return err
		}
		change(x)
		return nil
	})
	if err != nil && dry == DryRunServer {
		return nil, fmt.Errorf("instance %q would not be changed: %w", inst.Name, err)
	}
	return out, err
}

// withdrawn is the namespaces of a grant without ns (nil when none is left).
func withdrawn(shared []string, ns string) []string {
	shared = slices.DeleteFunc(slices.Clone(shared), func(s string) bool { return s == ns })
	if len(shared) == 0 {
		return nil
	}
	return shared
}

// namespacesOrNone lists namespaces for a message.
func namespacesOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
