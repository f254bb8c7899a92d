package engine

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
)

// Vouch is what a person vouches for by writing, as her own, a record another person
// wrote (authority.Vouch): "sync broker" and "adopt" show it and ask first.
type Vouch = authority.Vouch

// ErrNotConfirmed is the error of a command that would make its runner vouch for a
// record another person wrote, and was not confirmed: nothing was changed.
var ErrNotConfirmed = authority.ErrNotConfirmed

// AdoptAuthorshipRequest asks to re-stamp the records of a namespace whose author cannot
// be verified (written before the trust policy now in force) as the runner's own.
type AdoptAuthorshipRequest struct {
	Namespace string
	DryRun    DryRun
	// Confirm is given what adopting the records means, before anything is written; an
	// error from it writes nothing and is returned. Nil: nothing is adopted
	// (ErrNotConfirmed). A dry run does not ask.
	Confirm func([]Vouch) error
}

// AdoptAuthorship re-stamps, as the runner's own, the records of a namespace whose
// author cannot be verified, each checked against the runner's rights as a verb writing
// its spec would be (authority.Authority.AdoptAuthorship), once the runner confirmed what
// that vouches for; with a dry run it writes nothing (client) or sends the writes as dry
// runs (server).
func (e *Engine) AdoptAuthorship(ctx context.Context, req AdoptAuthorshipRequest) (AdoptAuthorshipResult, error) {
	return e.auth.AdoptAuthorship(ctx, req.Namespace, req.DryRun == DryRunClient, req.DryRun == DryRunServer, req.DryRun.writes, req.Confirm)
}
