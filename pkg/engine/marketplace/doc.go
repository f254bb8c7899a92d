// Package marketplace answers "what may this namespace see and provision": the classes
// and plans of cluster-scoped brokers (in the catalog namespace) and of the namespace's
// own brokers, minus what the broker removed and what access rules disable.
//
// Resolve turns the class and plan names a user typed into records, for provision and
// update; List gives the marketplace view; Access reads and edits the access rules.
//
// Reading the marketplace costs one paginated LIST of class records per scope and one GET
// of the access rules: plan schemas live in separate ServicePlanSchemas records and are
// read only for the one plan that needs them (Resolution.Schemas).
package marketplace

// DefaultCatalogNamespace is where cluster-scoped brokers and their classes live unless
// InCatalogNamespace says otherwise. It matches cmdutil.DefaultCatalogNamespace.
const DefaultCatalogNamespace = "catalog-system"

// Option configures Resolve, List and the access functions.
type Option func(*config)

type config struct {
	catalogNamespace string
}

// InCatalogNamespace sets the namespace of cluster-scoped brokers and classes (the
// factory's CatalogNamespace, from --catalog-namespace). Empty keeps the default.
func InCatalogNamespace(ns string) Option {
	return func(c *config) {
		if ns != "" {
			c.catalogNamespace = ns
		}
	}
}

func newConfig(opts []Option) config {
	c := config{catalogNamespace: DefaultCatalogNamespace}
	for _, o := range opts {
		o(&c)
	}
	return c
}
