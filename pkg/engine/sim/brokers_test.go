package sim

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Brokers' lifecycle (one seed in eight, every seed with -sim.brokers; the choice has a
// random source of its own, so the other seeds keep their traces): an administrator registers a second cluster broker,
// beta, changes what it offers (plans added, removed and renamed, its class removed
// while instances use it and offered again), fetches its catalog with "sync broker",
// and deregisters it (now and then with --force) while dev's users provision, update,
// bind and deprovision instances of its class; reconcile fetches its catalog again
// when its relist interval is due. The tenant registers a namespace-scoped broker, own,
// in her namespace, provisions and deprovisions instances of its class there, syncs and
// deregisters it; dev's users try its class too. Catalogs are served to the real OSB
// client over an in-memory transport (a fetch pauses its process, and may fail), so
// register, sync, deregister and relists run the engine's own code (catalogsync) end
// to end. The engines call the brokers through a client that knows which broker record
// each call was made for.
//
// Checked besides, as each request reaches a broker: a request for a record goes
// through a namespace-scoped broker only when the record is of the broker's namespace;
// no request goes through a broker whose record was deleted (deregistered), unless it
// was deregistered with --force, which leaves its instances behind (and their calls
// written ahead, which the engine re-sends). Once the faults stopped: the broker holds no instance or binding first
// created through a broker whose record is gone, unless --force left it behind. Then
// the administrator registers beta again (as she would to deprovision what --force left
// behind), and every record must settle as in every world.

var brokersWorld = flag.Bool("sim.brokers", false, "register, sync and deregister brokers while records use them: a second cluster broker whose catalog changes, and a namespace-scoped broker of the tenant's")

// withBrokers reports whether seed registers, syncs and deregisters brokers.
func withBrokers(seed uint64) bool {
	r := rand.New(rand.NewPCG(seed^0xa4093822299f31d0, seed))
	return r.IntN(8) == 0 || *brokersWorld
}

const (
	betaName = "beta"
	betaHost = "beta.example"
	ownName  = "own"
	ownHost  = "own.example"
)

// brokerWorld is what the brokers' world keeps.
type brokerWorld struct {
	// offers are the services each broker host offers now; hidden, beta's services it
	// stopped offering (to offer again).
	offers map[string][]osb.Service
	hidden []osb.Service
	// ever are the plans beta ever offered, as last named.
	ever []osb.Plan
	seq  int
	// via is the broker ("namespace/name/uid") each OSB id was first created through.
	via map[string]string
	// forced are the brokers ("namespace/name/uid") a deregister with --force was run
	// on: what they leave behind is the user's to handle.
	forced map[string]bool
}

func yes() *bool { t := true; return &t }

func (w *world) setupBrokersWorld() {
	w.brokers = &brokerWorld{
		offers: map[string][]osb.Service{
			betaHost: {{Name: "cache", ID: "svc-cache", Description: "a cache", Bindable: true, PlanUpdateable: yes(),
				Plans: []osb.Plan{{ID: "plan-c1", Name: "c-small", Description: "small"}, {ID: "plan-c2", Name: "c-large", Description: "large"}}}},
			// The first broker offers what its class record says (broker_test.go).
			"broker.example": {{Name: "db", ID: classID, Description: "a database", Bindable: true, PlanUpdateable: yes(),
				BindingsRetrievable: w.rates.asyncBind,
				Plans:               []osb.Plan{{ID: planSmall, Name: "small", Description: "small"}, {ID: planLarge, Name: "large", Description: "large"}}}},
			ownHost: {{Name: "kv", ID: "svc-kv", Description: "a key-value store", Bindable: true,
				Plans: []osb.Plan{{ID: "plan-kv1", Name: "kv-1", Description: "one"}}}},
		},
		via: map[string]string{}, forced: map[string]bool{},
	}
	w.brokers.ever = slices.Clone(w.brokers.offers[betaHost][0].Plans)
	// Beta is registered as the seed starts, by an engine outside every process (its
	// fetch does not fail).
	w.faults = false
	defer func() { w.faults = true }()
	e := enginetest.New(w.checker, w.broker, func(c *engine.Config) {
		c.Now = func() time.Time { return w.t }
		w.configureBrokers(c, w.checker, func() *engine.Engine { return nil })
	})
	if _, err := e.RegisterBroker(context.Background(), engine.RegisterBrokerRequest{
		Name: betaName, URL: "https://" + betaHost, Scope: v1alpha1.ScopeCluster, Namespace: "dev",
	}); err != nil {
		panic(err)
	}
}

