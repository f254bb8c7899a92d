package engine

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// writeBoundSecret writes the credentials of the bind in flight on b (the record as last
// stored by this driver, under its claim) to the binding's Secret, only while this
// driver still holds that claim: a driver paused after the broker answered (longer than
// the claim) may have been taken over by one that bound a newer id and wrote its
// credentials, and a late write would leave the Secret holding credentials the record
// does not name. The Secret's version is read first, then the claim is checked (renewed
// when less than an eighth of its time is left), then the Secret is written only over
// the version read: a driver that took over after the check writes the Secret itself,
// and the late write then fails as a conflict, writing nothing; a conflict is read again
// and checked again. It returns the record as last stored (a renewal is this driver's
// own write), and errClaimNotKept when another driver holds the record: nothing may be
// stored then, as after an interruption.
func (e bindingSteps) writeBoundSecret(ctx context.Context, b *v1alpha1.ServiceBinding, data map[string][]byte) (*v1alpha1.ServiceBinding, error) {
	var err error
	// A binding never bound and holding no Secret most likely has none yet: its first
	// attempt creates the Secret under the claim checked now, without reading it first
	// (one round trip fewer for a first bind). A create succeeds only where no Secret
	// exists; a driver that takes over later writes over it as below, and an existing
	// Secret makes the create a conflict, read and checked again.
	createFirst := b.Status.Bound == nil && b.Status.Secret == nil
	for range 5 {
		if createFirst {
			createFirst = false
			if b, err = e.stillClaimed(ctx, b); err != nil {
				return b, err
			}
			if _, err = e.cfg.Store.WriteBindingSecretOver(ctx, b, data, ""); !store.IsConflict(err) {
				return b, err
			}
			continue
		}
		rv := ""
		s, gerr := e.cfg.Store.GetSecret(ctx, b.Namespace, b.Spec.SecretName)
		switch {
		case gerr == nil:
			rv = s.ResourceVersion
		case store.IsForbidden(gerr):
			// A user who may create the Secret but not read it: written as before,
			// under the claim checked now.
			if b, err = e.stillClaimed(ctx, b); err != nil {
				return b, err
			}
			_, err = e.cfg.Store.WriteBindingSecret(ctx, b, data)
			return b, err
		case !store.IsNotFound(gerr):
			return b, gerr
		}
		if b, err = e.stillClaimed(ctx, b); err != nil {
			return b, err
		}
		if _, err = e.cfg.Store.WriteBindingSecretOver(ctx, b, data, rv); !store.IsConflict(err) {
			return b, err
		}
	}
	return b, err
}

// stillClaimed returns b with this driver's claim on it, as stored, when the claim still
// holds with at least an eighth of its time left by this process's own clock (the
// margin a call starts with), or once renewed; errClaimNotKept when another driver
// holds the record or the record carries another call.
func (e bindingSteps) stillClaimed(ctx context.Context, b *v1alpha1.ServiceBinding) (*v1alpha1.ServiceBinding, error) {
	op := b.Status.InFlight
	for range 3 {
		l, ok := store.LeaseOf(b)
		if !ok || l.Holder != e.cfg.Holder {
			return b, errClaimNotKept
		}
		if e.ownClaimLeft(b, l) >= e.cfg.ClaimTTL/8 {
			return b, nil
		}
		renewed, err := e.cfg.Store.Bindings().Claim(ctx, b, e.cfg.Holder, e.cfg.ClaimTTL)
		if err == nil {
			return renewed, nil
		}
		if !store.IsClaimed(err) && !store.IsConflict(err) {
			return b, err
		}
		fresh, err := e.cfg.Store.Bindings().Get(ctx, b.Namespace, b.Name)
		if err != nil {
			return b, err
		}
		if cur := fresh.Status.InFlight; cur == nil || op == nil || cur.RequestID != op.RequestID {
			return b, errClaimNotKept
		}
		b = fresh
	}
	return b, errClaimNotKept
}
