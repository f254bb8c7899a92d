package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Broker steps
//
// A broker's step is what reconcile does with a broker record, as StepInstance and
// StepBinding are for instances and bindings. A broker being deleted is released (its
// finalizer and its credentials Secret's removed) once no instance of it is left. A
// namespace-scoped broker recorded by an older release, without the finalizer that keeps
// it until its instances are gone, is given it, and its credentials Secret one in the
// broker author's name. A broker whose catalog
// fetch is due (its spec changed, a retry is due, a relist is due) has its catalog
// fetched with the engine's catalog syncer (Config.Catalogs), under a claim, so that two
// drivers never fetch one catalog at once. A failed fetch is recorded in the broker's
// status with its retry, by the syncer.

// Actions of a broker's NextStep.
const (
	NextFetchCatalog    = "fetch the catalog"
	NextAdoptBroker     = "add the finalizer that keeps it until its instances are gone"
	NextReleaseBroker   = "remove the finalizer once no instance of the broker is left"
	NextCatalogUpToDate = "nothing (catalog up to date)"
)

// brokerClaimTTL is how long the claim of a broker whose catalog is being fetched lasts.
const brokerClaimTTL = 2 * time.Minute

// BrokerOutcome is how a broker's step ended.
type BrokerOutcome string

// Outcomes of a broker's step.
const (
	// BrokerDone: the broker settled: its catalog was fetched or is up to date, it was
	// released or adopted, or it is gone.
	BrokerDone BrokerOutcome = "done"
	// BrokerWaiting: a failed fetch is to be retried (at Until), or instances still
	// hold the broker being deleted (HeldByInstances).
	BrokerWaiting BrokerOutcome = "waiting"
	// BrokerInProgress: the step was interrupted, or its fetch failed with no retry
	// recorded; a later step goes on.
	BrokerInProgress BrokerOutcome = "in progress"
	// BrokerClaimed: another driver is fetching its catalog.
	BrokerClaimed BrokerOutcome = "claimed"
	// BrokerRefused: the engine does not trust the broker, or may not protect its
	// credentials Secret; the refusal is in its status.
	BrokerRefused BrokerOutcome = "refused"
	// BrokerWouldDo: a dry run; Message says what the step would do.
	BrokerWouldDo BrokerOutcome = "would do"
)

// BrokerResult is what StepBroker did.
type BrokerResult struct {
	Outcome BrokerOutcome
	// Message says what was done, what would be done, or what it waits for.
	Message string
	// Until is when the next fetch is due, for BrokerWaiting after a failed fetch.
	Until *time.Time
	// Steps is how many changes the step made or tried: the finalizer added, the
	// catalog fetched, the broker released.
	Steps int
	// HeldByInstances: the broker is being deleted and instances of it are left; a
	// later step releases it once they are gone.
	HeldByInstances bool
}

// FetchesCatalogs reports whether the engine has a catalog syncer (Config.Catalogs):
// without one, StepBroker only releases brokers being deleted.
func (e *Engine) FetchesCatalogs() bool { return e.cfg.Catalogs != nil }

// NextBrokerStep says what StepBroker would do first with b, found without calling a
// broker or writing anything, like NextStep. A broker being deleted is released once
// no instance of it is left (which only the step finds out).
func (e *Engine) NextBrokerStep(b *v1alpha1.Broker) NextStep {
	if b.DeletionTimestamp != nil {
		return NextStep{Action: NextReleaseBroker}
	}
	if adoptable(b) {
		return NextStep{Action: NextAdoptBroker}
	}
	due, until := brokerDue(b, e.now())
	switch {
	case due:
		return NextStep{Action: NextFetchCatalog}
	case until != nil:
		return NextStep{Action: NextFetchCatalog, At: *until}
	}
	return NextStep{Action: NextCatalogUpToDate}
}

// adoptable reports whether b is a namespace-scoped broker recorded without the
// finalizer that keeps it until its instances are gone (brokerStep.giveFinalizers gives
// it).
func adoptable(b *v1alpha1.Broker) bool {
	return store.HoldsInstances(b) && !slices.Contains(b.Finalizers, store.Finalizer) && b.DeletionTimestamp == nil
}

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

// StepBroker takes broker b's step: it releases a broker being deleted once no instance
// of it is left, adopts an older namespace-scoped broker, and fetches the catalog when
// it is due. With dryRun it writes nothing and calls no broker, and says what it would
// do. An error means a person must look (the broker could not be read or written); the
// result's Steps still count what was done before it.
func (e *Engine) StepBroker(ctx context.Context, b *v1alpha1.Broker, dryRun bool) (BrokerResult, error) {
	s := brokerStep{e: e, dryRun: dryRun}
	if b.DeletionTimestamp != nil {
		return s.release(ctx, b)
	}
	if e.cfg.Catalogs == nil {
		return BrokerResult{Outcome: BrokerDone, Message: "nothing to do"}, nil
	}
	due, until := brokerDue(b, e.now())
	if adoptable(b) {
		return s.adopt(ctx, b, due, until)
	}
	return s.sync(ctx, b, due, until)
}

// brokerStep is one step of a broker.
type brokerStep struct {
	e      *Engine
	dryRun bool
	res    BrokerResult
}

// adopt gives b the finalizer that keeps it until its instances are gone, then fetches
// its catalog if that is due too.
func (s *brokerStep) adopt(ctx context.Context, b *v1alpha1.Broker, due bool, until *time.Time) (BrokerResult, error) {
	switch {
	case s.dryRun && !due:
		return BrokerResult{Outcome: BrokerWouldDo, Message: NextAdoptBroker}, nil
	case s.dryRun:
		return s.sync(ctx, b, due, until)
	}
	adopted, err := s.giveFinalizers(ctx, b)
	if rf, ok := AsRefused(err); ok {
		// The catalog fetch that may be due is checked on its own: its refusal, if
		// any, goes into the broker's status.
		if adopted != nil {
			b = adopted
		}
		const refused = "finalizer added, but its credentials Secret is left unprotected: "
		if !due {
			return BrokerResult{Outcome: BrokerRefused, Message: refused + rf.Message}, nil
		}
		res, err := s.sync(ctx, b, due, until)
		if err != nil {
			res.Message = err.Error()
		}
		if err != nil || res.Outcome != BrokerRefused {
			res.Outcome, res.Message = BrokerRefused, refused+rf.Message+"; "+res.Message
		}
		return res, nil
	}
	if err != nil {
		return s.res, fmt.Errorf("cannot add the finalizer that keeps it until its instances are gone: %w", err)
	}
	s.res.Steps++
	if !due {
		return BrokerResult{Outcome: BrokerDone, Message: "finalizer added: it is kept until its instances are gone", Steps: s.res.Steps}, nil
	}
	return s.sync(ctx, adopted, due, until)
}

// giveFinalizers gives a namespace-scoped broker recorded before such brokers held their
// instances what "register" gives a new one: store.Finalizer on its record and
// store.BrokerSecretFinalizer on its credentials Secret. The record's finalizer is
// metadata the engine may write; the Secret is changed only in the name of the
// broker's author (who must be allowed to update it), and a refusal is returned after
// the record got its finalizer. A broker being deleted can get no new finalizer and is
// returned as it is.
func (s *brokerStep) giveFinalizers(ctx context.Context, b *v1alpha1.Broker) (*v1alpha1.Broker, error) {
	e := s.e
	if !store.HoldsInstances(b) || b.DeletionTimestamp != nil {
		return b, nil
	}
	if !slices.Contains(b.Finalizers, store.Finalizer) {
		adopted, err := e.cfg.Store.Brokers().AddFinalizer(ctx, b)
		if err != nil {
			return b, err
		}
		b = adopted
	}
	a := b.Spec.Auth
	if a == nil || (a.SecretRef.Namespace != "" && a.SecretRef.Namespace != b.Namespace) {
		return b, nil
	}
	if b.Namespace != e.cfg.CatalogNamespace { // administrators write the catalog namespace
		attrs := authorizationv1.ResourceAttributes{Namespace: b.Namespace, Verb: "update", Resource: "secrets", Name: a.SecretRef.Name}
		if err := e.auth.Authorize(ctx, b, attrs); err != nil {
			return b, err
		}
	}
	return b, e.cfg.Store.ProtectBrokerSecret(ctx, b)
}