// configureBrokers gives an engine the catalog syncer the commands give theirs (over
// st, fetching catalogs through the world's transport) and the world's broker clients.
func (w *world) configureBrokers(c *engine.Config, st *store.Store, eng func() *engine.Engine) {
	clients := brokerclient.New(w.cluster.Core, brokerclient.WithTransport(catalogTransport{w}))
	check := func(ctx context.Context, b *v1alpha1.Broker) error {
		if e := eng(); e != nil {
			return e.CheckBroker(ctx, b)
		}
		return nil
	}
	c.Catalogs = catalogsync.New(st, clients, catalogsync.WithClock(c.Now), catalogsync.WithCore(w.cluster.Core),
		catalogsync.WithBrokerCheck(check), catalogsync.WithCatalogNamespace(storetest.CatalogNamespace),
		// One write at a time, in the process's goroutine: one seed, one interleaving.
		catalogsync.WithConcurrency(1),
		// A budget of the process's own: a fetch paused in one process (or one seed) never
		// makes another wait outside the simulation's scheduler.
		catalogsync.WithDecodeBudget(semaphore.NewWeighted(catalogsync.DecodeBudgetBytes), catalogsync.DecodeBudgetBytes))
	c.Brokers = simBrokers{w}
	// Reconcile keeps a broker's record and class for TargetCacheTTL of the simulation's
	// time (the wall clock moves a few milliseconds in a whole seed).
	c.TargetCacheClock = func() time.Time { return w.t }
}

// catalogTransport serves GET /v2/catalog of each broker host as the world offers it
// now. The fetch pauses its process (which may be killed there) and may fail.
type catalogTransport struct{ w *world }

func (t catalogTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := t.w
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	host := req.URL.Host
	status, body := http.StatusOK, ""
	if p := w.current(); p != nil {
		p.pause("broker GET catalog of " + host)
		if p.dead {
			return nil, errKilled
		}
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
	}
	services, ok := w.brokers.offers[host]
	switch {
	case !ok || req.URL.Path != "/v2/catalog":
		status, body = http.StatusNotFound, `{"description":"no such broker"}`
	case w.faulty():
		status, body = http.StatusInternalServerError, `{"description":"the catalog is unavailable"}`
		w.logf("%-14s broker GET catalog of %s: 500", w.procName(), host)
	default:
		if services == nil {
			services = []osb.Service{}
		}
		b, err := json.Marshal(osb.CatalogResponse{Services: services})
		if err != nil {
			panic(err)
		}
		body = string(b)
		w.logf("%-14s broker GET catalog of %s: 200 (%s)", w.procName(), host, describeOffers(services))
	}
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}, nil
}

func (w *world) procName() string {
	if p := w.current(); p != nil {
		return p.name
	}
	return "setup"
}

func describeOffers(services []osb.Service) string {
	var out []string
	for _, s := range services {
		var plans []string
		for _, p := range s.Plans {
			plans = append(plans, p.Name+"="+p.ID)
		}
		out = append(out, s.Name+"["+strings.Join(plans, " ")+"]")
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, " ")
}

// simBrokers gives each broker record a client of the world's broker that checks each
// request against the record it was made for.
type simBrokers struct{ w *world }

