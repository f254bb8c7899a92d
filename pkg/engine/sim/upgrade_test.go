package sim

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Maintenance upgrades in the simulation (-sim.upgrade, and one seed in eight): the
// plans of broker acme have a maintenance_info version, and a maintainer (an
// administrator's process) moves a plan's version on at the broker now and then (its
// catalog says so at once), fetches acme's catalog with "sync broker", and runs
// "update --upgrade" on dev's instances, while dev's users provision, update, revert
// and deprovision them and reconcile drives them. The catalog is served to the real OSB
// client over the world's in-memory transport (brokers_test.go), so "sync broker", the
// engine's re-fetch after a MaintenanceInfoConflict (Config.RefreshCatalog, set as the
// commands set it) and reconcile's relists run catalogsync; until one of them runs, the
// class records name the version before.
//
// The broker, as the OSB spec has it: a provision or update that names a
// maintenance_info version other than its plan's current one is answered 422
// MaintenanceInfoConflict and changes nothing; a provision holds the instance at the
// version it names (the plan's current one when it names none); an update that names
// one moves the instance to it; a plan change that names none leaves the instance's
// version as it was.
//
// Checked at quiescence (before which the maintainer fetches the catalog once more,
// and, as the person the UpdateMaintenanceInfoConflict condition asks for, runs
// "update --upgrade" again on an instance whose spec asks for a version its plan no
// longer offers): every instance of dev settled as ready (its ids answered on the spec)
// is held by the broker at the maintenance version its status.provisioned says, and,
// unless its last update was refused (UpdateFailed), at the version its spec asks for
// (when it asks for one). So a PATCH the broker refused as stale never settles as
// upgraded, and one it applied is never forgotten. Every other invariant (one request
// in flight per id, the plan and parameters held with -sim.heldplan) is checked as in
// every world.
var upgradeWorld = flag.Bool("sim.upgrade", false, "give the broker's plans maintenance_info versions that move on during the run, and run sync broker and update --upgrade while records use them")

// withUpgrade reports whether a seed models maintenance upgrades: one seed in eight, or
// every seed with -sim.upgrade.
func withUpgrade(seed uint64) bool {
	r := rand.New(rand.NewPCG(seed^0x452821e638d01377, seed))
	return r.IntN(8) == 0 || *upgradeWorld
}

// upgradeState is what the broker keeps of maintenance versions.
type upgradeState struct {
	// current is each plan's maintenance version at the broker now (its catalog's).
	current map[string]int
	// held is the maintenance version the broker holds each instance at.
	held map[string]string
	// quiesced: the maintainer upgraded every instance once the faults stopped.
	quiesced bool
	// upgradedAtEnd are the instances (uids) the maintainer's upgrade at the window's
	// end was sent for: one busy then (an update left in flight) is upgraded in a later
	// round.
	upgradedAtEnd map[string]bool
}

func maintenanceVersion(n int) string { return fmt.Sprintf("1.%d.0", n) }

const maintainerName = "maintainer"

// acmeService is what broker acme offers: its class record's service (broker_test.go).
func (w *world) acmeService() osb.Service {
	s := osb.Service{Name: "db", ID: classID, Description: "a database", Bindable: true, PlanUpdateable: yes(),
		BindingsRetrievable: w.rates.asyncBind,
		Plans:               []osb.Plan{{ID: planSmall, Name: "small", Description: "small"}, {ID: planLarge, Name: "large", Description: "large"}}}
	for i := range s.Plans {
		if !w.upgradeOn {
			break
		}
		s.Plans[i].MaintenanceInfo = &osb.MaintenanceInfo{Version: maintenanceVersion(w.upgrade.current[s.Plans[i].ID])}
	}
	return s
}

