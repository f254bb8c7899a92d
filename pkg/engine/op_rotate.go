package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// RotateRequest is what "bind --rotate" is asked for.
type RotateRequest struct {
	// Namespace and Name name the binding whose credentials are rotated.
	Namespace, Name string
	Follow          Follow
	// SecretTemplate, when not nil, replaces the binding's spec.secretTemplate: the new
	// credentials are rendered with it. It is checked before anything is written.
	SecretTemplate *v1alpha1.SecretTemplate
	// Vouch asks the user before the rotation makes her the author of what another
	// person wrote into the binding (see Voucher).
	Vouch Voucher
}

// RotateResult is what a rotation did, for the verb to print.
type RotateResult struct {
	Namespace, Name string
	// SecretName is the binding's Secret, which keeps its name.
	SecretName string
	// OldID is the OSB binding id replaced, NewID the one that replaces it.
	OldID, NewID string
	// Binding is the binding as the drive left it; nil when the drive did not come back
	// (a timeout, an interruption).
	Binding *v1alpha1.ServiceBinding
	// Followed is where the drive left the binding.
	Followed Result
	// Rotated says that the new credentials are in the Secret.
	Rotated bool
	// OldPending says that the old id is still to be unbound at the broker (reconcile
	// finishes it).
	OldPending bool
}

// Rotate asks for new credentials for a binding on its user's command ("kubectl catalog
// bind --rotate"): the binding gets a new OSB binding id (see startRotation), then is
// driven as req.Follow says. The user writes the record again as their own intent, so
// its author becomes the user (which is how the owner of a binding written under a
// trust policy no longer in force makes it trusted again). A rotation that failed, whose
// binding is gone or that waits for a retry is an error, with the result still carrying
// the binding.
func (e *Engine) Rotate(ctx context.Context, req RotateRequest) (RotateResult, error) {
	res := RotateResult{Namespace: req.Namespace, Name: req.Name}
	before, err := e.cfg.Store.Bindings().Get(ctx, req.Namespace, req.Name)
	if store.IsNotFound(err) {
		return res, fmt.Errorf(`binding %q not found in namespace %q: list the bindings with "kubectl catalog get bindings"`, req.Name, req.Namespace)
	}
	if err != nil {
		return res, err
	}
	res.SecretName = before.Spec.SecretName
	tpl := before.Spec.SecretTemplate
	if req.SecretTemplate != nil {
		tpl = req.SecretTemplate
	}
	if err := e.checkRotateTemplate(ctx, before, tpl); err != nil {
		return res, err
	}
	shown, err := e.vouchBeforeWrite(ctx, before, "binding", DryRunNone, req.Vouch)
	if err != nil {
		return res, err
	}
	b, err := e.startRotationWith(DryRunNone.writes(ctx), req.Namespace, req.Name, req.SecretTemplate, func(cur *v1alpha1.ServiceBinding) error { return shown.still(cur) })
	if err != nil {
		return res, err
	}
	res.OldID, res.NewID = b.RotatedFrom().ExternalID, b.CurrentExternalID()
	req.Follow.note("Rotating binding %q in namespace %q: new binding id %s replaces %s...", req.Name, req.Namespace, res.NewID, res.OldID)
	r, err := e.FollowBinding(ctx, req.Namespace, req.Name, "bind", nil, req.Follow)
	if err != nil {
		return res, err
	}
	res.Binding, res.Followed = r.Binding, r
	if err := rotatedError(&res); err != nil || res.Rotated {
		return res, err
	}
	return res, templateRotationError(res)
}

// rotatedError says why a rotation that was driven did not succeed, and fills in
// Rotated and OldPending. nil when the new credentials are in place or on their way.
func rotatedError(res *RotateResult) error {
	r := res.Followed
	describe := fmt.Sprintf(`"kubectl catalog describe binding %s -n %s"`, res.Name, res.Namespace)
	switch {
	case r.State == StateNeedsUser:
		return fmt.Errorf("rotating binding %q failed: %s; see %s", res.Name, r.Message, describe)
	case r.Binding == nil:
		return fmt.Errorf("binding %q is gone: it was deleted while being rotated", res.Name)
	}
	cur := r.Binding
	if cur.Status.Bound != nil && cur.Status.Bound.BindingID == res.NewID {
		res.Rotated = true
		res.OldPending = slices.Contains(cur.Status.Retired, res.OldID)
		return nil
	}
	if cur.Status.Retry != nil && (cur.Status.InFlight == nil || !cur.Status.InFlight.Async) {
		return fmt.Errorf("rotating binding %q: %s; it will be retried: follow it with %s; the old credentials stay in Secret %q until then", res.Name, r.Message, describe, res.SecretName)
	}
	return nil
}
