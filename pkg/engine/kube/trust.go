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
	// Reader, when set, reads the state instead (shared with the store's author stamp,
	// so that a process reads it once).
	Reader *trust.Reader
}

// TrustState implements authority.TrustSource (engine.Config.Trust).
func (c ClusterTrust) TrustState(ctx context.Context) (authority.TrustState, error) {
	var st trust.State
	var err error
	if c.Reader != nil {
		st, err = c.Reader.State(ctx)
	} else {
		st, err = trust.CheckPolicy(ctx, c.Core, c.CatalogNamespace)
	}
	if err != nil {
		return authority.TrustState{}, err
	}
	return authority.TrustState{Token: st.Token, Reason: st.Reason, MigratedFrom: st.MigratedFrom}, nil
}

var _ authority.TrustSource = ClusterTrust{}