// setupUpgrade gives acme's plans their first maintenance version, at the broker and in
// the class record, and adds the maintainer.
func (w *world) setupUpgrade() {
	if !w.upgradeOn {
		return
	}
	w.upgrade = upgradeState{current: map[string]int{planSmall: 1, planLarge: 1}, held: map[string]string{}, upgradedAtEnd: map[string]bool{}}
	if w.brokers == nil {
		w.brokers = &brokerWorld{offers: map[string][]osb.Service{}, via: map[string]string{}, forced: map[string]bool{}}
	}
	w.brokers.offers["broker.example"] = []osb.Service{w.acmeService()}
	ctx := context.Background()
	if _, err := w.checker.Classes().UpdateWithRetry(ctx, storetest.CatalogNamespace, v1alpha1.ClassRecordName(brokerName, classID), func(c *v1alpha1.ServiceClass) error {
		for i := range c.Spec.Plans {
			c.Spec.Plans[i].MaintenanceInfo = &v1alpha1.MaintenanceInfo{Version: maintenanceVersion(1)}
		}
		return nil
	}); err != nil {
		panic(err)
	}
	w.procs = append(w.procs, w.newProc(maintainerName, modelProc, ""))
}

// configureUpgrade gives an engine of the upgrade world the catalog syncer and broker
// clients of the brokers' world, and the re-fetch after a MaintenanceInfoConflict the
// commands give theirs (cmdutil).
func (w *world) configureUpgrade(c *engine.Config, st *store.Store, eng func() *engine.Engine) {
	if !w.upgradeOn {
		return
	}
	if !w.brokersOn {
		w.configureBrokers(c, st, eng)
	}
	syncer := c.Catalogs
	c.RefreshCatalog = func(ctx context.Context, b *v1alpha1.Broker) error {
		_, err := syncer.Sync(ctx, b)
		return err
	}
}

// upgradeStep is the broker's own releases: at any step (one in twenty-five, while
// the faults last) a plan moves on to its next maintenance version, which the class
// records learn only at the next fetch of acme's catalog.
func (w *world) upgradeStep() {
	if !w.upgradeOn || !w.faults || !w.chance(4) {
		return
	}
	plan := []string{planSmall, planLarge}[w.rng.IntN(2)]
	w.upgrade.current[plan]++
	w.brokers.offers["broker.example"] = []osb.Service{w.acmeService()}
	w.logf("the broker's plan %s is at maintenance version %s now", plan, maintenanceVersion(w.upgrade.current[plan]))
}

// maintainerTask is the maintainer's next task: move a plan's version on at the broker,
// fetch acme's catalog, or upgrade one of dev's instances.
func (w *world) maintainerTask(p *proc) (string, func(context.Context) error) {
	e := p.eng
	inst := instanceNames[w.rng.IntN(len(instanceNames))]
	follow := w.follow()
	switch n := w.rng.IntN(10); {
	case n < 3 && w.faults:
		plan := []string{planSmall, planLarge}[w.rng.IntN(2)]
		sync := w.rng.IntN(2) == 0
		return "release maintenance version of " + plan, func(ctx context.Context) error {
			w.upgrade.current[plan]++
			w.brokers.offers["broker.example"] = []osb.Service{w.acmeService()}
			w.logf("%-14s the broker's plan %s is at maintenance version %s now", p.name, plan, maintenanceVersion(w.upgrade.current[plan]))
			if !sync {
				return nil
			}
			// Half the time the release is followed by "sync broker" at once.
			_, err := e.SyncBroker(ctx, engine.SyncBrokerRequest{Name: brokerName, Scope: v1alpha1.ScopeCluster})
			return err
		}
	case n < 6:
		return "sync broker " + brokerName, func(ctx context.Context) error {
			_, err := e.SyncBroker(ctx, engine.SyncBrokerRequest{Name: brokerName, Scope: v1alpha1.ScopeCluster})
			return err
		}
	}
	return "update dev/" + inst + " --upgrade", func(ctx context.Context) error {
		_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: "dev", Name: inst, UpdateRequest: engine.UpdateRequest{Upgrade: true}, Follow: follow})
		return err
	}
}

