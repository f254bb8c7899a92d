package engine

import (
	"context"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// AdoptBroker gives a namespace-scoped broker recorded before such brokers held their
// instances what "register" gives a new one: store.Finalizer on its record and
// store.BrokerSecretFinalizer on its credentials Secret. The record's finalizer is
// metadata the engine may write; the Secret is changed only in the name of the
// broker's author (who must be allowed to update it), and a refusal is returned after
// the record got its finalizer. A broker being deleted can get no new finalizer and is
// returned as it is.
func (e *Engine) AdoptBroker(ctx context.Context, b *v1alpha1.Broker) (*v1alpha1.Broker, error) {
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
