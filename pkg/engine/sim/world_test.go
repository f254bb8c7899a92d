package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/ahead"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile/shard"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// A world is one run of the simulation: a fake API server, a fake broker, processes that
// drive records, and one random source deciding everything (which process moves next,
// which request fails, how clocks move). Processes are goroutines, but only one runs at
// a time: each runs until it reaches an API request, a broker call or a sleep, hands
// control back to the scheduler there, and waits to be resumed. So one seed gives one
// interleaving, one trace.
type world struct {
	seed    uint64
	rng     *rand.Rand
	t       time.Time // the simulation's time; processes read it with their own skew
	cluster *storetest.Cluster
	checker *store.Store // reads records for the invariants, outside every process
	broker  *fake.Client
	ledger  *fake.Ledger
	procs   []*proc
	running *proc
	events  chan event
	trace   []string
	faults  bool
	rates   rates
	// book is what the broker was asked and answered for each OSB id (rogue_test.go).
	book  *idBook
	steps int
	// late is work the broker still does for callers that stopped waiting.
	late     []*lateWork
	ops      map[string]*asyncOp
	opSeq    int
	failures []string
	streaks  map[string]*streak
	// oversized are the OSB ids whose answers carry a field over its limit, every time.
	oversized map[string]bool
	// claimTTL is every process's ClaimTTL: the default, or (some seeds) shorter than
	// the broker client's timeout, as KUBECTL_CATALOG_TEST_CLAIM_TTL may set it.
	claimTTL time.Duration
	// unguarded are ids whose caller gave up a call because its claim could not be
	// renewed (the API server failed it for most of the claim) while the broker goes on
	// past the claim (one shorter than the client's timeout): a later request for the id
	// may overlap that work until the time given.
	unguarded map[string]time.Time
	// wrote: a process wrote to the API server since the last check; written are the
	// ConfigMaps ("namespace/name") it wrote, the records the check reads again.
	wrote   bool
	written map[string]bool
	// params are the parameters the broker holds for each instance id (heldplan_test.go).
	params map[string]map[string]any
	// stuck: the seed went on for ever (maxTrace); its loops end.
	stuck bool
	// kube is what Kubernetes' controllers keep (kube_test.go).
	kube kubeState
	// grants are the namespaces each instance was ever shared with (crossns_test.go).
	grants crossGrants
	// edited are the records ("namespace/name") team-b's user forged.
	edited map[string]bool
	// forgedIDs are the OSB ids team-b's user wrote into his records' statuses, by
	// ConfigMap ("namespace/configmap id", simmisc_test.go).
	forgedIDs map[string]bool
	// last is the process that moved last; abandoned, the ids records held when an
	// --abandon dropped them (abandon_test.go).
	last      *proc
	abandoned map[string]bool
	// abandonedRecords are the records (ConfigMaps, namespace/name) an --abandon dropped.
	abandonedRecords map[string]bool
	// abandonedSecrets are the Secrets (namespace/name) an --abandon deleted (abandon_secret_test.go).
	abandonedSecrets map[string]bool
	// workloadWrites counts the workload writes that landed (workloads_test.go).
	workloadWrites int
	// releases is what the processes of other releases hold (release_test.go).
	releases releaseState
	// fromSecret is what the Secret of parameters held (paramsecret_test.go).
	fromSecret paramState
	// upSourceVersion is the resourceVersion its user left on Secret up-src (upcreds_test.go).
	upSourceVersion string
	// brokersOn: brokers are registered, synced and deregistered in this seed, and
	// brokers is what that world keeps (brokers_test.go; nil without it).
	brokersOn bool
	brokers   *brokerWorld
	// limitsOn: instances' limits change in this seed; limits are what each instance's
	// specs allowed, bindingInstance the instance of each binding id bound (limits_test.go).
	limitsOn        bool
	limits          map[string]*limitHistory
	bindingInstance map[string]string
	bindingSeen     map[string]int
	// recorded are the Events the processes' engines recorded (events_test.go).
	recorded []recordedEvent
	// trust is what the trust policy's world keeps (trust_test.go; nil without it).
	trust *trustState
	// staticShardsOn: the reconcile replicas run with a static --shard each; steppedBy is
	// the shard that stepped each record (staticshard_test.go).
	staticShardsOn bool
	steppedBy      map[string]int
	// upgradeOn: plans have maintenance versions that move on in this seed; upgrade is
	// what the broker keeps of them (upgrade_test.go).
	upgradeOn bool
	upgrade   upgradeState
	// migrateOn: svcat's objects are served and migrated in this seed; migration is what
	// that world keeps (migrate_test.go).
	migrateOn bool
	migration migrateState
	// rebind is what the rebind world follows (rebind_test.go).
	rebind rebindState
	// move is what the move world keeps: the new cluster and the moves (move_test.go).
	move moveState
	// listingTurns counts the draws of full passes that step records while their list
	// is read: the list's turn first, the steps' first (aslisted_test.go).
	listingTurns [2]int
	// gateRng draws the verbs' --timeout (callgate_test.go).
	gateRng     *rand.Rand
	gateReached gateReached
	// pids is the last pid given on each person's machine; takeovers counts the claims
	// of ended processes taken over (takeover_test.go).
	pids      map[string]int
	takeovers int
	// rot is what the world keeps of binding lifetimes and scheduled rotations
	// (rotatedue_test.go).
	rot rotationState
}

