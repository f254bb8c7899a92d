package bind

import "github.com/kubectl-catalog/kubectl-catalog/pkg/engine"

// RequestOf is the request Run makes of the engine for o (the parameters read), with no
// Follow.
func RequestOf(o *Options) (engine.BindRequest, error) { return o.Request(engine.Follow{}) }
