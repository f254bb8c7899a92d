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
}

// SyncBrokerResult is what SyncBroker did.
type SyncBrokerResult struct {
	// Broker is the broker record as the sync request left it.
	Broker *v1alpha1.Broker
	// Catalog is what the fetch changed in the broker's classes and plans.
	Catalog *catalogsync.Result
}

// SyncBroker fetches a broker's catalog again on the user's command and brings its
// classes and plans up to date. The request is recorded in the broker first, so that
// reconcile fetches the catalog if the command is interrupted. A broker the engine does
// not trust (CheckBroker) is not called: the refusal is recorded in its status and
// returned, as a failed fetch is.
func (e *Engine) SyncBroker(ctx context.Context, req SyncBrokerRequest) (*SyncBrokerResult, error) {
	sync, b, err := e.registered(ctx, req.Namespace, req.Name, req.Scope)
	if err != nil {
		return nil, err
	}
	Follow{Note: req.Note}.note("Fetching the catalog of broker %q at %s...", b.Name, b.Spec.URL)
	// The request is recorded first, as the user's: if the command is interrupted,
	// reconcile fetches the catalog instead.
	b, err = e.cfg.Store.Brokers().UpdateWithRetry(store.WithIntent(ctx), b.Namespace, b.Name, func(cur *v1alpha1.Broker) error {
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
	return &SyncBrokerResult{Broker: b, Catalog: res}, nil
}
