// Package enginetest builds the engine of a unit test: over a fake cluster's store
// (pkg/store/storetest), calling one fake broker (pkg/osb/fake) for every broker record.
package enginetest

import (
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// The defaults of an engine made by New.
const (
	// Cluster is the cluster the engine's platform names.
	Cluster = "c-1"
	// Holder names the engine in the claims it takes.
	Holder = "test"
)

// Option changes the configuration of an engine made by New before it is built.
type Option func(*engine.Config)

// New returns an engine over st that calls client for every broker record (no broker
// at all when client is nil), on cluster Cluster, with the catalog in
// storetest.CatalogNamespace and claims held as Holder. opts change that configuration.
func New(st *store.Store, client osb.Client, opts ...Option) *engine.Engine {
	cfg := engine.Config{
		Store: st, Platform: engine.StaticPlatform{Cluster: Cluster},
		CatalogNamespace: storetest.CatalogNamespace, Holder: Holder,
	}
	if client != nil {
		cfg.Brokers = fake.Brokers{Client: client}
	}
	for _, o := range opts {
		o(&cfg)
	}
	return engine.New(cfg)
}
