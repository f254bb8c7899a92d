package engine

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// DeprovisionRequest is what "deprovision" asks for.
type DeprovisionRequest struct {
	Namespace, Name string
	// Abandon drops the records without calling the broker: what it holds stays there.
	Abandon bool
	DryRun  DryRun
	// Follow is how each record the deprovision drives is followed: the instance's
	// bindings first, one at a time, then the instance.
	Follow Follow
	// Confirm is given what the deprovision deletes, before anything is written (a dry
	// run included): false stops it, nothing changed. Nil goes on.
	Confirm func(Deprovisioning) (bool, error)
}

// Deprovisioning is what a deprovision deletes.
type Deprovisioning struct {
	// Instance is the instance as read before anything was written.
	Instance *v1alpha1.ServiceInstance
	// Bindings are the instance's bindings, as read then: they are unbound first.
	Bindings []*v1alpha1.ServiceBinding
	// What names them for the user: `instance "db" (postgresql/hobby, broker "acme")
	// and its bindings app (their credentials Secrets too)`.
	What string
}

// DeprovisionResult is what a deprovision did.
type DeprovisionResult struct {
	Deprovisioning
	// Declined says that Confirm said no: nothing was changed.
	Declined bool
	// Abandoned says the records were dropped without a broker call.
	Abandoned bool
	// Result is where the instance stands after its drive (none for a dry run, an
	// abandon or a refusal).
	Result Result
}

// Deprovision deletes an instance at its broker, then its record: it refuses a shared
// instance (the bindings of the other namespaces depend on it), marks the instance for
// deletion, unbinds its bindings first (an instance is never deprovisioned under a
// binding) and drives the instance as req.Follow says. With Abandon it drops the
// records without calling the broker. A dry run writes nothing (DryRunServer sends the
// deletions to the API server as a dry run) and calls no broker.
func (e *Engine) Deprovision(ctx context.Context, req DeprovisionRequest) (DeprovisionResult, error) {
	if !req.DryRun.Enabled() && !req.Abandon {
		e.readAhead(ctx, "", false)
	}
	d, err := instanceVerbs{e}.deprovisioning(ctx, req.Namespace, req.Name)
	if err != nil {
		return DeprovisionResult{}, err
	}
	res := DeprovisionResult{Deprovisioning: d}
	if !req.DryRun.Enabled() && !req.Abandon && !d.Instance.IsUserProvided() {
		// The broker's credentials Secret goes out with the deletion mark, ahead of the
		// deprovision's call (brokerSecretAhead).
		e.brokerSecretAhead(ctx, e.brokerNamespace(d.Instance), d.Instance.Spec.BrokerName)
	}
	if req.Confirm != nil {
		ok, err := req.Confirm(d)
		if !ok {
			res.Declined = true
			return res, err
		}
	}
	switch {
	case req.DryRun.Enabled():
		return res, instanceVerbs{e}.dryRunDeprovision(ctx, req, d)
	case req.Abandon:
		res.Abandoned = true
		return res, e.AbandonInstance(ctx, d.Instance)
	}
	res.Result, err = instanceVerbs{e}.deprovisionBindingsFirst(ctx, req, d)
	return res, err
}

// deprovisioning reads the instance and its bindings, refusing a shared instance.
func (e instanceVerbs) deprovisioning(ctx context.Context, namespace, name string) (Deprovisioning, error) {
	// The bindings are listed together with the instance's read, and looked at after it.
	type listed struct {
		bindings []*v1alpha1.ServiceBinding
		bad      []*store.Error
	}
	pending := ahead.Start(ctx, func() (listed, error) {
		var l listed
		var err error
		l.bindings, err = readableBindings(ctx, e.cfg.Store, namespace, store.Filter{Instance: name}, &l.bad)
		return l, err
	})
	inst, err := e.cfg.Store.Instances().Get(ctx, namespace, name)
	if err != nil {
		return Deprovisioning{}, err
	}
	if shared := inst.Spec.SharedWith; len(shared) > 0 {
		return Deprovisioning{}, fmt.Errorf("instance %q is shared with namespace(s) %s, whose bindings depend on it: unshare it from each first (%s), which removes their bindings; nothing was changed",
			name, strings.Join(shared, ", "), hint.Quoted(namespace, "unshare", name, "--from-namespace", shared[0], "--yes"))
	}
	l, err := pending.Wait()
	bindings := l.bindings
	e.reportUnreadable(ctx, inst, l.bad)
	if err != nil {
		return Deprovisioning{}, err
	}
	d := Deprovisioning{Instance: inst, What: fmt.Sprintf("instance %q (%s/%s, broker %q)", name, inst.Spec.ClassExternalName, inst.Spec.PlanExternalName, inst.Spec.BrokerName)}
	if inst.IsUserProvided() {
		d.What = fmt.Sprintf("user-provided instance %q (and its credentials Secret %s)", name, inst.Spec.UserProvided.CredentialsSecret)
	}
	if len(bindings) > 0 {
		names := make([]string, 0, len(bindings))
		for _, b := range bindings {
			names = append(names, b.Name)
		}
		d.Bindings = bindings
		d.What += fmt.Sprintf(" and its bindings %s (their credentials Secrets too)", strings.Join(names, ", "))
	}
	return d, nil
}

