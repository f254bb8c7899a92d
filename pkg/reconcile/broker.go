package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// brokerDue says whether b's catalog is to be fetched at now, and when it will be
// otherwise.
func brokerDue(b *v1alpha1.Broker, now time.Time) (bool, *time.Time) {
	if b.Generation != b.Status.ObservedGeneration {
		return true, nil
	}
	if rt := b.Status.Retry; rt != nil && rt.NextRetryAt != nil && now.Before(rt.NextRetryAt.Time) {
		t := rt.NextRetryAt.Time
		return false, &t
	}
	if b.Status.Retry != nil {
		return true, nil
	}
	if at := b.Status.NextRelistAt; at != nil && !now.Before(at.Time) {
		return true, nil
	}
	return false, nil
}

// driveBroker fetches a broker's catalog when it is due. A broker being deleted is
// released once none of its instances is left; waits reports that instances still
// hold it.
func (r *Reconciler) driveBroker(ctx context.Context, w work, it Item, dryRun bool) (_ Item, waits bool) {
	b := w.broker
	if b == nil {
		var err error
		b, err = r.Store.Brokers().Get(ctx, w.namespace, w.name)
		if store.IsNotFound(err) {
			it.Outcome, it.Detail = Done, "gone"
			return it, false
		}
		if _, bad := store.Unreadable(err); bad {
			return failed(it, unreadable(err)), false
		}
		if err != nil {
			return failed(it, err), false
		}
	}
	if b.DeletionTimestamp != nil {
		return r.releaseBroker(ctx, b, it, dryRun)
	}
	if r.SyncBroker == nil {
		it.Outcome, it.Detail = Done, "nothing to do"
		return it, false
	}
	now := r.now()
	due, until := brokerDue(b, now)
	if w.adopt {
		switch {
		case dryRun && !due:
			it.Outcome, it.Detail = WouldDrive, "add the finalizer that keeps it until its instances are gone"
			return it, false
		case !dryRun:
			adopted, err := r.Engine.AdoptBroker(ctx, b)
			if rf, ok := engine.AsRefused(err); ok {
				// The catalog fetch that may be due is checked on its own: its refusal,
				// if any, goes into the broker's status.
				if adopted != nil {
					b = adopted
				}
				if !due {
					it.Outcome, it.Detail = Refused, "finalizer added, but its credentials Secret is left unprotected: "+rf.Message
					return it, false
				}
				it = r.syncBroker(ctx, b, it, due, until, dryRun)
				if it.Outcome != Refused {
					it.Outcome, it.Detail = Refused, "finalizer added, but its credentials Secret is left unprotected: "+rf.Message+"; "+it.Detail
				}
				return it, false
			}
			if err != nil {
				return failed(it, fmt.Errorf("cannot add the finalizer that keeps it until its instances are gone: %w", err)), false
			}
			b = adopted
			it.Steps++
			if !due {
				it.Outcome, it.Detail = Done, "finalizer added: it is kept until its instances are gone"
				return it, false
			}
		}
	}
	return r.syncBroker(ctx, b, it, due, until, dryRun), false
}

// releaseBroker removes the finalizer of broker b, being deleted, and of its
// credentials Secret, once no instance of b is left in its namespace.
func (r *Reconciler) releaseBroker(ctx context.Context, b *v1alpha1.Broker, it Item, dryRun bool) (Item, bool) {
	if !slices.Contains(b.Finalizers, store.Finalizer) {
		it.Outcome, it.Detail = Done, "nothing to do"
		return it, false
	}
	insts, err := catalogsync.InstancesOf(ctx, r.Store, b)
	if err != nil {
		return failed(it, fmt.Errorf("cannot tell whether instances still need the broker: %w", err)), false
	}
	if len(insts) > 0 {
		it.Outcome, it.Detail = Waiting, "being deleted: "+KeptForInstances(insts)
		return it, true
	}
	if dryRun {
		it.Outcome, it.Detail = WouldDrive, "remove the finalizer: no instance of the broker is left"
		return it, false
	}
	it.Steps++
	if err := r.Store.ReleaseBroker(ctx, b); err != nil {
		return failed(it, fmt.Errorf("cannot remove the finalizer: %w", err)), false
	}
	it.Outcome, it.Detail = Done, "deleted: no instance of the broker is left"
	return it, false
}

// KeptForInstances says why a broker being deleted is kept: the instances of it that
// are left (at most five named).
func KeptForInstances(insts []*v1alpha1.ServiceInstance) string {
	names := make([]string, 0, len(insts))
	for _, in := range insts {
		names = append(names, in.Name)
	}
	slices.Sort(names)
	list := strings.Join(names[:min(len(names), 5)], ", ")
	if len(names) > 5 {
		list += fmt.Sprintf(" and %d more", len(names)-5)
	}
	if len(names) == 1 {
		return fmt.Sprintf("kept until its instance %s is deprovisioned", list)
	}
	return fmt.Sprintf("kept until its %d instances (%s) are deprovisioned", len(names), list)
}

// syncBroker fetches b's catalog under a claim when it is due.
func (r *Reconciler) syncBroker(ctx context.Context, b *v1alpha1.Broker, it Item, due bool, until *time.Time, dryRun bool) Item {
	if !due {
		if until != nil {
			it.Outcome, it.Until, it.Detail = Waiting, until, "next: fetch the catalog again"
			if rt := b.Status.Retry; rt != nil {
				it.Detail = fmt.Sprintf("attempt %d failed: %s", rt.Attempts, rt.LastError)
			}
		} else {
			it.Outcome, it.Detail = Done, "catalog up to date"
		}
		return it
	}
	if dryRun {
		it.Outcome, it.Detail = WouldDrive, "fetch the catalog"
		return it
	}
	ttl := cmp.Or(r.ClaimTTL, 2*time.Minute)
	holder := r.Engine.Holder()
	claimed, err := r.Store.Brokers().Claim(ctx, b, holder, ttl)
	if store.IsClaimed(err) {
		it.Outcome, it.Detail = Skipped, "another driver is fetching its catalog"
		return it
	}
	if err != nil {
		return failed(it, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, _ = r.Store.Brokers().Release(rctx, claimed, holder)
		cancel()
	}()
	it.Steps++
	if err := r.SyncBroker(ctx, claimed); err != nil {
		if ctx.Err() != nil {
			it.Outcome, it.Detail = InProgress, "interrupted; left pending"
			return it
		}
		// A failed fetch is recorded with its retry in the broker's status: it is
		// retried, like a broker call of an instance.
		it.Outcome, it.Detail = Waiting, err.Error()
		var fe *catalogsync.FetchError
		if errors.As(err, &fe) && fe.Reason == catalogsync.ReasonRefused {
			it.Outcome = Refused
			return it
		}
		if fresh, gerr := r.Store.Brokers().Get(ctx, b.Namespace, b.Name); gerr == nil && fresh.Status.Retry != nil && fresh.Status.Retry.NextRetryAt != nil {
			t := fresh.Status.Retry.NextRetryAt.Time
			it.Until = &t
		} else if gerr != nil && !store.IsNotFound(gerr) {
			return failed(it, errors.Join(err, gerr))
		}
		if it.Until == nil {
			it.Outcome = InProgress
		}
		return it
	}
	it.Outcome, it.Detail = Done, "catalog fetched"
	return it
}
