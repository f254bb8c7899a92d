package engine

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The checks that keep a record, which anyone allowed to write ConfigMaps in its
// namespace can forge, from making the engine act with more authority than the record's
// author had live in pkg/engine/authority (docs/security.md). The engine holds one
// Authority (Engine.auth) and calls it; this file gives it what it reads of the engine
// and keeps the engine's names of the package's types, reasons and markers.

// newAuthority is the Authority of e: it reads e's configuration as it stands at each
// call.
func newAuthority(e *Engine) *authority.Authority {
	// instanceTarget and bindingTarget are the targets of a record's broker calls and
	// the plan they name.
	instanceTarget := func(ctx context.Context, inst *v1alpha1.ServiceInstance) (authority.Target, string, error) {
		t, err := e.target(ctx, inst)
		return t, brokerPlanID(inst), err
	}
	bindingTarget := func(ctx context.Context, b *v1alpha1.ServiceBinding) (authority.BindTarget, string, error) {
		t, err := e.bindTarget(ctx, b)
		return t, t.planID, err
	}
	return authority.New(func() authority.Env {
		return authority.Env{
			Store: e.cfg.Store, Platform: e.cfg.Platform, Trust: e.cfg.Trust, Authorizer: e.cfg.Authorizer,
			CatalogNamespace: e.cfg.CatalogNamespace, Unattended: e.cfg.Unattended, Now: e.cfg.Now,
			AccessRules: e.prepared.accessRules, TakeIDList: takeIDList, LeftToReconcile: leftToReconcile,
			InstanceTarget: instanceTarget, BindingTarget: bindingTarget,
		}
	})
}

func leftToReconcile(what string, err error) error {
	return &LeftToReconcileError{What: what, Err: err}
}

// The types of pkg/engine/authority, under the names the engine's callers use.
type (
	// TrustState says whether the catalog's trust policy is in force.
	TrustState = authority.TrustState
	// TrustSource reads the state of the trust policy (pkg/trust reads it from the
	// cluster).
	TrustSource = authority.TrustSource
	// Authorizer answers whether a user may make an API request (a SubjectAccessReview).
	Authorizer = authority.Authorizer
	// SelfAuthorizer answers whether the user running the engine may make an API request
	// (a SelfSubjectAccessReview, which every user may ask).
	SelfAuthorizer = authority.SelfAuthorizer
	// KubeAuthorizer is the Authorizer of a real cluster.
	KubeAuthorizer = authority.KubeAuthorizer
	// RefusedError says why the engine will not act on a record.
	RefusedError = authority.RefusedError
	// AdoptedRecord is what became of one record (AdoptAuthorship).
	AdoptedRecord = authority.AdoptedRecord
	// AdoptAuthorshipResult lists the records of the namespace and what became of each.
	AdoptAuthorshipResult = authority.AdoptAuthorshipResult
	// Unvouched is a record reconcile can act on only by lending it the rights of the
	// user running it (see Engine.UnvouchedRecord).
	Unvouched = authority.Unvouched
)

// Reasons of refusals (see pkg/engine/authority).
const (
	ReasonRefusedUntrustedReference  = authority.ReasonRefusedUntrustedReference
	ReasonRefusedAuthorUnverified    = authority.ReasonRefusedAuthorUnverified
	ReasonRefusedNotAuthorized       = authority.ReasonRefusedNotAuthorized
	ReasonRefusedPlanNotAllowed      = authority.ReasonRefusedPlanNotAllowed
	ReasonRefusedIDInUse             = authority.ReasonRefusedIDInUse
	ReasonRefusedIDNotOwned          = authority.ReasonRefusedIDNotOwned
	ReasonRefusedNotShared           = authority.ReasonRefusedNotShared
	ReasonRefusedNamespaceNotAllowed = authority.ReasonRefusedNamespaceNotAllowed
	ReasonRefusedLimitReached        = authority.ReasonRefusedLimitReached
)

// Authorship outcomes of one record (authority.AuthorshipAdopted, ...).
const (
	AuthorshipAdopted  = authority.AuthorshipAdopted
	AuthorshipVerified = authority.AuthorshipVerified
	AuthorshipRefused  = authority.AuthorshipRefused
)

// NoVoucher ends the message of a refusal for want of a verified author where the user
// running the engine could lend the record their own rights (authority.NoVoucher).
const NoVoucher = authority.NoVoucher

// trustCacheTTL is how long the trust state and the Authorizer's answers are kept.
const trustCacheTTL = authority.CacheTTL

