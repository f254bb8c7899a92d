package engine

import (
	"context"
)

// AdoptAuthorshipRequest asks to re-stamp the records of a namespace whose author cannot
// be verified (written before the trust policy now in force) as the runner's own.
type AdoptAuthorshipRequest struct {
	Namespace string
	DryRun    DryRun
}

// AdoptAuthorship re-stamps, as the runner's own, the records of a namespace whose
// author cannot be verified, each checked against the runner's rights as a verb writing
// its spec would be (authority.Authority.AdoptAuthorship); with a dry run it writes
// nothing (client) or sends the writes as dry runs (server).
func (e *Engine) AdoptAuthorship(ctx context.Context, req AdoptAuthorshipRequest) (AdoptAuthorshipResult, error) {
	return e.auth.AdoptAuthorship(ctx, req.Namespace, req.DryRun == DryRunClient, req.DryRun.writes)
}
