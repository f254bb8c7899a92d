package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// ChangeBrokerResult is what ChangeBroker did.
type ChangeBrokerResult struct {
	// Broker is the broker record as written, or as the dry run would leave it.
	Broker *v1alpha1.Broker
	// Unchanged says the record already was what the request asks: nothing was written
	// and the broker was not called.
	Unchanged bool
	// Catalog is what the fetch of the catalog did; nil on a dry run or when unchanged.
	Catalog *catalogsync.Result
}

// ChangeBroker makes a registered broker's record what req asks, on the user's command
// ("kubectl catalog apply -f" of a broker), with the checks of RegisterBroker: the URL,
// the credentials Secret reference (a missing or incomplete Secret changes nothing), the
// CA, the relist interval and the catalog restrictions. The name and scope say which
// broker; they cannot change. A record already as asked is not written. The change is
// written as the user's intent and the catalog is fetched again at once, as register
// fetches it. A dry run checks the Secret and writes nothing (a server dry run has the
// API server check the record's update), and fetches no catalog.
func (e *Engine) ChangeBroker(ctx context.Context, req RegisterBrokerRequest) (*ChangeBrokerResult, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	sync, err := catalogs(&e.cfg)
	if err != nil {
		return nil, err
	}
	want := brokerToRegister(req, e.cfg.CatalogNamespace)
	cur, err := e.cfg.Store.Brokers().Get(ctx, want.Namespace, want.Name)
	if store.IsNotFound(err) {
		return nil, fmt.Errorf("broker %q is not registered in namespace %q: register it first", want.Name, want.Namespace)
	}
	if err != nil {
		return nil, err
	}
	if cur.Spec.Scope != want.Spec.Scope {
		return nil, inputErrorf("broker %q is %s-scoped: the scope of a broker cannot change; deregister it and register it anew", want.Name, cur.Spec.Scope)
	}
	next := cur.DeepCopy()
	changeBrokerSpec(&next.Spec, want.Spec)
	if reflect.DeepEqual(next.Spec, cur.Spec) {
		return &ChangeBrokerResult{Broker: cur, Unchanged: true}, nil
	}
	Follow{Note: req.Note}.note("Changing broker %q (namespace %q)...", want.Name, want.Namespace)
	if err := sync.CheckSecret(ctx, next); err != nil {
		return nil, err
	}
	switch req.DryRun {
	case DryRunClient:
		return &ChangeBrokerResult{Broker: next}, nil
	case DryRunServer:
		updated, err := e.cfg.Store.Brokers().Update(req.DryRun.writes(ctx), next)
		if err != nil {
			return nil, fmt.Errorf("broker %q would not be changed: %w", want.Name, err)
		}
		return &ChangeBrokerResult{Broker: updated}, nil
	}
	updated, err := e.cfg.Store.Brokers().UpdateWithRetry(store.WithIntent(ctx), cur.Namespace, cur.Name, func(b *v1alpha1.Broker) error {
		if b.UID != cur.UID {
			return fmt.Errorf("broker %q changed meanwhile: run the command again", cur.Name)
		}
		changeBrokerSpec(&b.Spec, want.Spec)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot change broker %q: %w", want.Name, err)
	}
	if err := e.cfg.Store.ProtectBrokerSecret(ctx, updated); err != nil {
		Follow{Note: req.Note}.note("Warning: cannot give the credentials Secret %q the finalizer that keeps it while the broker's instances need it: %v", updated.Spec.Auth.SecretRef.Name, err)
	}
	if old := secretName(cur); old != "" && old != secretName(updated) {
		// The Secret no longer named keeps its finalizer only for another broker that
		// names it: ReleaseBroker of the old spec, without the record's own finalizer,
		// releases that Secret alone.
		was := cur.DeepCopy()
		was.Finalizers = nil
		if err := e.cfg.Store.ReleaseBroker(ctx, was); err != nil {
			Follow{Note: req.Note}.note("Warning: cannot remove the finalizer of Secret %q, which broker %q no longer names: %v", old, want.Name, err)
		}
	}
	res, err := sync.Sync(ctx, updated)
	if err != nil {
		var fe *catalogsync.FetchError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("broker %q is changed, but %w\nFix the cause, then run \"kubectl catalog sync broker %s\"", want.Name, err, want.Name)
		}
		return nil, err
	}
	return &ChangeBrokerResult{Broker: updated, Catalog: res}, nil
}

// changeBrokerSpec sets what a registration says of a broker onto spec; the scope and the
// relist requests stay spec's.
func changeBrokerSpec(spec *v1alpha1.BrokerSpec, want v1alpha1.BrokerSpec) {
	spec.URL, spec.Auth, spec.CABundle, spec.InsecureSkipTLSVerify = want.URL, want.Auth, want.CABundle, want.InsecureSkipTLSVerify
	spec.RelistInterval, spec.CatalogRestrictions = want.RelistInterval, want.CatalogRestrictions
}

// secretName is the credentials Secret b names; "" for none.
func secretName(b *v1alpha1.Broker) string {
	if b.Spec.Auth == nil {
		return ""
	}
	return b.Spec.Auth.SecretRef.Name
}
