package unbind

import "github.com/kubectl-catalog/kubectl-catalog/pkg/engine"

// RequestOf is the request Run makes of the engine for o, without its callbacks.
func RequestOf(o *Options) engine.UnbindRequest { return o.request() }