// dryRunDeprovision sends the deletions of the bindings and of the instance to the API
// server as a dry run, for DryRunServer; a client dry run sends nothing.
func (e instanceVerbs) dryRunDeprovision(ctx context.Context, req DeprovisionRequest, d Deprovisioning) error {
	if req.DryRun != DryRunServer {
		return nil
	}
	dry := req.DryRun.writes(ctx)
	for _, b := range d.Bindings {
		if err := e.cfg.Store.Bindings().Delete(dry, req.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
			return fmt.Errorf("binding %q would not be deleted: %w", b.Name, err)
		}
	}
	if err := e.cfg.Store.Instances().Delete(dry, req.Namespace, req.Name); err != nil {
		return fmt.Errorf("instance %q would not be deprovisioned: %w", req.Name, err)
	}
	return nil
}

// deprovisionBindingsFirst marks the instance for deletion, then unbinds its bindings
// one at a time, here rather than leaving them to a later reconcile, and drives the
// instance: it waits for its bindings.
func (e instanceVerbs) deprovisionBindingsFirst(ctx context.Context, req DeprovisionRequest, d Deprovisioning) (Result, error) {
	req.Follow.note("Deprovisioning instance %q in namespace %q...", req.Name, req.Namespace)
	if err := e.cfg.Store.Instances().Delete(ctx, req.Namespace, req.Name); err != nil {
		return Result{}, err
	}
	// stuck are the bindings whose unbind failed: the instance waits for them.
	var stuck []unbindFailure
	for _, b := range d.Bindings {
		if b.DeletionTimestamp == nil {
			if err := e.cfg.Store.Bindings().Delete(ctx, req.Namespace, b.Name); err != nil && !store.IsNotFound(err) {
				return Result{}, fmt.Errorf("marking binding %q for deletion: %w", b.Name, err)
			}
		}
		req.Follow.note("Unbinding %q first...", b.Name)
		br, err := e.FollowBinding(ctx, req.Namespace, b.Name, "unbind", nil, req.Follow)
		if err != nil {
			return Result{}, fmt.Errorf("instance %q waits for its binding %q: %w", req.Name, b.Name, err)
		}
		if br.State == StateDeleted {
			req.Follow.note("Binding %q is gone.", b.Name)
		}
		if u, ok := notUnbound(b.Name, br); ok {
			stuck = append(stuck, u)
		}
	}
	// The instance's broker and class, the list of the check of its OSB id and the lists
	// of its bindings are read now, after the deletion mark and the bindings, together
	// with the drive's first read of the instance.
	if !d.Instance.IsUserProvided() {
		ctx = withTargetReadAhead(e.Engine, ctx, d.Instance)
		ctx = withBindingListsAhead(e.Engine, ctx, req.Namespace, req.Name)
		e.auth.ReadNamespaceKeysAhead(ctx, instanceIDsAtBroker(d.Instance), req.Namespace)
	}
	res, err := e.FollowInstance(ctx, req.Namespace, req.Name, "deprovision", nil, req.Follow)
	if err != nil || len(stuck) == 0 || res.State == StateDeleted {
		return res, err
	}
	return res, notDeprovisionedError(req, stuck)
}

// unbindFailure is a binding whose unbind, during a deprovision, failed.
type unbindFailure struct {
	name string
	// why is the reason and the broker's error.
	why string
	// retried: the unbind is retried (by reconcile); else it needs the user.
	retried bool
}

// notUnbound reports the unbind of binding name, followed to r, as failed: it waits
// for a retry, or failed for good. An unbind under way at the broker is not a failure.
func notUnbound(name string, r Result) (unbindFailure, bool) {
	if r.State == StateNeedsUser {
		return unbindFailure{name: name, why: r.Message}, true
	}
	b := r.Binding
	if b == nil || b.Status.Retry == nil || (b.Status.InFlight != nil && b.Status.InFlight.Async) {
		return unbindFailure{}, false
	}
	rt := b.Status.Retry
	why := rt.Reason + ": " + cmp.Or(rt.LastError, r.Message)
	return unbindFailure{name: name, why: why, retried: true}, true
}

// notDeprovisionedError says why the instance of req is not deprovisioned: the unbind
// of bindings it waits for failed (stuck), and what finishes it.
func notDeprovisionedError(req DeprovisionRequest, stuck []unbindFailure) error {
	describe := fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, stuck[0].name, req.Namespace)
	for _, u := range stuck {
		if !u.retried {
			return fmt.Errorf("instance %q is marked for deletion but not deprovisioned: its binding %q cannot be unbound: %s; see %s",
				req.Name, u.name, u.why, fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, u.name, req.Namespace))
		}
	}
	names := make([]string, len(stuck))
	for i, u := range stuck {
		names[i] = strconv.Quote(u.name)
	}
	what := fmt.Sprintf("the unbind of its binding %s failed (%s)", names[0], stuck[0].why)
	it := "it"
	if len(stuck) > 1 {
		what = fmt.Sprintf("the unbinds of its bindings %s failed (%s: %s)", strings.Join(names, ", "), names[0], stuck[0].why)
		it = "them"
	}
	return fmt.Errorf("instance %q is marked for deletion but not deprovisioned yet: %s and will be retried: \"kubectl catalog reconcile -n %s\" unbinds %s, then deprovisions the instance; see %s",
		req.Name, what, req.Namespace, it, describe)
}