func (s simBrokers) ClientFor(_ context.Context, b *v1alpha1.Broker) (osb.Client, error) {
	if s.w.brokers == nil {
		return s.w.broker, nil
	}
	return viaClient{Client: s.w.broker, w: s.w, b: b.DeepCopy()}, nil
}

// viaClient is the world's broker, called for broker record b.
type viaClient struct {
	osb.Client
	w *world
	b *v1alpha1.Broker
}

func (c viaClient) Provision(ctx context.Context, r *osb.ProvisionRequest) (*osb.ProvisionResponse, error) {
	c.w.through(c.b, "PUT instance", r.InstanceID, true)
	return c.Client.Provision(ctx, r)
}

func (c viaClient) Update(ctx context.Context, r *osb.UpdateRequest) (*osb.UpdateResponse, error) {
	c.w.through(c.b, "PATCH instance", r.InstanceID, false)
	return c.Client.Update(ctx, r)
}

func (c viaClient) Deprovision(ctx context.Context, r *osb.DeprovisionRequest) (*osb.DeprovisionResponse, error) {
	c.w.through(c.b, "DELETE instance", r.InstanceID, false)
	return c.Client.Deprovision(ctx, r)
}

func (c viaClient) Bind(ctx context.Context, r *osb.BindRequest) (*osb.BindResponse, error) {
	c.w.through(c.b, "PUT binding", r.BindingID, true)
	return c.Client.Bind(ctx, r)
}

func (c viaClient) Unbind(ctx context.Context, r *osb.UnbindRequest) (*osb.UnbindResponse, error) {
	c.w.through(c.b, "DELETE binding", r.BindingID, false)
	return c.Client.Unbind(ctx, r)
}

// recordOf names the record p works on: reconcile's step's, or a verb's namespace.
func recordOf(p *proc) string {
	if p.record != "" {
		return p.record
	}
	return "in " + p.ns
}

func brokerKey(b *v1alpha1.Broker) string { return b.Namespace + "/" + b.Name + "/" + string(b.UID) }

// onNewCluster prefixes the key of a broker record of the move world's new cluster, whose
// uids are its own (move_test.go).
const onNewCluster = "new-cluster:"

// registered reports whether the broker record of key ("namespace/name/uid", prefixed
// with onNewCluster for one of the move world's new cluster) is there.
func (w *world) registered(key string) bool {
	checker := w.checker
	if k, ok := strings.CutPrefix(key, onNewCluster); ok {
		key, checker = k, w.move.checker
	}
	ns, rest, _ := strings.Cut(key, "/")
	name, uid, _ := strings.Cut(rest, "/")
	b, err := checker.Brokers().Get(context.Background(), ns, name)
	return err == nil && string(b.UID) == uid
}

// through checks a request for OSB id as it reaches the broker through broker record b;
// creates: a provision or a bind, new when its id was never sent before.
func (w *world) through(b *v1alpha1.Broker, what, id string, creates bool) {
	p := w.current()
	key := brokerKey(b)
	if p != nil && p.onNew() {
		key = onNewCluster + key
	}
	if b.Namespace != storetest.CatalogNamespace && p.recordNamespace() != b.Namespace {
		w.fail("%s %s for record %s (%s) went through broker %s/%s, a broker of another namespace", what, id, recordOf(p), p.name, b.Namespace, b.Name)
	}
	there := w.registered(key)
	if _, seen := w.brokers.via[id]; creates && !seen {
		w.brokers.via[id] = key
		// (A deregister with --force leaves its instances behind, and a call written
		// ahead before it may be sent after it: the engine re-sends what it cannot know
		// was not sent.)
		if !there && !w.brokers.forced[key] {
			w.fail("a new %s %s for record %s (%s) went through broker %s/%s after its record was deleted (deregistered)", what, id, recordOf(p), p.name, b.Namespace, b.Name)
		}
	}
	if !there && !w.brokers.forced[key] {
		w.fail("%s %s for record %s (%s) went through broker %s/%s after it was deregistered", what, id, recordOf(p), p.name, b.Namespace, b.Name)
	}
}