// rates are one seed's chances of each fault, in percent.
type rates struct {
	apiFault, kill, interrupt, brokerFault, late, jump, tenant int
	// slow: calls the broker answers only after longer than the claim (up to the
	// client's timeout), the caller waiting for the answer meanwhile.
	slow int
	// outage: the broker's failures are all 500s (retried), as when it is down.
	outage bool
	// rogue: answers off the OSB spec (rogue_test.go); 0 for most seeds.
	rogue int
	// asyncBind: the broker binds and unbinds asynchronously (asyncbind_test.go).
	asyncBind bool
}

type event struct {
	p     *proc
	done  bool
	panic string
}

// proc is a process: a verb run by a user, a reconcile replica, or a tenant editing
// records; each has its own store (and cache), engine, holder name and clock.
type proc struct {
	w    *world
	name string
	kind kind
	ns   string
	// sees are the namespaces where the process's user may list and write records; nil:
	// every namespace (reconcile's ServiceAccount, an administrator).
	sees  []string
	gen   int
	skew  time.Duration
	eng   *engine.Engine
	st    *store.Store
	ctx   context.Context
	stop  context.CancelFunc
	dead  bool // killed (SIGKILL): nothing it sends reaches the API server or broker
	alive bool // has a task under way
	task  string
	// record is the record the process is working on (for invariant 6).
	record   string
	resume   chan struct{}
	sleeps   int
	atBroker bool
	// inCall: the process has a broker call in flight; it is resumed at every step
	// with tick set, as the timer that renews its claim during the call would fire.
	inCall, tick bool
	// rec is a reconcile process's reconciler (reconcile_test.go), kept from run to run
	// until the process ends; timers are its runs' AfterFunc timers, and waiting is when
	// its run waits for (the next queued record's step), zero when it does not wait.
	rec     *reconcile.Reconciler
	timers  []*runTimer
	waiting time.Time
	// apiFaults counts the API server's faults and refusals the process met.
	apiFaults int
	// group is a reconcile process's membership of the shard group (shards_test.go),
	// made for its lifetime groupGen.
	group    *shard.Group
	groupGen int
	// gate is the signal handling of a process that runs commands (callgate_test.go).
	gate *gate
	// cluster is the API server of the process's cluster: nil for the world's, the new
	// cluster of the move world for its processes there (move_test.go).
	cluster *storetest.Cluster
	// process is the process of its lifetime, as its claims name it (takeover_test.go).
	process *store.Process
	// view is its engine's view of the trust policy's state (renew_test.go).
	view *trustView
	// runs counts a reconcile process's runs; clockHigh is the latest its clock read
	// during the current one (rotatedue_test.go).
	runs      int
	clockHigh time.Time
	rotating  bool
}

type kind int

const (
	verbs kind = iota
	reconciler
	tenant
)

var errKilled = errors.New("sim: the process was killed")

