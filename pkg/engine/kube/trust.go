package kube

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// ClusterTrust reads the state of the catalog's trust policy from the cluster.
type ClusterTrust struct {
	Core             kubernetes.Interface
	CatalogNamespace string
}

// TrustState implements engine.TrustSource.
func (c ClusterTrust) TrustState(ctx context.Context) (engine.TrustState, error) {
	st, err := trust.CheckPolicy(ctx, c.Core, c.CatalogNamespace)
	if err != nil {
		return engine.TrustState{}, err
	}
	return engine.TrustState{Token: st.Token, Reason: st.Reason}, nil
}

var _ engine.TrustSource = ClusterTrust{}
