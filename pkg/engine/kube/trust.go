package kube

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/trust"
)

// ClusterTrust reads the state of the catalog's trust policy from the cluster.
type ClusterTrust struct {
	Core             kubernetes.Interface
	CatalogNamespace string
}

// TrustState implements authority.TrustSource (engine.Config.Trust).
func (c ClusterTrust) TrustState(ctx context.Context) (authority.TrustState, error) {
	st, err := trust.CheckPolicy(ctx, c.Core, c.CatalogNamespace)
	if err != nil {
		return authority.TrustState{}, err
	}
	return authority.TrustState{Token: st.Token, Reason: st.Reason}, nil
}

var _ authority.TrustSource = ClusterTrust{}
