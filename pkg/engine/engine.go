package engine

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// BrokerClients gives the OSB client of a broker record. The engine never builds one
// itself, so tests inject pkg/osb/fake and the CLI injects pkg/engine/brokerclient.
type BrokerClients interface {
	ClientFor(ctx context.Context, b *v1alpha1.Broker) (osb.Client, error)
}

// HookPoint names a point of a broker call at which Config.Hook is called.
type HookPoint string

// Hook points, in the order they happen.
const (
	// HookBeforeBrokerCall: the write-ahead is stored, the call is not made yet.
	HookBeforeBrokerCall HookPoint = "before-broker-call"
	// HookAfterBrokerCall: the broker answered, the outcome is not stored yet.
	HookAfterBrokerCall HookPoint = "after-broker-call"
)

// Config configures an Engine. Store, Brokers and Platform are required.
type Config struct {
	Store    *store.Store
	Brokers  BrokerClients
	Platform Platform
	// CatalogNamespace holds cluster-scoped brokers and their classes.
	CatalogNamespace string
	// Holder names this driver in claims; default store.HolderName("kubectl-catalog"),
	// unique per process lifetime.
	Holder string
	// ClaimTTL is how long a claim lasts without renewal; default 2 minutes, at most
	// store.MaxClaimTTL.
	ClaimTTL time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Jitter returns a number in [0, 1) spreading retries; default math/rand.
	Jitter func() float64
	// RetryBase and RetryMax bound the exponential backoff of failed calls; defaults
	// 2 seconds and 10 minutes.
	RetryBase, RetryMax time.Duration
	// PollInterval and MaxPollInterval bound the interval between polls when the broker
	// sends no Retry-After; defaults 2 and 30 seconds.
	PollInterval, MaxPollInterval time.Duration
	// MaxPollingDuration is the engine's own bound on polling, for plans without a
	// maximum_polling_duration; default 24 hours.
	MaxPollingDuration time.Duration
	// MitigationGrace is how long a request that got no answer (a client timeout, a
	// closed connection, a 504) may still be under way at the broker: nothing about its
	// record is sent before it has passed (the re-send, a deletion, orphan mitigation);
	// a provision or bind whose re-send, past the grace from its first send, gets no
	// answer either is mitigated; default 10 minutes.
	MitigationGrace time.Duration
	// RefreshCatalog re-fetches a broker's catalog after a MaintenanceInfoConflict;
	// optional.
	RefreshCatalog func(ctx context.Context, b *v1alpha1.Broker) error
	// Catalogs fetches brokers' catalogs and writes their classes for RegisterBroker,
	// SyncBroker and Deregister, which need it. It carries the engine's CheckBroker
	// (catalogsync.WithBrokerCheck), as the one cmdutil.Factory.Engine builds does.
	Catalogs *catalogsync.Syncer
	// Hook is called at each HookPoint; tests use it to interrupt the engine there.
	Hook func(ctx context.Context, point HookPoint, op *v1alpha1.Operation)
	// TargetCacheTTL, when positive, keeps a broker's record, client and class for that
	// long between steps, so that polling many records of one broker reads them (and
	// sets up a connection) once rather than on every step. Changes to the broker or
	// its catalog are seen that much later. reconcile sets it; verbs leave it off.
	TargetCacheTTL time.Duration
	// TargetCacheClock is the clock the target cache ages its entries by; nil: the wall
	// clock (time.Now), whatever Now says. A simulation whose time is not the wall
	// clock's sets it.
	TargetCacheClock func() time.Time
	// Unattended: the engine runs on no user's command (reconcile). A call's originating
	// identity is then the verified author of its record, not the user running the
	// engine (see originatingIdentity).
	Unattended bool
	// Projector projects bindings' Secrets into workloads and removes them; without
	// one, a binding with projections waits with a visible error.
	Projector Projector
	// Trust says whether the catalog's trust policy is in force, so that record authors
	// can be believed; without it no author is (docs/security.md).
	Trust TrustSource
	// Authorizer asks the API server whether a record's author may read a Secret or
	// change a workload before the engine does so in their name; without it the engine
	// does so only for records written by the user running it.
	Authorizer Authorizer
	// Events records Kubernetes Events about records (events.go); nil records none.
	Events EventRecorder
	// Sleep, when set, is how a drive waits for its next step instead of the wall
	// clock's timers (a simulation whose clocks are its own); it returns early with
	// ctx's error. With it set, no timer renews a claim during a broker call either:
	// the broker renews it with KeepClaim as its time passes.
	Sleep func(ctx context.Context, d time.Duration) error
	// AfterFunc, when set, is how a verb's --wait --timeout is timed instead of the wall
	// clock's timers (a simulation's): it calls f once d has passed, unless stop was
	// called first; default time.AfterFunc.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// IDs, when set, is the random source of the OSB ids and request ids the engine
	// generates (a simulation's seeded source, one per engine, so that runs are
	// reproducible side by side); default uuid's (crypto/rand).
	IDs io.Reader
}

