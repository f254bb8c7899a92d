package cmdutil

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/kube"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/projection"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// EngineOptions tune Factory.Engine.
type EngineOptions struct {
	// PollInterval is the shortest interval between polls without Retry-After.
	PollInterval time.Duration
	// Holder names the driver in claims; default: the engine's. A holder also makes
	// the Events report the host or pod it names rather than "cli".
	Holder string
	// TestKnobs applies the clock skew, retry backoff and claim TTL test knobs
	// (reconcile only).
	TestKnobs bool
	// TargetCacheTTL is engine.Config.TargetCacheTTL (reconcile only).
	TargetCacheTTL time.Duration
	// Unattended is engine.Config.Unattended (reconcile only): calls carry their
	// records' verified authors as the originating identity.
	Unattended bool
	// EventWriters is how many Event writes go out at once (kube.EventRecorder): reconcile
	// passes its workers, so that its Events keep up with them; 0 is the default.
	EventWriters int
	// CatalogTimeout, when positive, is the per-request timeout of the catalog syncer's
	// broker calls (the --broker-timeout of register, sync broker and migrate svcat);
	// otherwise they have the engine's.
	CatalogTimeout time.Duration
}

// Engine is an engine with the store and catalog syncer it was built on.
type Engine struct {
	*engine.Engine
	Store *store.Store
	// Syncer is the engine's catalog syncer (engine.Config.Catalogs), the one every
	// catalog fetch uses: it refuses the brokers the engine's CheckBroker refuses.
	Syncer *catalogsync.Syncer
	// Now is the clock of the engine and the store.
	Now func() time.Time
}

// Engine builds the engine on the factory's cluster: its store, broker clients (with
// UseBrokerOptions), catalog syncer (with the engine's broker trust check), platform,
// workload projector, authorizer, trust policy, Event recorder and the test knobs' pause
// hook.
func (f *Factory) Engine(o EngineOptions) (*Engine, error) {
	core, meta, err := f.storeClients()
	if err != nil {
		return nil, err
	}
	knobs, err := f.TestKnobs()
	if err != nil {
		return nil, err
	}
	clients, err := f.BrokerClients(knobs.BrokerTimeout)
	if err != nil {
		return nil, err
	}
	cfg := engine.Config{
		Platform: kube.NewPlatformAs(core, f.CatalogNamespace, f.ClusterUser(core)), Holder: o.Holder,
		CatalogNamespace: f.CatalogNamespace, PollInterval: o.PollInterval, TargetCacheTTL: o.TargetCacheTTL,
		Unattended: o.Unattended,
		Projector:  kube.WorkloadProjector{P: &projection.Projector{Client: core}},
		Authorizer: engine.KubeAuthorizer{Core: core},
		Trust:      kube.ClusterTrust{Core: core, CatalogNamespace: f.CatalogNamespace, Reader: f.TrustReader(core)},
	}
	now := f.Now
	if o.TestKnobs {
		now = applyTestKnobs(knobs, now, &cfg)
	}
	storeOpts := append(f.StoreOptions(core), store.WithClock(now))
	if o.TestKnobs && knobs.ClockSkew != 0 {
		// A clock set ahead also counts claims as watched that much longer (claims are
		// judged by what the process saw of them, not by their stamps).
		storeOpts = append(storeOpts, store.WithClaimsSeenEarlier(knobs.ClockSkew))
	}
	st := store.New(core, meta, storeOpts...)
	var eng *engine.Engine
	syncer, err := f.catalogSyncer(st, core, clients, o.CatalogTimeout, now, func(ctx context.Context, b *v1alpha1.Broker) error {
		return eng.CheckBroker(ctx, b)
	})
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Brokers, cfg.Now, cfg.Catalogs = st, clients, now, syncer
	cfg.RefreshCatalog = func(ctx context.Context, b *v1alpha1.Broker) error {
		_, err := syncer.Sync(ctx, b)
		return err
	}
	if knobs.MitigationGrace > 0 {
		cfg.MitigationGrace = knobs.MitigationGrace
	}
	if p := knobs.PauseAt; p != "" {
		errOut := f.ErrOut
		cfg.Hook = func(ctx context.Context, point engine.HookPoint, op *v1alpha1.Operation) {
			if string(point) != p {
				return
			}
			what := "no operation"
			if op != nil {
				what = string(op.Type)
			}
			fmt.Fprintf(errOut, "test hook: paused at %s (%s)\n", point, what)
			<-ctx.Done()
		}
	}
	cfg.Events = kube.EventRecorder(core, o.Holder, o.EventWriters)
	f.addEventRecorder(cfg.Events)
	eng = engine.New(cfg)
	return &Engine{Engine: eng, Store: st, Syncer: syncer, Now: now}, nil
}

// catalogSyncer builds the engine's catalog syncer on its store: it calls brokers with
// clients, or with clients of their own when timeout is positive, and refuses the brokers
// check refuses. It is the only syncer the commands use.
func (f *Factory) catalogSyncer(st *store.Store, core kubernetes.Interface, clients *brokerclient.Factory, timeout time.Duration,
	now func() time.Time, check func(context.Context, *v1alpha1.Broker) error) (*catalogsync.Syncer, error) {
	if timeout > 0 {
		var err error
		if clients, err = f.BrokerClients(timeout); err != nil {
			return nil, err
		}
	}
	return catalogsync.New(st, clients, catalogsync.WithClock(now), catalogsync.WithCore(core), catalogsync.WithBrokerCheck(check),
		catalogsync.WithCatalogNamespace(f.CatalogNamespace)), nil
}

// applyTestKnobs applies the clock skew, retry backoff and claim TTL knobs.
func applyTestKnobs(k TestKnobs, now func() time.Time, cfg *engine.Config) func() time.Time {
	if k.ClockSkew != 0 {
		wall := now
		now = func() time.Time { return wall().Add(k.ClockSkew) }
	}
	if k.RetryBase > 0 {
		cfg.RetryBase, cfg.RetryMax = k.RetryBase, k.RetryMax
		cfg.MaxPollInterval = max(k.RetryMax, cfg.PollInterval)
	}
	if k.ClaimTTL > 0 {
		cfg.ClaimTTL = k.ClaimTTL
	}
	return now
}

// HolderName names this process in claims, unique per process lifetime
// (store.HolderName).
func HolderName(prefix string) string { return store.HolderName(prefix) }