func newWorld(seed uint64) *world {
	w := &world{
		seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		t:      time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		events: make(chan event), faults: true, ops: map[string]*asyncOp{}, streaks: map[string]*streak{}, oversized: map[string]bool{},
		unguarded: map[string]time.Time{}, written: map[string]bool{}, params: map[string]map[string]any{}, grants: crossGrants{}, edited: map[string]bool{}, forgedIDs: map[string]bool{}, abandoned: map[string]bool{}, abandonedRecords: map[string]bool{},
	}
	w.rates = rates{
		apiFault: w.pick(0, 3, 8), kill: w.pick(0, 2, 5), interrupt: w.pick(0, 2, 5),
		brokerFault: w.pick(0, 15, 35, 80), outage: w.pick(0, 0, 0, 1) == 1, late: w.pick(0, 30, 60), jump: w.pick(0, 0, 2), tenant: w.pick(0, 20, 50),
	}
	if w.rates.outage {
		w.rates.brokerFault = 90
	}
	w.rates.slow = w.pick(0, 10, 30)
	w.gateRng = newGateRand(seed)
	w.rot = newRotationState(seed)
	w.rates.rogue = rogueRate(seed)
	w.rates.asyncBind = asyncBinding(seed)
	w.brokersOn = withBrokers(seed)
	w.limitsOn, w.limits, w.bindingInstance, w.bindingSeen = withLimits(seed), map[string]*limitHistory{}, map[string]string{}, map[string]int{}
	w.staticShardsOn = withStaticShards(seed)
	w.upgradeOn = withUpgrade(seed)
	w.migrateOn = withMigrate(seed)
	w.book = w.newBook()
	w.rebind = newRebindState(seed)
	if w.rebind.on {
		// Rotations under limits (limits_test.go).
		w.limitsOn = true
	}
	w.claimTTL = time.Duration(w.pick(120, 120, 30)) * time.Second
	w.cluster = storetest.NewCluster()
	w.cluster.SetClock(func() time.Time { return w.t })
	w.checker = w.cluster.Store(store.WithClock(func() time.Time { return w.t }))
	w.broker = fake.New()
	w.ledger = fake.NewLedger()
	w.setupBroker()
	w.setupCatalog()
	w.setupKube()
	w.setupTrust()
	w.procs = []*proc{
		w.newProc("alice", verbs, "dev"),
		// alice2 and bob may list and write records only in their own namespace.
		w.newProc("alice2", verbs, "dev", "dev"),
		w.newProc("bob", verbs, "team-b", "team-b"),
		w.newProc("mallory", verbs, "t"),
		w.newProc("mallory-edits", tenant, "t"),
		w.newProc("reconcile-1", reconciler, ""),
		w.newProc("reconcile-2", reconciler, ""),
	}
	if *crossNamespace {
		w.procs = append(w.procs, w.newProc("bob-edits", tenant, "team-b", "team-b"))
	}
	w.addHandReconcile() // takeover_test.go
	w.addModelProcs()
	w.addTrustProcs()
	if w.brokersOn {
		w.setupBrokersWorld()
		w.procs = append(w.procs, w.newProc("admin", verbs, ""))
	}
	w.setupUpgrade()
	w.setupMigrate()
	w.setupMove()
	return w
}

// pick returns one of the values, chosen by the seed.
func (w *world) pick(vs ...int) int { return vs[w.rng.IntN(len(vs))] }

func (w *world) chance(percent int) bool { return w.rng.IntN(100) < percent }

type rngReader struct{ w *world }

func (r rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.w.rng.Uint32())
	}
	return len(p), nil
}

func (w *world) rngReader() rngReader { return rngReader{w} }

func (w *world) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%5d %s ", w.steps, w.t.Format("15:04:05"))+fmt.Sprintf(format, args...))
	if len(w.trace) > maxTrace && !w.stuck {
		// A seed whose processes go on for ever: reconcile never ends a run, say.
		w.stuck = true
		w.fail("the simulation made no progress: %d lines of trace; %s", len(w.trace), w.unsettled())
	}
}

// maxTrace bounds a seed's trace: a seed of the default steps writes a few thousand
// lines.
const maxTrace = 200_000

func (w *world) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.logf("INVARIANT: %s", msg)
	w.failures = append(w.failures, msg)
}