// upgradeTask is, one time in four in the upgrade world, a user's "update --upgrade"
// of an instance of her namespace.
func (w *world) upgradeTask(e *engine.Engine, ns, inst string, follow engine.Follow) (string, func(context.Context) error, bool) {
	if !w.upgradeOn || w.rng.IntN(4) > 0 {
		return "", nil, false
	}
	follow.Note = func(line string) { w.logf("%-14s says: %s", w.procName(), firstLine(line)) }
	return "update " + inst + " --upgrade", func(ctx context.Context) error {
		_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Upgrade: true}, Follow: follow})
		return err
	}, true
}

// staleMaintenance is the broker's 422 to a request naming a maintenance version of
// plan other than its current one.
func (w *world) staleMaintenance(plan string, mi *osb.MaintenanceInfo) (outcome, bool) {
	if _, acme := w.upgrade.current[plan]; !w.upgradeOn || mi == nil || !acme {
		return outcome{}, false
	}
	w.logf("%-14s asks for maintenance version %s of plan %s", w.procName(), mi.Version, plan)
	if cur := maintenanceVersion(w.upgrade.current[plan]); mi.Version != cur {
		return outcome{what: fmt.Sprintf("422 MaintenanceInfoConflict (%s asked, plan %s is at %s)", mi.Version, plan, cur),
			err: httpErr(422, osb.ErrorCodeMaintenanceInfoConflict, "the maintenance_info.version is not the plan's current one")}, true
	}
	return outcome{}, false
}

// otherMaintenance is the broker's answer to a provision of an instance it holds at
// another maintenance version than the request names: a provision with other attributes
// than the instance it holds, 409 Conflict (OSB).
func (w *world) otherMaintenance(id string, mi *osb.MaintenanceInfo) (outcome, bool) {
	held, ok := w.upgrade.held[id]
	if !w.upgradeOn || !ok || mi == nil || mi.Version == held {
		return outcome{}, false
	}
	return outcome{what: fmt.Sprintf("409 (held at maintenance version %s, %s asked)", held, mi.Version),
		err: httpErr(409, "", "the instance exists with other attributes")}, true
}

// provisionedMaintenance is what a provision the broker carries out leaves: the
// instance at the version it named, or its plan's current one.
func (w *world) provisionedMaintenance(id, plan string, mi *osb.MaintenanceInfo) {
	if _, acme := w.upgrade.current[plan]; !w.upgradeOn || !acme {
		return
	}
	v := maintenanceVersion(w.upgrade.current[plan])
	if mi != nil {
		v = mi.Version
	}
	w.upgrade.held[id] = v
}

// updatedMaintenance is what an update the broker carries out leaves: the instance at
// the version it named; one that names none leaves it as it was.
func (w *world) updatedMaintenance(id string, mi *osb.MaintenanceInfo) {
	if !w.upgradeOn || mi == nil {
		return
	}
	w.upgrade.held[id] = mi.Version
	w.logf("broker holds instance %s at maintenance version %s now", id, mi.Version)
}

// quiesceUpgrade runs the maintainer once the faults stopped, in each round of the
// quiescence: it fetches acme's catalog, upgrades every instance of dev the first time
// (the maintenance window's end), and then again each instance whose spec asks for a
// maintenance version its plan no longer offers (as the person the instance's
// condition asks for would).
func (w *world) quiesceUpgrade() {
	if !w.upgradeOn {
		return
	}
	var m *proc
	for _, p := range w.procs {
		if p.name == maintainerName {
			m = p
		}
	}
	defer func() { w.upgrade.quiesced = true }()
	w.begin(m, "sync broker and upgrade again (quiescence)", func(ctx context.Context) error {
		if _, err := m.eng.SyncBroker(ctx, engine.SyncBrokerRequest{Name: brokerName, Scope: v1alpha1.ScopeCluster}); err != nil {
			return err
		}
		insts, err := m.st.Instances().List(ctx, "dev", store.Filter{})
		if _, ok := store.Unreadable(err); err != nil && !ok {
			return err
		}
		for _, x := range insts {
			v := x.Spec.MaintenanceInfoVersion
			if x.DeletionTimestamp != nil || x.Spec.UserProvided != nil || v == maintenanceVersion(w.upgrade.current[x.Spec.PlanID]) {
				continue
			}
			if v == "" && w.upgrade.quiesced && w.upgrade.upgradedAtEnd[string(x.UID)] {
				// (Once, the maintenance window's end: every instance is upgraded.)
				continue
			}
			if engine.CheckChangeable(x, m.now()) != nil {
				continue
			}
			if _, err := m.eng.Update(ctx, engine.InstanceUpdateRequest{Namespace: x.Namespace, Name: x.Name, UpdateRequest: engine.UpdateRequest{Upgrade: true},
				Vouch: maintainerVoucher(v)}); err != nil {
				w.logf("%-14s update %s --upgrade: %s", m.name, x.Name, firstLine(err.Error()))
			} else if v == "" {
				w.upgrade.upgradedAtEnd[string(x.UID)] = true
			}
		}
		return nil
	})
	for m.alive && !w.stuck {
		w.t = w.t.Add(time.Second)
		w.landLateWork(false)
		w.tick()
		if m.alive {
			w.run(m)
			// (Its update may rotate bindings, spec.rebindOnUpdate asking for it: the
			// rebinds are checked after each of its moves, as reconcile's.)
			w.checkRebindsQuiescing()
		}
	}
}