// The package's functions the engine's steps call by their short names.
var (
	refused        = authority.Refused
	asDraft        = authority.AsDraft
	isReconcile    = authority.IsReconcile
	checkOwnID     = authority.CheckOwnID
	lets           = authority.Lets
	granted        = authority.Granted
	reserved       = authority.Reserved
	consumerNames  = authority.ConsumerNames
	listBindingsOf = authority.ListBindingsOf
	listConsumers  = authority.ListConsumers
	// readableBindings lists the bindings of a namespace that a filter selects, adding
	// the ConfigMaps that hold no readable record to bad instead of failing.
	readableBindings    = authority.ReadableBindings
	bindingHeldAtBroker = authority.BindingHeldAtBroker
)

// RefusalFix is the one command that resolves a refusal with reason and message, for a
// record of namespace (authority.RefusalFix).
func RefusalFix(reason, message, namespace string) string {
	return authority.RefusalFix(reason, message, namespace)
}

// AsRefused returns the refusal err carries, if any.
func AsRefused(err error) (*RefusedError, bool) { return authority.AsRefused(err) }

// WithRunnersRights marks ctx as a run on the user's own command (a verb, or a reconcile
// run by hand with --trust-namespace-writers): where a record's author cannot be
// verified (no trust policy) or the user may not ask the API server about them, the
// engine acts with the user's own rights, as the user could by hand, instead of
// refusing. A verified author the API server says may not do something is refused all
// the same. Reconcile in the cluster never runs so.
func WithRunnersRights(ctx context.Context) context.Context {
	return authority.WithRunnersRights(ctx)
}

// WithRunnersRightsFor is WithRunnersRights for the records of us only: those a person
// running reconcile by hand was shown (Unvouched), and agreed to act on with their own
// rights. Any other record whose author cannot be verified is refused as without it.
func WithRunnersRightsFor(ctx context.Context, us []Unvouched) context.Context {
	return authority.WithRunnersRightsFor(ctx, us)
}

// AsReconcile marks ctx as a reconcile run's: nobody else takes up what it may not do,
// so a call it lacks a permission for is a failure with backoff that names the
// permission to grant, never a call left to reconcile.
func AsReconcile(ctx context.Context) context.Context { return authority.AsReconcile(ctx) }

// TargetBroker is the broker record of the call (authority.Target).
func (t target) TargetBroker() *v1alpha1.Broker { return t.broker }

// TargetClass is the class record of the call, nil when it is gone (authority.Target).
func (t target) TargetClass() *v1alpha1.ServiceClass { return t.class }

// TargetInstance is the instance a binding's call binds (authority.BindTarget).
func (t bindTarget) TargetInstance() *v1alpha1.ServiceInstance { return t.inst }

// ReadsSecrets reports whether some parameters came from Secrets (p may be nil).
func (p *Parameters) ReadsSecrets() bool { return p != nil && len(p.FromSecret) > 0 }

// CheckBroker refuses a broker record reconcile must not use
// (authority.Authority.CheckBroker): it is what reconcile asks before it fetches a
// broker's catalog.
func (e *Engine) CheckBroker(ctx context.Context, b *v1alpha1.Broker) error {
	return e.auth.CheckBroker(ctx, b)
}

// TrustPolicyInForce reports whether the catalog's trust policy is in force: records'
// authors can be verified, and no record is ever lent the rights of the user running
// reconcile (Unvouched lists none).
func (e *Engine) TrustPolicyInForce(ctx context.Context) bool {
	return e.auth.InForce(ctx)
}

// UnvouchedRecord says what acting on rec, a record with work pending, with the rights
// of the user running reconcile would lend those rights for (see Unvouched); nil when
// nothing (authority.Authority.UnvouchedRecord).
func (e *Engine) UnvouchedRecord(ctx context.Context, rec v1alpha1.Record) (*Unvouched, error) {
	return e.auth.UnvouchedRecord(ctx, rec)
}

// UseIDIndex makes the check that no older record uses an OSB id answer from idx, the id
// labels of the records reconcile has just listed (store.ListPendingWithIDs), where idx
// can answer: for records it listed, created before the newest record it listed. It
// replaces the index given before; nil stops using one.
func (e *Engine) UseIDIndex(idx *store.IDIndex) { e.auth.UseIDIndex(idx) }

// ClaimSpecIDs makes the id claims of a record just created whose spec names OSB ids
// bound to nothing (adopted with --external-id, migrated, applied), so that the time
// it adopted them is set now. A claim that cannot be made now is made before the
// record's first call under the id: a record with work makes it in its next step. A
// record adopted as it is (a migration) takes no step of its own: its caller reports the
// error and makes the claim when it runs again.
func (e *Engine) ClaimSpecIDs(ctx context.Context, rec v1alpha1.Record) error {
	return e.auth.ClaimRecordSpecIDs(ctx, rec)
}