func (w *world) newProc(name string, k kind, ns string, sees ...string) *proc {
	p := &proc{w: w, name: name, kind: k, ns: ns, sees: sees, resume: make(chan struct{})}
	p.reset()
	return p
}

// reset starts the process again (after it was killed or ended): a new holder name, a
// new store and engine, a new context.
func (p *proc) reset() {
	p.gen++
	p.dead = false
	p.newProcess() // takeover_test.go
	p.timers = nil
	// Reads the engine starts ahead run in the process's goroutine, at their start or at
	// their first wait as the seed decides, so that one seed is still one interleaving.
	p.ctx, p.stop = context.WithCancel(ahead.WithSchedule(context.Background(), func() bool { return p.w.rng.IntN(2) == 0 }))
	p.ctx = p.withGate(p.ctx) // callgate_test.go
	// The store stamps the process's user as the author of each spec it writes. Its
	// claims are timed by the process's monotonic clock, the simulation's time since the
	// process started, which no setting of its wall clock (skew) moves.
	tr := p.trustReader()
	p.view = tr
	cl := p.w.cluster
	if p.cluster != nil {
		cl = p.cluster // the new cluster of the move world (move_test.go)
	}
	p.st = store.New(simClient{Interface: cl.Core, p: p}, cl.Metadata, append([]store.Option{store.WithClock(p.now),
		store.WithMonotonicClock(p.monotonic()), store.WithIdentity(p.identity), store.WithProcesses(p.processes())},
		p.trustStore(tr)...)...)
	p.eng = enginetest.New(p.st, p.w.broker, func(c *engine.Config) {
		c.Holder = p.holderName()
		if p.reconciles() {
			// As "kubectl catalog reconcile" configures its engine.
			c.Unattended, c.TargetCacheTTL = true, reconcile.TargetCacheTTL
		}
		c.Platform = engine.StaticPlatform{Cluster: enginetest.Cluster, User: &osb.OriginatingIdentity{Username: p.user(), UID: "u-" + p.user()}}
		p.configureTrust(c, tr)
		c.Now = p.now
		c.Jitter = p.w.rng.Float64
		c.Sleep = p.sleep
		if p.gated() {
			c.AfterFunc, c.Hook = p.afterFunc, p.gateHook // callgate_test.go
		}
		// OSB ids and request ids come from the seed too, so a trace names the same ids.
		c.IDs = p.w.rngReader()
		c.ClaimTTL = p.w.claimTTL
		c.Events = simEvents{p}
		if workloadsOn() {
			c.Projector = p.projector(cl) // workloads_test.go
		}
		if p.w.brokersOn {
			p.w.configureBrokers(c, p.st, func() *engine.Engine { return p.eng })
		}
		p.w.configureUpgrade(c, p.st, func() *engine.Engine { return p.eng }) // upgrade_test.go
		p.configureMove(c)                                                    // move_test.go
	})
	if p.reconciles() {
		p.rec = (&reconcile.Reconciler{Store: p.st, Engine: p.eng, Now: p.now, Logf: func(format string, args ...any) {
			p.w.logf("%-14s %s", p.name, firstLine(fmt.Sprintf(format, args...)))
		}}).WithRunClock(runClock{p})
	}
}

func (p *proc) now() time.Time { return p.w.t.Add(p.skew) }

// monotonic is a monotonic clock of the process started now: the simulation's time
// elapsed since, whatever its wall clock's skew does.
func (p *proc) monotonic() func() time.Duration {
	start := p.w.t
	return func() time.Duration { return p.w.t.Sub(start) }
}

// pause hands control back to the scheduler at where, until the process is resumed.
func (p *proc) pause(where string) {
	p.w.logf("%-14s %s", p.name, where)
	p.w.events <- event{p: p}
	<-p.resume
	p.fireTimers()
}

// quietPause hands control back like pause, without a line in the trace: a process
// waiting for the broker, resumed for its renewal timer.
func (p *proc) quietPause() {
	p.w.events <- event{p: p}
	<-p.resume
	p.fireTimers()
}

