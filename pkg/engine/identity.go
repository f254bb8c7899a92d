package engine

import (
	"context"
	"slices"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// originatingIdentity is the user a call about rec is made for, sent to the broker as the
// originating identity (nil sends none). A verb's calls are its user's. An unattended
// engine (reconcile) calls for the record's author when the author is verified (see
// authorityOf): a broker that authorizes by the header must never see reconcile's own
// identity, which may hold rights no tenant has, for a request a tenant wrote. A record
// whose author cannot be verified while the trust policy is in force is called for no
// one; without the policy, where no author can be verified and reconcile acts with its
// own rights, reconcile's identity is sent.
func (e *Engine) originatingIdentity(ctx context.Context, rec v1alpha1.Record) (*osb.OriginatingIdentity, error) {
	if !e.cfg.Unattended {
		return e.cfg.Platform.Identity(ctx)
	}
	a := e.authorityOf(ctx, rec)
	switch {
	case a.self, a.unverified != "" && !a.notRunners:
		return e.cfg.Platform.Identity(ctx)
	case a.unverified != "":
		return nil, nil
	}
	return &osb.OriginatingIdentity{Username: a.author.Username, Groups: slices.Clone(a.author.Groups), Extra: map[string][]string{}}, nil
}