// Projector changes workloads so that they receive a binding's Secret
// (pkg/projection), and takes exactly that change back.
type Projector interface {
	Project(ctx context.Context, namespace, binding, secretName string, w v1alpha1.WorkloadProjection) error
	// Unproject succeeds when the workload or the projection is already gone.
	Unproject(ctx context.Context, namespace, binding string, w v1alpha1.WorkloadProjection) error
}

// Engine drives records toward their spec. It is safe for concurrent use on different
// records; claims keep two engines off one record.
type Engine struct {
	cfg     Config
	targets targetCache
	// auth decides on whose authority the engine acts for a record (trust.go).
	auth *authority.Authority
	// prepared holds what PrepareInstance read, for the engine's checks of the record
	// it prepared moments later (readahead.go).
	prepared preparedReads
}

// New returns an engine.
func New(cfg Config) *Engine {
	if cfg.Holder == "" {
		cfg.Holder = store.HolderName("kubectl-catalog")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ClaimTTL, 2*time.Minute)
	// A longer claim would not count as live for other drivers (store.Lease.Live).
	cfg.ClaimTTL = min(cfg.ClaimTTL, store.MaxClaimTTL)
	def(&cfg.RetryBase, 2*time.Second)
	def(&cfg.RetryMax, 10*time.Minute)
	def(&cfg.PollInterval, 2*time.Second)
	def(&cfg.MaxPollInterval, 30*time.Second)
	def(&cfg.MaxPollingDuration, 24*time.Hour)
	def(&cfg.MitigationGrace, DefaultMitigationGrace)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.CatalogNamespace == "" {
		cfg.CatalogNamespace = "catalog-system"
	}
	e := &Engine{cfg: cfg, targets: targetCache{m: map[string]cachedTarget{}, now: cfg.TargetCacheClock}}
	e.auth = newAuthority(e)
	return e
}

// targetCache holds recently read targets by broker namespace, name and class id; its
// clock is the wall clock, whatever the engine's is.
type targetCache struct {
	mu sync.Mutex
	m  map[string]cachedTarget
	// reading are the reads under way, by key (getOrRead).
	reading map[string]*targetRead
	// now is the clock (Config.TargetCacheClock); nil: time.Now.
	now func() time.Time
}

func (c *targetCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

type cachedTarget struct {
	t  target
	at time.Time
}

// targetRead is a read of a target under way, which the steps that need the same
// target meanwhile wait for.
type targetRead struct {
	done chan struct{}
	t    target
	err  error
}

// getOrRead returns the target under key when it is younger than ttl, and otherwise
// reads it with read and keeps it. Steps that need the same target while it is read
// (reconcile's workers taking up many records of one broker at once) wait for that
// read and share its target, as they would share it once it is kept, instead of each
// reading the broker and its class again. A read that fails is not shared: each of
// them then reads for itself, and its error is its own.
func (c *targetCache) getOrRead(ctx context.Context, key string, ttl time.Duration, read func() (target, error)) (target, error) {
	c.mu.Lock()
	if ct, ok := c.m[key]; ok && c.clock().Sub(ct.at) <= ttl {
		c.mu.Unlock()
		return ct.t, nil
	}
	if r, ok := c.reading[key]; ok {
		c.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return target{}, ctx.Err()
		}
		if r.err == nil {
			return r.t, nil
		}
		return read()
	}
	if c.reading == nil {
		c.reading = map[string]*targetRead{}
	}
	r := &targetRead{done: make(chan struct{}), err: errTargetReadAbandoned}
	c.reading[key] = r
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.reading, key)
		c.mu.Unlock()
		close(r.done)
	}()
	r.t, r.err = read()
	if r.err == nil {
		c.put(key, r.t)
	}
	return r.t, r.err
}

