package engine

import (
	"context"
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// SyncBrokerRequest is what "kubectl catalog sync broker" was asked for.
type SyncBrokerRequest struct {
	// Name names the broker.
	Name string
	// Scope is the broker's scope when both scopes have one of that name; "" looks in
	// both.
	Scope v1alpha1.Scope
	// Namespace is the user's namespace, where a namespace-scoped broker is looked for.
	Namespace string
	// Note is given the lines the operation says as it goes ("Fetching the catalog of
	// broker ..."): the verb prints them to standard error. Nil drops them.
	Note func(string)
	// DryRun: nothing is written and the broker is not called; the result says what the
	// sync would vouch for.
	DryRun DryRun
	// Confirm is given what the sync vouches for when the broker's record is another
	// person's (its author is not the user running it): the sync writes the request as
	// the user's own, so she becomes the author of its URL and credentials Secret. An
	// error from it changes nothing and is returned; nil: such a broker is not synced
	// (ErrNotConfirmed).
	Confirm func(Vouch) error
}

// SyncBrokerResult is what SyncBroker did.
type SyncBrokerResult struct {
	// Broker is the broker record as the sync request left it.
	Broker *v1alpha1.Broker
	// Catalog is what the fetch changed in the broker's classes and plans; nil for a dry
	// run.
	Catalog *catalogsync.Result
	// Vouch is what the sync made (or, with a dry run, would make) the user vouch for;
	// nil when the broker's record was hers already.
	Vouch *Vouch
}

// SyncBroker fetches a broker's catalog again on the user's command and brings its
// classes and plans up to date. The request is recorded in the broker first, so that
// reconcile fetches the catalog if the command is interrupted. A broker the engine does
// not trust (CheckBroker) is not called: the refusal is recorded in its status and
// returned, as a failed fetch is.
//
// Recording the request makes the user the author of the broker's record, and so of its
// URL and credentials Secret: from then on that Secret goes to that URL on her authority.
// When the record is another person's, the sync first checks that she could have written
// it herself (a Secret she may not read is refused: she cannot vouch for it) and asks
// req.Confirm; the request is then written on exactly the spec she confirmed.
func (e *Engine) SyncBroker(ctx context.Context, req SyncBrokerRequest) (*SyncBrokerResult, error) {
	sync, b, err := e.registered(ctx, req.Namespace, req.Name, req.Scope)
	if err != nil {
		return nil, err
	}
	vouch, err := e.auth.Vouching(ctx, b)
	if r, ok := AsRefused(err); ok && r.Reason == ReasonRefusedUntrustedReference {
		// A record the engine never uses, whoever wrote it: the fetch below refuses it
		// and records why in its status.
		vouch, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker %q in namespace %q is not synced, and its record is left as it is: %w", b.Name, b.Namespace, err)
	}
	if req.DryRun.Enabled() {
		return &SyncBrokerResult{Broker: b, Vouch: vouch}, nil
	}
	if vouch != nil {
		if req.Confirm == nil {
			return nil, ErrNotConfirmed
		}
		if err := req.Confirm(*vouch); err != nil {
			return nil, err
		}
	}
	shown, err := store.SpecHash(b)
	if err != nil {
		return nil, err
	}
	Follow{Note: req.Note}.note("Fetching the catalog of broker %q at %s...", b.Name, b.Spec.URL)
	// The request is recorded first, as the user's: if the command is interrupted,
	// reconcile fetches the catalog instead.
	uid := b.UID
	b, err = e.cfg.Store.Brokers().UpdateWithRetry(store.WithIntent(ctx), b.Namespace, b.Name, func(cur *v1alpha1.Broker) error {
		if h, err := store.SpecHash(cur); err != nil || h != shown || cur.UID != uid {
			return fmt.Errorf("broker %q changed since it was shown (someone wrote its record again): nothing was changed; run the command again to see it as it is now", cur.Name)
		}
		cur.Spec.RelistRequests++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot record the sync request on broker %q: %w", req.Name, err)
	}
	res, err := sync.Sync(ctx, b)
	if err != nil {
		return nil, err
	}
	return &SyncBrokerResult{Broker: b, Catalog: res, Vouch: vouch}, nil
}
