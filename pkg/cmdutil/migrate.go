package cmdutil

import (
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/migrate"
)

// MigrateConfig is what "migrate svcat" works with on the factory's cluster: the engine
// (its store and catalog syncer, whose broker calls time out after brokerTimeout) and the
// clients of the retired API (dynamic, JSON only, and discovery). ErrOut and AfterWrite
// are the caller's.
func (f *Factory) MigrateConfig(brokerTimeout time.Duration) (migrate.Config, error) {
	eng, err := f.Engine(EngineOptions{CatalogTimeout: brokerTimeout})
	if err != nil {
		return migrate.Config{}, err
	}
	core, err := f.KubernetesClient()
	if err != nil {
		return migrate.Config{}, err
	}
	cfg, err := f.RESTConfig()
	if err != nil {
		return migrate.Config{}, err
	}
	// The old API is JSON only.
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return migrate.Config{}, err
	}
	disco, err := f.DiscoveryClient()
	if err != nil {
		return migrate.Config{}, err
	}
	return migrate.Config{
		Dynamic: dyn, Discovery: disco, Core: core, Store: eng.Store, Syncer: eng.Syncer, Engine: eng.Engine,
		CatalogNamespace: f.CatalogNamespace,
	}, nil
}