// errTargetReadAbandoned is a read of a target that never returned (it panicked): the
// steps that waited for it read for themselves.
var errTargetReadAbandoned = errors.New("the read of the broker was abandoned")

func (c *targetCache) put(key string, t target) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 1000 {
		clear(c.m)
	}
	c.m[key] = cachedTarget{t: t, at: c.clock()}
}

// Holder is the name this engine claims records under.
func (e *Engine) Holder() string { return e.cfg.Holder }

// State says what a step left behind.
type State string

// States of a Result.
const (
	// StateSettled: nothing left to do; the record is Ready.
	StateSettled State = "Settled"
	// StateWaiting: work is left; call Step again after RequeueAfter.
	StateWaiting State = "Waiting"
	// StateNeedsUser: the last operation failed in a way retrying will not fix; the
	// record waits for the user to change its spec (or deprovision it).
	StateNeedsUser State = "NeedsUser"
	// StateDeleted: the record is gone (deprovisioned, or never provisioned).
	StateDeleted State = "Deleted"
)

// Result is the outcome of one step.
type Result struct {
	// Instance (for StepInstance) or Binding (for StepBinding) is the record as stored
	// after the step; nil when it is gone.
	Instance *v1alpha1.ServiceInstance
	Binding  *v1alpha1.ServiceBinding
	State    State
	// RequeueAfter is when the next step is due, for StateWaiting.
	RequeueAfter time.Duration
	// Message says what the record is waiting for, or why it needs the user.
	Message string
	// Refused: the step refused to act on the record (its Refused condition says why);
	// nothing was sent to a broker.
	Refused bool
	// NeedsPerson: the refusal is one only a person can lift (RefusedError.NeedsPerson):
	// a verb's --wait ends at it instead of retrying it for as long as it may wait.
	NeedsPerson bool
	// noPlace: a binding gone whose instance, read in the step after the binding's
	// deletion mark, held no place for it under a limit (none to give back).
	noPlace bool
}

// Done reports whether there is nothing more a step can do now without the user.
func (r Result) Done() bool { return r.State != StateWaiting }

func (e *Engine) now() time.Time { return e.cfg.Now() }

// backoff is the delay before retry number attempts (1-based): exponential, capped,
// with ±20% jitter so that many records failing together do not retry together.
func (e *Engine) backoff(attempts int32) time.Duration {
	d := float64(e.cfg.RetryBase) * math.Pow(2, float64(max(attempts, 1)-1))
	d = min(d, float64(e.cfg.RetryMax))
	d *= 0.8 + 0.4*e.cfg.Jitter()
	return time.Duration(d).Round(time.Millisecond)
}

// RetryDelay is the delay before retry number attempts (1-based), as the engine waits
// before retrying a record: reconcile's own retry floor waits as long.
func (e *Engine) RetryDelay(attempts int32) time.Duration { return e.backoff(attempts) }

func (e *Engine) hook(ctx context.Context, p HookPoint, op *v1alpha1.Operation) {
	if e.cfg.Hook != nil {
		e.cfg.Hook(ctx, p, op)
	}
}

// errLost says the record was taken over (its in-flight operation replaced) between the
// broker call and the write of its outcome.
var errLost = errors.New("the record was changed by someone else while the broker was called")

func (e *Engine) newRequestID() string {
	if e.cfg.IDs != nil {
		return uuid.Must(uuid.NewRandomFromReader(e.cfg.IDs)).String()
	}
	return uuid.NewString()
}

// namespaceBoundID is a fresh OSB id for a new record of namespace ns, from e's source,
// bound to the namespace's key (namespaceKey).
func (e *Engine) namespaceBoundID(ctx context.Context, ns string) string {
	return v1alpha1.NewKeyedNamespaceBoundIDFrom(e.cfg.IDs, ns, namespaceKey(ctx, e.cfg.Platform, ns))
}

// recordBoundID is a fresh OSB id for the record with uid uid, from e's source.
func (e *Engine) recordBoundID(uid types.UID) string {
	return v1alpha1.NewRecordBoundIDFrom(e.cfg.IDs, uid)
}

func mtime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }
