package unbind

import "github.com/kubectl-catalog/kubectl-catalog/pkg/catalog"

// RequestOf is the request Run makes of the engine for o, without its callbacks.
func RequestOf(o *Options) catalog.UnbindRequest { return o.request() }