// brokersTask is a task of the brokers' world for process p, if it has one now: the
// administrator's always, a third of dev's users' and the tenant's.
func (w *world) brokersTask(p *proc, follow engine.Follow) (string, func(context.Context) error, bool) {
	e := p.eng
	switch {
	case p.name == "admin":
		name, task := w.adminTask(e)
		return name, task, true
	case p.ns == "dev" && w.rng.IntN(3) == 0:
		name, task := w.cacheTask(e, p.ns, follow)
		return name, task, true
	case p.ns == "t" && p.kind == verbs && w.rng.IntN(3) == 0:
		name, task := w.ownTask(e, follow)
		return name, task, true
	}
	return "", nil, false
}

// isRegistered reports whether broker name is recorded in ns now, and its key.
func (w *world) isRegistered(ns, name string) (string, bool) {
	b, err := w.checker.Brokers().Get(context.Background(), ns, name)
	if err != nil {
		return "", false
	}
	return brokerKey(b), true
}

// adminTask registers beta when it is not, else changes its catalog and syncs it, or
// deregisters it.
func (w *world) adminTask(e *engine.Engine) (string, func(context.Context) error) {
	key, there := w.isRegistered(storetest.CatalogNamespace, betaName)
	if !there {
		var relist time.Duration
		if w.rng.IntN(2) == 0 {
			relist = time.Minute
		}
		return "register " + betaName, func(ctx context.Context) error {
			_, err := e.RegisterBroker(ctx, engine.RegisterBrokerRequest{Name: betaName, URL: "https://" + betaHost,
				Scope: v1alpha1.ScopeCluster, Namespace: "dev", RelistInterval: relist})
			return err
		}
	}
	switch n := w.rng.IntN(8); {
	case n < 5:
		change := w.changeOffers()
		return change + ", then sync broker " + betaName, func(ctx context.Context) error {
			_, err := e.SyncBroker(ctx, engine.SyncBrokerRequest{Name: betaName, Scope: v1alpha1.ScopeCluster, Namespace: "dev",
				Confirm: func(engine.Vouch) error { return nil }})
			return err
		}
	default:
		force := n == 7
		return fmt.Sprintf("deregister %s (force: %t)", betaName, force), func(ctx context.Context) error {
			if force {
				w.brokers.forced[key] = true
			}
			_, err := e.Deregister(ctx, engine.DeregisterRequest{Name: betaName, Scope: v1alpha1.ScopeCluster, Namespace: "dev", Force: force})
			return err
		}
	}
}

// changeOffers changes what beta offers, as its operators might, and says how.
func (w *world) changeOffers() string {
	what := w.changeOffersOnce()
	for _, s := range w.brokers.offers[betaHost] {
		for _, p := range s.Plans {
			w.brokers.ever = slices.DeleteFunc(w.brokers.ever, func(q osb.Plan) bool { return q.ID == p.ID })
			w.brokers.ever = append(w.brokers.ever, p)
		}
	}
	return what
}

