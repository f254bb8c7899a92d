package catalogsync

import (
	"context"
	"encoding/json"
	"fmt"

	"golang.org/x/sync/semaphore"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// Limits bound what one broker's catalog may make the platform read, hold and record.
// A namespace-scoped broker's URL is chosen by whoever may write ConfigMaps in its
// namespace, and its catalog is fetched from reconcile's position and recorded where
// every marketplace reads it: it gets NamespaceBrokerLimits. The cluster-scoped brokers
// of the catalog namespace, registered by administrators, get ClusterBrokerLimits.
type Limits struct {
	// Bytes caps the catalog's body as read from the broker, before decoding.
	Bytes int64
	// Services caps the number of services; Plans the number of plans of all services.
	Services, Plans int
	// SchemaBytes caps the JSON of one plan's schemas.
	SchemaBytes int
}

var (
	// NamespaceBrokerLimits are the limits of a namespace-scoped broker's catalog.
	NamespaceBrokerLimits = Limits{Bytes: 8 << 20, Services: 200, Plans: 2000, SchemaBytes: 64 << 10}
	// ClusterBrokerLimits are the limits of a cluster-scoped broker of the catalog
	// namespace: 500 services of 20 plans with realistic schemas are about 19 MB.
	ClusterBrokerLimits = Limits{Bytes: brokerclient.DefaultMaxCatalogBytes, Services: 5000, Plans: 100000, SchemaBytes: 1 << 20}
)

// DecodeBudgetBytes is how many bytes of catalog bodies all Syncers of a process read
// and decode at once: a fetch holds its Limits.Bytes of the budget (at most all of it)
// until its catalog is decoded, so that concurrent fetches by reconcile's workers stay
// within the memory reconcile is given whatever the brokers answer.
const DecodeBudgetBytes int64 = 64 << 20

// decodeBudget is the budget shared by the Syncers of the process.
var decodeBudget = semaphore.NewWeighted(DecodeBudgetBytes)

// WithCatalogNamespace names the catalog namespace, where the cluster-scoped brokers
// administrators register live: its brokers get ClusterBrokerLimits, every other broker
// NamespaceBrokerLimits. Without it every broker gets ClusterBrokerLimits.
func WithCatalogNamespace(ns string) Option { return func(s *Syncer) { s.catalogNamespace = ns } }

// WithDecodeBudget replaces the process's shared decoding budget of DecodeBudgetBytes.
func WithDecodeBudget(budget *semaphore.Weighted, size int64) Option {
	return func(s *Syncer) { s.budget, s.budgetSize = budget, size }
}

// LimitsFor is the limits of broker b's catalog.
func (s *Syncer) LimitsFor(b *v1alpha1.Broker) Limits {
	if s.catalogNamespace != "" && (b.Namespace != s.catalogNamespace || b.Spec.Scope != v1alpha1.ScopeCluster) {
		return NamespaceBrokerLimits
	}
	return ClusterBrokerLimits
}

// acquire waits for n bytes of the decoding budget (at most all of it) and returns
// their release.
func (s *Syncer) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(n, s.budgetSize)
	if err := s.budget.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return func() { s.budget.Release(n) }, nil
}

// LimitError says a broker's catalog is over one of its Limits.
type LimitError struct {
	Broker string
	// Limit names the limit ("services", "plans", "schema bytes of a plan").
	Limit string
	Max   int
	// Detail says where, e.g. which plan.
	Detail string
	// Namespaced: the broker had NamespaceBrokerLimits.
	Namespaced bool
}

func (e *LimitError) Error() string {
	msg := fmt.Sprintf("the catalog of broker %q has more %s than the limit of %d", e.Broker, e.Limit, e.Max)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Namespaced {
		msg += " for a namespace-scoped broker; cluster-scoped brokers registered by an administrator may have more"
	}
	return msg
}

// limitCounter checks a catalog against Limits one service at a time.
type limitCounter struct {
	broker     string
	lim        Limits
	namespaced bool
	services   int
	plans      int
}

func (c *limitCounter) add(svc *osb.Service) error {
	c.services++
	c.plans += len(svc.Plans)
	fail := func(limit string, max int, detail string) error {
		return &LimitError{Broker: c.broker, Limit: limit, Max: max, Detail: detail, Namespaced: c.namespaced}
	}
	if c.services > c.lim.Services {
		return fail("services", c.lim.Services, "")
	}
	if c.plans > c.lim.Plans {
		return fail("plans", c.lim.Plans, "")
	}
	for i := range svc.Plans {
		p := &svc.Plans[i]
		if p.Schemas == nil {
			continue
		}
		raw, err := json.Marshal(p.Schemas)
		if err != nil {
			return fmt.Errorf("the schemas of plan %q of service %q cannot be encoded: %w", p.ID, svc.ID, err)
		}
		if len(raw) > c.lim.SchemaBytes {
			return fail("schema bytes in one plan", c.lim.SchemaBytes, fmt.Sprintf("plan %q of service %q has %d", p.ID, svc.ID, len(raw)))
		}
	}
	return nil
}