// upgradeLeft reports, once the maintainer's upgrade at the window's end ran, an
// instance of dev it skipped (busy then: an update in flight, say) that is settled and
// ready now, with no maintenance version in its spec: the quiescence takes another round,
// in which the maintainer upgrades it.
func (w *world) upgradeLeft() bool {
	if !w.upgradeOn || !w.upgrade.quiesced {
		return false
	}
	insts, _ := w.records()
	for _, x := range insts {
		if x.Namespace != "dev" || x.DeletionTimestamp != nil || x.Spec.UserProvided != nil || x.Spec.BrokerName != brokerName ||
			x.Spec.MaintenanceInfoVersion != "" || w.upgrade.upgradedAtEnd[string(x.UID)] || !terminal(x, &x.Status.OperationStatus) || x.Status.Provisioned == nil {
			continue
		}
		if _, ready := readyMessage(&x.Status.OperationStatus); ready {
			return true
		}
	}
	return false
}

// checkHeldMaintenance is the check of the upgrade world at quiescence.
func (w *world) checkHeldMaintenance(insts []*v1alpha1.ServiceInstance) {
	if !w.upgradeOn {
		return
	}
	for _, x := range insts {
		if x.Namespace == "t" || x.Spec.UserProvided != nil || x.Spec.BrokerName != brokerName || !terminal(x, &x.Status.OperationStatus) || x.Status.Provisioned == nil {
			continue
		}
		if _, ready := readyMessage(&x.Status.OperationStatus); !ready {
			continue
		}
		id := x.CurrentExternalID()
		if t := w.book.ids[id]; t == nil || t.rogue || t.lied {
			continue
		}
		if _, ok := w.ledger.Instance(id); !ok {
			continue // invariant 7 speaks of an instance the broker does not hold
		}
		held := w.upgrade.held[id]
		if got := x.Status.Provisioned.MaintenanceInfoVersion; got != held {
			w.fail("instance %s/%s is settled as ready at maintenance version %q (status.provisioned) but the broker holds it at %q (answers: %s)",
				x.Namespace, x.Name, got, held, w.answersFor(id))
			continue
		}
		refused := meta.IsStatusConditionTrue(x.Status.Conditions, v1alpha1.ConditionUpdateFailed)
		if want := x.Spec.MaintenanceInfoVersion; want != "" && !refused && want != held {
			w.fail("instance %s/%s is settled as ready, its spec asking for maintenance version %q, but the broker holds it at %q (answers: %s)",
				x.Namespace, x.Name, want, held, w.answersFor(id))
		}
	}
}

// upgradeVersions names the plans' versions now, for the trace.
func (w *world) upgradeVersions() string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(w.upgrade.current)) {
		out = append(out, p+"="+maintenanceVersion(w.upgrade.current[p]))
	}
	return fmt.Sprint(out)
}