func (w *world) changeOffersOnce() string {
	bw := w.brokers
	svcs := bw.offers[betaHost]
	if len(svcs) == 0 {
		bw.offers[betaHost], bw.hidden = bw.hidden, nil
		return "beta offers its class again"
	}
	s := &svcs[0]
	bw.seq++
	switch w.rng.IntN(5) {
	case 0:
		id, name := fmt.Sprintf("plan-c%d", bw.seq+2), fmt.Sprintf("c-%d", bw.seq+2)
		s.Plans = append(slices.Clone(s.Plans), osb.Plan{ID: id, Name: name, Description: "added"})
		return "beta adds plan " + name + " (" + id + ")"
	case 1:
		if len(s.Plans) > 1 {
			i := w.rng.IntN(len(s.Plans))
			gone := s.Plans[i]
			s.Plans = slices.Delete(slices.Clone(s.Plans), i, i+1)
			return "beta removes plan " + gone.Name + " (" + gone.ID + ")"
		}
		return "beta keeps its only plan"
	case 2:
		i := w.rng.IntN(len(s.Plans))
		plans := slices.Clone(s.Plans)
		old := plans[i].Name
		plans[i].Name = fmt.Sprintf("c-%d", bw.seq+2)
		s.Plans = plans
		return "beta renames plan " + old + " to " + plans[i].Name
	case 3:
		bw.hidden, bw.offers[betaHost] = svcs, nil
		return "beta removes its class"
	}
	return "beta changes nothing"
}

// cachePlan is a plan name of beta's class for a user's command: one offered now,
// or now and then one it may no longer offer.
func (w *world) cachePlan() string {
	svcs := w.brokers.offers[betaHost]
	if len(svcs) == 0 || w.rng.IntN(5) == 0 {
		return []string{"c-small", "c-large"}[w.rng.IntN(2)]
	}
	plans := svcs[0].Plans
	return plans[w.rng.IntN(len(plans))].Name
}

// cacheTask is a dev user's task on an instance of beta's class, or an attempt at the
// class of the tenant's namespace-scoped broker.
func (w *world) cacheTask(e *engine.Engine, ns string, follow engine.Follow) (string, func(context.Context) error) {
	inst := []string{"cache-0", "cache-1"}[w.rng.IntN(2)]
	switch n := w.rng.IntN(100); {
	case n < 35:
		plan := w.cachePlan()
		return "provision " + inst + " (cache, " + plan + ")", func(ctx context.Context) error {
			_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: ns, Name: inst, Class: "cache", Plan: plan, Follow: follow})
			return err
		}
	case n < 50:
		plan := w.cachePlan()
		return "update " + inst + " to " + plan, func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Plan: plan}, Follow: follow})
			return err
		}
	case n < 75:
		return "deprovision " + inst, func(ctx context.Context) error {
			_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: ns, Name: inst, Follow: follow})
			return err
		}
	case n < 85:
		return "bind cache-app to " + inst, func(ctx context.Context) error {
			_, err := e.Bind(ctx, engine.BindRequest{Namespace: ns, Instance: inst, Name: "cache-app", Follow: follow})
			return err
		}
	case n < 92:
		return "unbind cache-app", func(ctx context.Context) error {
			_, err := e.Unbind(ctx, engine.UnbindRequest{Namespace: ns, Bindings: []string{"cache-app"}, Follow: follow})
			return err
		}
	}
	return "provision kv-dev (the tenant's class kv)", func(ctx context.Context) error {
		_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: ns, Name: "kv-dev", Class: "kv", Plan: "kv-1", Follow: follow})
		if err == nil {
			w.fail("dev's user provisioned kv-dev of class kv, which only a broker of namespace t offers")
		}
		return err
	}
}

// ownTask is the tenant's task on her namespace-scoped broker.
func (w *world) ownTask(e *engine.Engine, follow engine.Follow) (string, func(context.Context) error) {
	key, there := w.isRegistered("t", ownName)
	if !there {
		return "register " + ownName + " in t", func(ctx context.Context) error {
			_, err := e.RegisterBroker(ctx, engine.RegisterBrokerRequest{Name: ownName, URL: "https://" + ownHost,
				Scope: v1alpha1.ScopeNamespace, Namespace: "t"})
			return err
		}
	}
	inst := []string{"kv-0", "kv-1"}[w.rng.IntN(2)]
	switch n := w.rng.IntN(100); {
	case n < 40:
		return "provision " + inst + " (kv)", func(ctx context.Context) error {
			_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: "t", Name: inst, Class: "kv", Plan: "kv-1", Follow: follow})
			return err
		}
	case n < 70:
		return "deprovision " + inst, func(ctx context.Context) error {
			_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: "t", Name: inst, Follow: follow})
			return err
		}
	case n < 80:
		return "sync broker " + ownName, func(ctx context.Context) error {
			_, err := e.SyncBroker(ctx, engine.SyncBrokerRequest{Name: ownName, Scope: v1alpha1.ScopeNamespace, Namespace: "t",
				Confirm: func(engine.Vouch) error { return nil }})
			return err
		}
	}
	force := w.rng.IntN(3) == 0
	return fmt.Sprintf("deregister %s (force: %t)", ownName, force), func(ctx context.Context) error {
		if force {
			w.brokers.forced[key] = true
		}
		_, err := e.Deregister(ctx, engine.DeregisterRequest{Name: ownName, Scope: v1alpha1.ScopeNamespace, Namespace: "t", Force: force})
		return err
	}
}