// sleep is the engine's wait between steps of a drive: other processes move meanwhile.
// A --wait runs out after a few sleeps.
func (p *proc) sleep(ctx context.Context, d time.Duration) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if p.dead {
		return errKilled
	}
	p.pause(fmt.Sprintf("sleep %s", d.Round(time.Millisecond)))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if p.dead {
		return errKilled
	}
	if p.sleeps--; p.sleeps < 0 && !p.reconciles() {
		// (A reconcile step that drives a record, as a rebind drives its bindings,
		// sleeps between immediate steps as long as it needs: it has no --wait.)
		return context.DeadlineExceeded
	}
	return nil
}

// start runs task in the process's goroutine until its first pause.
func (p *proc) start(name string, task func(ctx context.Context) error) {
	p.alive, p.task = true, name
	p.w.trustTaskStarted(p)
	p.sleeps = p.w.pick(0, 3, 20)
	p.w.logf("%-14s begins %s", p.name, name)
	go func() {
		ev := event{p: p, done: true}
		defer func() {
			if r := recover(); r != nil {
				ev.panic = fmt.Sprintf("%v\n%s", r, debug.Stack())
			}
			p.w.events <- ev
		}()
		if err := task(p.ctx); err != nil {
			p.w.logf("%-14s %s: %s", p.name, name, firstLine(err.Error()))
		}
	}()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// run resumes p (or starts a task) and waits for its next pause or its end.
func (w *world) run(p *proc) {
	if !p.alive {
		name, task := w.taskFor(p)
		w.begin(p, name, task)
		return
	}
	w.running = p
	if now := p.now(); now.After(p.clockHigh) {
		p.clockHigh = now
	}
	p.resume <- struct{}{}
	w.await(p)
}

// begin starts a task in p and waits for its first pause or its end.
func (w *world) begin(p *proc, name string, task func(context.Context) error) {
	w.renewViewStale(p) // renew_test.go
	w.running = p
	p.start(name, task)
	w.await(p)
}

func (w *world) await(p *proc) {
	ev := <-w.events
	w.running = nil
	if ev.panic != "" {
		w.fail("process %s panicked in %s (record %s): %s", p.name, p.task, p.record, ev.panic)
	}
	if ev.done {
		w.checkGateEnd(p)
		p.alive = false
		p.record = ""
		w.logf("%-14s ends %s", p.name, p.task)
		// A reconcile replica goes on with its next run, the same process, unless it
		// was killed or stopped: it then restarts.
		if p.kind != reconciler || p.ctx.Err() != nil {
			p.reset()
		}
		p.timers = nil
	}
}

// step is one move of the simulation: time passes, late broker work lands, and one
// process moves (perhaps killed or interrupted first).
func (w *world) step() {
	w.steps++
	// The fake clientset records every request it serves, with a copy of each object
	// written, for as long as the world lives; nothing here reads them, and keeping them
	// costs the garbage collector more at each step.
	w.cluster.Core.ClearActions()
	w.advance()
	w.landLateWork(false)
	w.kubeStep(false)
	w.upgradeStep()
	w.renewStep() // renew_test.go
	w.tick()
	p := w.procs[w.rng.IntN(len(w.procs))]
	// A claim shorter than the client's timeout cannot keep others away from the request
	// of a process that stops waiting for it (nothing renews the claim while the broker
	// goes on, docs/engine.md): such seeds kill or interrupt no process during a call.
	if p.alive && w.faults && !(p.inCall && w.claimTTL < callTimeout) {
		// A process waiting for the broker is where a kill or an interruption hurts
		// most: it is made more likely there.
		boost := 1
		if p.atBroker {
			boost = 6
		}
		switch {
		case w.chance(w.rates.kill * boost):
			w.logf("%-14s KILLED", p.name)
			p.dead = true
			p.stop()
		case w.chance(w.rates.interrupt * boost):
			p.interrupt() // callgate_test.go
		}
	}
	w.run(p)
	w.last = p
	if w.wrote {
		w.wrote = false
		w.checkStep()
		w.checkAuthors()
	}
}

// tick resumes every process with a broker call in flight, as the timer that renews its
// claim during the call fires.
func (w *world) tick() {
	for _, q := range w.procs {
		if q.alive && q.inCall {
			q.tick = true
			w.run(q)
		}
	}
}

// advance moves time, and now and then a process's clock.
func (w *world) advance() {
	var d time.Duration
	switch n := w.rng.IntN(100); {
	case n < 70:
		d = time.Duration(w.rng.IntN(2000)) * time.Millisecond
	case n < 95:
		d = time.Duration(2+w.rng.IntN(30)) * time.Second
	default:
		d = time.Duration(1+w.rng.IntN(11)) * time.Minute
	}
	// While a call is in flight, time moves at most one period of the renewal timer per
	// step, so that the timer fires as it would.
	for _, p := range w.procs {
		if p.inCall {
			d = min(d, w.claimTTL/6)
		}
	}
	w.t = w.t.Add(d)
	if !w.faults || !w.chance(5) {
		return
	}
	p := w.procs[w.rng.IntN(len(w.procs))]
	// Clocks differ by up to a sixth of the claim (20 s for the default); with
	// -sim.skew by up to the skew the engine tolerates (store.MaxClockSkew), and now and
	// then one jumps there. No invariant is relaxed for it.
	most := int(w.claimTTL / 6 / time.Second)
	if *wideSkew {
		// The skew the engine tolerates is between two clocks (store.MaxClockSkew: how
		// far a reader's clock may be ahead of a claim's writer's): each clock is at
		// most half of it off the simulation's time, so two differ by up to all of it.
		most = int(store.MaxClockSkew / 2 / time.Second)
	}
	p.skew = time.Duration(w.rng.IntN(2*most+1)-most) * time.Second
	if w.chance(w.rates.jump * 10) {
		p.skew = time.Duration(most) * time.Second
		if w.rng.IntN(2) == 0 {
			p.skew = -p.skew
		}
	}
	w.logf("%-14s clock skew now %s", p.name, p.skew)
	if *wideSkew {
		// The model stays within the skew the engine says it tolerates.
		for _, q := range w.procs {
			if d := p.skew - q.skew; d > store.MaxClockSkew || -d > store.MaxClockSkew {
				w.fail("the model's clocks of %s and %s differ by %s, more than store.MaxClockSkew (%s)", p.name, q.name, d, store.MaxClockSkew)
			}
		}
	}
}

// quiesce stops the faults, lets every process finish what it does, and runs reconcile
// until nothing is pending (or gives up).
func (w *world) quiesce() {
	w.faults = false
	w.logf("faults stop")
	for _, p := range w.procs {
		for p.alive && !w.stuck {
			w.t = w.t.Add(time.Second)
			if w.t.Before(p.waiting) && !p.inCall {
				w.t = p.waiting
			}
			w.landLateWork(false)
			w.tick()
			if p.alive {
				w.run(p)
				w.last = p
				w.checkRebindsQuiescing()
				w.noteQuiescentRotations(p) // rotatedue_test.go
				if w.wrote && w.abandoning() {
					// What an --abandon drops is noted (abandon_test.go).
					w.wrote = false
					w.checkStep()
				}
			}
		}
		p.skew = 0
	}
	w.landLateWork(true)
	w.quiesceBrokers()
	for round := 0; round < 40; round++ {
		w.t = w.t.Add(11 * time.Minute)
		w.landLateWork(true)
		w.kubeStep(true)
		w.modelQuiesce()
		w.adoptStranded() // renew_test.go
		w.quiesceUpgrade()
		w.quiesceMigrate()
		w.quiesceMove()
		// The last replica, or one of each static shard in turn (staticshard_test.go).
		for _, r := range w.quiescers() {
			w.begin(r, "reconcile (quiescence)", func(ctx context.Context) error { return r.reconcileRun(ctx, true) })
			for r.alive && !w.stuck {
				// Nothing else moves: time goes to when the run waits for.
				if w.t.Before(r.waiting) {
					w.t = r.waiting
				}
				w.landLateWork(false)
				w.run(r)
				w.checkRebindsQuiescing()
				w.noteQuiescentRotations(r) // rotatedue_test.go
			}
		}
		w.kubeStep(true)
		w.rot.quiescing = false
		if w.stuck {
			return
		}
		if w.settled() && !w.upgradeLeft() && !w.rotateAtQuiescence() { // rotatedue_test.go
			return
		}
	}
}
