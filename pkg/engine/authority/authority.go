// Package authority decides on whose authority the engine acts for a record, which
// anyone allowed to write ConfigMaps in its namespace can forge, so that a record never
// makes the engine act with more authority than its author had (docs/security.md):
//
//   - references stay in the record's namespace (the one exception: a cluster-scoped
//     broker's credentials, in the catalog namespace, which only administrators write);
//     cluster-scoped brokers and classes are read from the catalog namespace only;
//   - a Secret is read, and a workload changed, in the author's name only: when this
//     process wrote the spec itself on the user's command (or is about to: a verb's
//     checks before it records it), when the author is the user running the engine, or
//     when the API server says the author may (SubjectAccessReview).
//     The author is believed only when the catalog's trust policy is in force, which
//     makes the API server refuse a spec written under another user's name;
//   - catalog access rules and the broker's catalog are enforced before a provision, a
//     plan change or a bind;
//   - an OSB id is never sent for a record when an older record already uses it (the id
//     holder, ids.go, and the id claims of ids a spec adopts);
//   - a record of one namespace uses an instance of another only through a grant that
//     the instance's owner wrote (grants.go), within the instance's limit of bindings.
//
// A refused record is never skipped silently: its status carries a Refused condition
// saying why (RefusedError), and no broker is called for it.
//
// The engine holds one Authority and calls it; the package imports none of the engine.
// What it reads of the engine (the store, the platform, the policy's source, the
// Authorizer) it reads through Env, at each call.
package authority

import (
	"context"
	"sync"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/marketplace"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Authority holds the checks of a record's authority and what they keep between
// calls: the trust policy's state, the Authorizer's answers, the ids found a record's
// own, and the index of reconcile's last list of ids.
type Authority struct {
	env   func() Env
	cache cache
}

// Env is what the checks read of the engine that holds the Authority, as it stands at
// the time of each call.
type Env struct {
	Store *store.Store
	// Platform says who the user running the engine is.
	Platform Identities
	// Trust says whether the trust policy is in force; nil: it is not.
	Trust TrustSource
	// Authorizer asks the API server what a record's author may do; nil: nothing is
	// asked, and only the runner's own records get their author's authority.
	Authorizer Authorizer
	// CatalogNamespace holds cluster-scoped brokers, their classes and the access rules.
	CatalogNamespace string
	// Unattended: the engine runs on no user's command (reconcile).
	Unattended bool
	// Now is the engine's clock.
	Now func() time.Time
	// AccessRules are the catalog access rules of catalogNamespace read moments ago, if
	// any (false: they are read).
	AccessRules func(catalogNamespace string) (marketplace.Rules, bool)
	// TakeIDList takes the list of the records of kind labelled with OSB id id that ctx
	// carries, once, if any (false: the id's records are listed).
	TakeIDList func(ctx context.Context, kind, id string) (*ahead.Read[[]store.IDUser], bool)
	// InstanceTarget reads what the broker calls of inst go through, and the plan id
	// they name (AdoptAuthorship's checks).
	InstanceTarget func(ctx context.Context, inst *v1alpha1.ServiceInstance) (Target, string, error)
	// BindingTarget reads what the broker calls of b go through, and the plan id they
	// name (AdoptAuthorship's checks).
	BindingTarget func(ctx context.Context, b *v1alpha1.ServiceBinding) (BindTarget, string, error)
	// LeftToReconcile is the error of what the user running a verb may not do and
	// reconcile does: what says it, err is the cause (nil for none).
	LeftToReconcile func(what string, err error) error
}

// Identities tells who the user running the engine is (the engine's Platform).
type Identities interface {
	Identity(ctx context.Context) (*osb.OriginatingIdentity, error)
}

// New returns an Authority that reads env at each call.
func New(env func() Env) *Authority {
	return &Authority{env: env}
}

// brokerNamespace is where the instance's broker and classes live.
func (auth *Authority) brokerNamespace(inst *v1alpha1.ServiceInstance) string {
	if inst.Spec.Scope == v1alpha1.ScopeCluster {
		return auth.env().CatalogNamespace
	}
	return inst.Namespace
}

// TrustState says whether the catalog's trust policy is in force.
type TrustState struct {
	// Token is the current trust token; empty when the policy is not in force.
	Token string
	// Reason says why the policy is not in force (or how it was checked).
	Reason string
	// MigratedFrom: the policy in force admits a record's migrated-from annotation only
	// from its author or a user who may read the Service Catalog's objects in its
	// namespace (trust.State.MigratedFrom), so the annotation of a record whose verified
	// author may read them is one "migrate svcat" could have written (migrationOf).
	MigratedFrom bool
	// unreadable: the state could not be read; reading it again may find it in force.
	unreadable bool
}

// TrustSource reads the state of the trust policy (pkg/trust reads it from the cluster).
type TrustSource interface {
	TrustState(ctx context.Context) (TrustState, error)
}

// cache keeps the trust state and answers of the Authorizer for a short while:
// reconcile asks the same questions for many records.
type cache struct {
	mu      sync.Mutex
	state   TrustState
	stateAt time.Time
	answers map[string]cachedAnswer
	// owned holds ids checked to belong to a record (kind/id -> uid): an older record
	// cannot appear later, so the answer stays true.
	owned map[string]string
	// ids is the id labels of the records reconcile listed last (UseIDIndex).
	ids *store.IDIndex
	// swept holds the namespaces ("" for all) whose records' spec ids got their id
	// claims in this process (ClaimSpecIDs).
	swept map[string]bool
}

type cachedAnswer struct {
	allowed bool
	reason  string
	at      time.Time
}

// CacheTTL is how long the trust state and the Authorizer's answers are kept.
const CacheTTL = 10 * time.Second

// State is the trust policy's state, read at most once per CacheTTL.
func (auth *Authority) State(ctx context.Context) TrustState {
	c := &auth.cache
	c.mu.Lock()
	if !c.stateAt.IsZero() && time.Since(c.stateAt) < CacheTTL {
		s := c.state
		c.mu.Unlock()
		return s
	}
	c.mu.Unlock()
	s := TrustState{Reason: "no trust policy source is configured"}
	if auth.env().Trust != nil {
		var err error
		if s, err = auth.env().Trust.TrustState(ctx); err != nil {
			s = TrustState{Reason: "the trust policy could not be read: " + err.Error(), unreadable: true}
		}
	}
	c.mu.Lock()
	c.state, c.stateAt = s, time.Now()
	c.mu.Unlock()
	return s
}

// InForce reports whether the catalog's trust policy is in force: records'
// authors can be verified, and no record is ever lent the rights of the user running
// reconcile (Unvouched lists none).
func (auth *Authority) InForce(ctx context.Context) bool {
	return auth.State(ctx).Token != ""
}