// quiesceBrokers checks, once every process finished, that the broker holds nothing
// first created through a broker whose record is gone (but what --force left behind),
// and registers beta again if it is not, so that its records can settle.
func (w *world) quiesceBrokers() {
	if w.brokers == nil || !w.brokersOn { // (the upgrade world serves acme's catalog only)
		return
	}
	for _, id := range slices.Sorted(maps.Keys(w.brokers.via)) {
		key := w.brokers.via[id]
		if w.registered(key) || w.brokers.forced[key] || w.liedGone(id) { // simrogue_test.go
			continue
		}
		if h, ok := w.ledger.Instance(id); ok {
			w.fail("the broker holds instance %s (namespace %s), provisioned through broker %s, whose record is gone: nobody can deprovision it (answers: %s)", id, h.Namespace, key, w.answersFor(id))
		}
		if h, ok := w.ledger.Binding(id); ok {
			w.fail("the broker holds binding %s (namespace %s), bound through broker %s, whose record is gone: nobody can unbind it (answers: %s)", id, h.Namespace, key, w.answersFor(id))
		}
	}
	// The administrator makes beta offer every plan it ever offered again, and registers
	// it again, or takes back the mark of a deregister that was interrupted or refused
	// (as its records' conditions tell her) and syncs it.
	bw := w.brokers
	if len(bw.offers[betaHost]) == 0 {
		bw.offers[betaHost], bw.hidden = bw.hidden, nil
	}
	svc := &bw.offers[betaHost][0]
	plans := slices.Clone(svc.Plans)
	for _, p := range bw.ever {
		if !slices.ContainsFunc(plans, func(q osb.Plan) bool { return q.ID == p.ID }) {
			plans = append(plans, p)
		}
	}
	svc.Plans = plans
	var admin *proc
	for _, p := range w.procs {
		if p.name == "admin" {
			admin = p
		}
	}
	e, st := admin.eng, admin.st
	w.begin(admin, "bring "+betaName+" back", func(ctx context.Context) error {
		if _, there := w.isRegistered(storetest.CatalogNamespace, betaName); !there {
			_, err := e.RegisterBroker(ctx, engine.RegisterBrokerRequest{Name: betaName, URL: "https://" + betaHost, Scope: v1alpha1.ScopeCluster, Namespace: "dev"})
			return err
		}
		if _, err := st.Brokers().UpdateWithRetry(ctx, storetest.CatalogNamespace, betaName, func(cur *v1alpha1.Broker) error {
			delete(cur.Annotations, store.AnnotationDeregistering)
			return nil
		}); err != nil {
			return err
		}
		_, err := e.SyncBroker(ctx, engine.SyncBrokerRequest{Name: betaName, Scope: v1alpha1.ScopeCluster, Namespace: "dev",
			Confirm: func(engine.Vouch) error { return nil }})
		return err
	})
	for admin.alive && !w.stuck {
		w.t = w.t.Add(time.Second)
		w.landLateWork(false)
		w.run(admin)
	}
}