// release removes the finalizer of broker b, being deleted, and of its credentials
// Secret, once no instance of b is left in its namespace.
func (s *brokerStep) release(ctx context.Context, b *v1alpha1.Broker) (BrokerResult, error) {
	if !slices.Contains(b.Finalizers, store.Finalizer) {
		return BrokerResult{Outcome: BrokerDone, Message: "nothing to do"}, nil
	}
	insts, err := catalogsync.InstancesOf(ctx, s.e.cfg.Store, b)
	if err != nil {
		return s.res, fmt.Errorf("cannot tell whether instances still need the broker: %w", err)
	}
	if len(insts) > 0 {
		return BrokerResult{Outcome: BrokerWaiting, Message: "being deleted: " + KeptForInstances(insts), HeldByInstances: true}, nil
	}
	if s.dryRun {
		return BrokerResult{Outcome: BrokerWouldDo, Message: "remove the finalizer: no instance of the broker is left"}, nil
	}
	s.res.Steps++
	if err := s.e.cfg.Store.ReleaseBroker(ctx, b); err != nil {
		return s.res, fmt.Errorf("cannot remove the finalizer: %w", err)
	}
	return BrokerResult{Outcome: BrokerDone, Message: "deleted: no instance of the broker is left", Steps: s.res.Steps}, nil
}

// KeptForInstances says why a broker being deleted is kept: the instances of it that
// are left (at most five named).
func KeptForInstances(insts []*v1alpha1.ServiceInstance) string {
	names := make([]string, 0, len(insts))
	for _, in := range insts {
		names = append(names, in.Name)
	}
	slices.Sort(names)
	list := listNames(names, 5)
	if len(names) == 1 {
		return fmt.Sprintf("kept until its instance %s is deprovisioned", list)
	}
	return fmt.Sprintf("kept until its %d instances (%s) are deprovisioned", len(names), list)
}

// sync fetches b's catalog under a claim when it is due.
func (s *brokerStep) sync(ctx context.Context, b *v1alpha1.Broker, due bool, until *time.Time) (BrokerResult, error) {
	res := s.res
	if !due {
		if until != nil {
			res.Outcome, res.Until, res.Message = BrokerWaiting, until, "next: fetch the catalog again"
			if rt := b.Status.Retry; rt != nil {
				res.Message = fmt.Sprintf("attempt %d failed: %s", rt.Attempts, rt.LastError)
			}
		} else {
			res.Outcome, res.Message = BrokerDone, "catalog up to date"
		}
		return res, nil
	}
	if s.dryRun {
		res.Outcome, res.Message = BrokerWouldDo, NextFetchCatalog
		return res, nil
	}
	brokers, holder := s.e.cfg.Store.Brokers(), s.e.cfg.Holder
	claimed, err := brokers.Claim(ctx, b, holder, brokerClaimTTL)
	if store.IsClaimed(err) {
		res.Outcome, res.Message = BrokerClaimed, "another driver is fetching its catalog"
		return res, nil
	}
	if err != nil {
		return res, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, _ = brokers.Release(rctx, claimed, holder)
		cancel()
	}()
	res.Steps++
	if _, err := s.e.cfg.Catalogs.Sync(ctx, claimed); err != nil {
		return s.failedFetch(ctx, b, res, err)
	}
	res.Outcome, res.Message = BrokerDone, "catalog fetched"
	return res, nil
}

// failedFetch is the result of a fetch of b's catalog that failed with err. The syncer
// recorded the failure with its retry in the broker's status: it is retried, like a
// broker call of an instance.
func (s *brokerStep) failedFetch(ctx context.Context, b *v1alpha1.Broker, res BrokerResult, err error) (BrokerResult, error) {
	if ctx.Err() != nil {
		res.Outcome, res.Message = BrokerInProgress, "interrupted; left pending"
		return res, nil
	}
	res.Outcome, res.Message = BrokerWaiting, err.Error()
	var fe *catalogsync.FetchError
	if errors.As(err, &fe) && fe.Reason == catalogsync.ReasonRefused {
		res.Outcome = BrokerRefused
		return res, nil
	}
	fresh, gerr := s.e.cfg.Store.Brokers().Get(ctx, b.Namespace, b.Name)
	if gerr == nil && fresh.Status.Retry != nil && fresh.Status.Retry.NextRetryAt != nil {
		t := fresh.Status.Retry.NextRetryAt.Time
		res.Until = &t
	} else if gerr != nil && !store.IsNotFound(gerr) {
		return res, errors.Join(err, gerr)
	}
	if res.Until == nil {
		res.Outcome = BrokerInProgress
	}
	return res, nil
}
