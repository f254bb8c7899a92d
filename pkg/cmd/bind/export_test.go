package bind

import "github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"

// RequestOf is the request Run makes of the engine for o (the parameters read), with no
// Follow.
func RequestOf(o *Options) (catalog.BindRequest, error) { return o.request(catalog.Follow{}) }
