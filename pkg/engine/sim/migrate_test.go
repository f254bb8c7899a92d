package sim

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/brokerclient"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/catalogsync"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/migrate"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Migration from the retired Service Catalog in the simulation (-sim.migrate, and one
// seed in eight): the cluster still serves svcat's objects (servicecatalog.k8s.io/v1beta1,
// through a fake dynamic client and discovery, the seams pkg/migrate's own tests use)
// for broker acme's ClusterServiceBroker and instances and bindings the broker holds
// under svcat's ids: instance old-0 in dev and in team-b (Ready), instance old-1 in
// dev (being deleted: migration records it and asks reconcile to deprovision it),
// binding old-b0 in dev of dev's old-0 (Ready, its credentials Secret owned by it, as
// svcat's controller made it). An administrator's process runs the real "migrate svcat
// -A" (pkg/migrate, its engine's AdoptInstance and AdoptBinding, catalogsync for the
// broker over the world's in-memory transport) at any step, now and then as a dry run,
// and may be killed or interrupted in the middle and run again, while reconcile drives
// what it migrated and the users and the tenant act as in every world. Once the faults
// stop, it runs once more.
//
// Checked as each request reaches the broker: a process running a migration sends none
// (migration sends nothing but catalog GETs). At quiescence: each svcat instance and
// binding the broker holds ends as exactly one record, of its own namespace and name,
// migrated from it (its annotation), with its id in the spec and settled (the instance
// provisioned, the binding bound, its Secret the record's); no record of another
// namespace (but the tenant's, who writes any id into her records: invariant 6 speaks
// of what they do with them) names one of those ids; the instance that svcat
// was deleting is deprovisioned at the broker and its record gone. Every other
// invariant (one request in flight per id, 6: a tenant's record never changes what
// another namespace holds) holds as in every world.
var migrateWorld = flag.Bool("sim.migrate", false, "serve the retired Service Catalog's objects and run migrate svcat while reconcile and users act")

// withMigrate reports whether a seed migrates svcat objects: one seed in eight, or every
// seed with -sim.migrate.
func withMigrate(seed uint64) bool {
	r := rand.New(rand.NewPCG(seed^0xbe5466cf34e90c6c, seed))
	return r.IntN(8) == 0 || *migrateWorld
}

const migratorName = "migrator"

// oldObject is one svcat object of the migrate world and the OSB id the broker holds
// it under.
type oldObject struct {
	kind, ns, name, id string
	// deleting: svcat was deleting it (its deletionTimestamp is set).
	deleting bool
	// instance is a binding's instance's name.
	instance string
}

func (o oldObject) uid() types.UID { return types.UID("old-" + o.ns + "-" + o.name) }

func (o oldObject) origin() string {
	return o.kind + "/" + o.ns + "/" + o.name + "/" + string(o.uid())
}

// migrateState is what the migrate world keeps.
type migrateState struct {
	objects []oldObject
	// running: the processes running a migration now.
	running map[*proc]bool
	dyn     *dynamicfake.FakeDynamicClient
	disco   *fakediscovery.FakeDiscovery
	// final: the migration once the faults stopped ran.
	final bool
	// orphaned are the ids of svcat's bindings the broker held, not migrated, when a
	// DELETE of their instance reached it (unmigratedUnderDelete).
	orphaned map[string]bool
}

var svcatListKinds = map[schema.GroupVersionResource]string{
	migrate.ClusterServiceBrokers: "ClusterServiceBrokerList", migrate.ServiceBrokers: "ServiceBrokerList",
	migrate.ClusterServiceClasses: "ClusterServiceClassList", migrate.ClusterServicePlans: "ClusterServicePlanList",
	migrate.ServiceClasses: "ServiceClassList", migrate.ServicePlans: "ServicePlanList",
	migrate.ServiceInstances: "ServiceInstanceList", migrate.ServiceBindings: "ServiceBindingList",
}

// setupMigrate serves svcat's objects, puts what they name at the broker, and adds the
// migrating administrator.
func (w *world) setupMigrate() {
	if !w.migrateOn {
		return
	}
	if w.brokers == nil {
		w.brokers = &brokerWorld{offers: map[string][]osb.Service{}, via: map[string]string{}, forced: map[string]bool{}}
	}
	if _, ok := w.brokers.offers["broker.example"]; !ok {
		w.brokers.offers["broker.example"] = []osb.Service{w.acmeService()}
	}
	id := func(what string) string { return fmt.Sprintf("svcat-old-%s-%08x", what, w.rng.Uint32()) }
	w.migration.objects = []oldObject{
		{kind: "ServiceInstance", ns: "dev", name: "old-0", id: id("instance")},
		{kind: "ServiceInstance", ns: "dev", name: "old-1", id: id("instance"), deleting: true},
		{kind: "ServiceInstance", ns: "team-b", name: "old-0", id: id("instance")},
	}
	w.migration.objects = append(w.migration.objects, oldObject{kind: "ServiceBinding", ns: "dev", name: "old-b0", id: id("binding"), instance: "old-0"})
	w.migration.running = map[*proc]bool{}
	ctx := context.Background()
	objs := []runtime.Object{&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": migrate.GroupVersion, "kind": "ClusterServiceBroker",
		"metadata": map[string]any{"name": brokerName, "uid": "old-broker"},
		"spec":     map[string]any{"url": "https://broker.example"},
	}}}
	deleted := metav1.NewTime(w.t)
	for _, o := range w.migration.objects {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": migrate.GroupVersion, "kind": o.kind,
			"metadata": map[string]any{"name": o.name, "namespace": o.ns, "uid": string(o.uid()), "generation": int64(1)},
		}}
		ready := []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready"}}
		switch o.kind {
		case "ServiceInstance":
			u.Object["spec"] = map[string]any{"clusterServiceClassExternalName": "db", "clusterServicePlanExternalName": "small", "externalID": o.id}
			u.Object["status"] = map[string]any{"conditions": ready, "provisionStatus": "Provisioned", "reconciledGeneration": int64(1),
				"externalProperties": map[string]any{"clusterServicePlanExternalID": planSmall}}
			w.ledger.PutInstance(fake.Held{ID: o.id, Namespace: o.ns, PlanID: planSmall})
			w.params[o.id] = map[string]any{}
			w.provisionedMaintenance(o.id, planSmall, nil)
		case "ServiceBinding":
			u.Object["spec"] = map[string]any{"instanceRef": map[string]any{"name": o.instance}, "externalID": o.id, "secretName": o.name}
			u.Object["status"] = map[string]any{"conditions": ready}
			inst := slices.IndexFunc(w.migration.objects, func(x oldObject) bool { return x.ns == o.ns && x.name == o.instance })
			creds := map[string]any{"password": fmt.Sprintf("pw-%d", w.rng.IntN(1_000_000))}
			w.ledger.PutBinding(fake.Held{ID: o.id, InstanceID: w.migration.objects[inst].id, Namespace: o.ns, Credentials: creds})
			w.handedOut(o.id, creds)
			if _, err := w.cluster.Core.CoreV1().Secrets(o.ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: o.name, OwnerReferences: []metav1.OwnerReference{{
					APIVersion: migrate.GroupVersion, Kind: o.kind, Name: o.name, UID: o.uid()}}},
				Data: map[string][]byte{"password": []byte(creds["password"].(string))},
			}, metav1.CreateOptions{}); err != nil {
				panic(err)
			}
		}
		if o.deleting {
			u.SetDeletionTimestamp(&deleted)
			u.SetFinalizers([]string{"kubernetes-incubator/service-catalog"})
		}
		objs = append(objs, u)
	}
	w.migration.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), svcatListKinds, objs...)
	w.migration.disco = &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	w.migration.disco.Resources = []*metav1.APIResourceList{{GroupVersion: migrate.GroupVersion,
		APIResources: []metav1.APIResource{{Name: "serviceinstances", Kind: "ServiceInstance", Namespaced: true}}}}
	w.procs = append(w.procs, w.newProc(migratorName, modelProc, ""))
}

// migrator is the Migrator of process p: its own store, engine and API client, the
// world's svcat objects, and a catalog syncer as the commands make one.
func (w *world) migrator(p *proc) *migrate.Migrator {
	clients := brokerclient.New(w.cluster.Core, brokerclient.WithTransport(catalogTransport{w}))
	syncer := catalogsync.New(p.st, clients, catalogsync.WithClock(p.now), catalogsync.WithCore(simClient{Interface: w.cluster.Core, p: p}),
		catalogsync.WithBrokerCheck(func(ctx context.Context, b *v1alpha1.Broker) error { return p.eng.CheckBroker(ctx, b) }),
		catalogsync.WithCatalogNamespace(storetest.CatalogNamespace), catalogsync.WithConcurrency(1),
		catalogsync.WithDecodeBudget(semaphore.NewWeighted(catalogsync.DecodeBudgetBytes), catalogsync.DecodeBudgetBytes))
	return migrate.New(migrate.Config{
		Dynamic: w.migration.dyn, Discovery: w.migration.disco, Core: simClient{Interface: w.cluster.Core, p: p},
		Store: p.st, Syncer: syncer, Engine: p.eng, CatalogNamespace: storetest.CatalogNamespace,
	})
}

// migrateRun is one "migrate svcat -A" of process p (a dry run when dry is set; with
// --cleanup when cleanup is).
func (w *world) migrateRun(p *proc, dry, cleanup bool) func(context.Context) error {
	return func(ctx context.Context) error {
		w.migration.running[p] = true
		defer delete(w.migration.running, p)
		out, err := w.migrator(p).Run(ctx, migrate.Options{DryRun: dry, Cleanup: cleanup})
		for _, oc := range out {
			w.logf("%-14s migrate: %s %s/%s: %s %s", p.name, oc.Kind, oc.Namespace, oc.Name, oc.Result, firstLine(oc.Reason))
		}
		return err
	}
}

// migratorTask is the administrator's next migration.
func (w *world) migratorTask(p *proc) (string, func(context.Context) error) {
	if w.faults && w.rng.IntN(3) > 0 {
		return "nothing", func(context.Context) error { return nil }
	}
	switch w.rng.IntN(4) {
	case 0:
		return "migrate svcat -A --dry-run=client", w.migrateRun(p, true, false)
	case 1:
		return "migrate svcat -A", w.migrateRun(p, false, false)
	}
	return "migrate svcat -A --cleanup", w.migrateRun(p, false, true)
}

// checkMigrationCall is checked as each request reaches the broker: no process running
// a migration sends one.
func (w *world) checkMigrationCall(p *proc, method, id string) {
	if w.migrateOn && w.migration.running[p] {
		w.fail("%s %s reached the broker from %s, which runs a migration (migration sends nothing but catalog GETs)", method, id, p.name)
	}
}

// quiesceMigrate runs the migration once more once the faults stopped.
func (w *world) quiesceMigrate() {
	if !w.migrateOn || w.migration.final {
		return
	}
	w.migration.final = true
	var m *proc
	for _, p := range w.procs {
		if p.name == migratorName {
			m = p
		}
	}
	w.begin(m, "migrate svcat -A --cleanup (quiescence)", w.migrateRun(m, false, true))
	for m.alive && !w.stuck {
		w.t = w.t.Add(time.Second)
		w.landLateWork(false)
		w.tick()
		if m.alive {
			w.run(m)
		}
	}
}

// checkMigrated is the check of the migrate world at quiescence.
func (w *world) checkMigrated(insts []*v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding) {
	if !w.migrateOn {
		return
	}
	for _, o := range w.migration.objects {
		if w.kube.terminating == o.ns {
			// (Its namespace was deleted: svcat's objects there would have gone with it,
			// which the model leaves out.)
			continue
		}
		var own []string
		mine := 0
		// (Once deprovisioned, the id is bound to nothing: the tenant's record may
		// provision it anew, for her namespace.)
		h, heldI := w.ledger.Instance(o.id)
		heldI = heldI && h.Namespace == o.ns
		heldB, stale := false, false
		for _, x := range insts {
			if o.kind != "ServiceInstance" || !slices.Contains(append(instanceIDs(x), x.Spec.ExternalID), o.id) {
				continue
			}
			// (The tenant writes any id into her records' specs and statuses: invariant 6
			// speaks of what her records do with them.)
			if x.Namespace != o.ns && x.Namespace != "t" {
				own = append(own, "instance "+x.Namespace+"/"+x.Name)
			}
			if x.Namespace == o.ns && x.Name == o.name && w.stalledMigratedInstance(x) {
				// (It waits for a person, nothing sent under the id: see
				// migrate_unverified_test.go.)
				stale = true
				continue
			}
			if x.Namespace == o.ns && x.Name == o.name {
				mine++
				w.checkMigratedRecord(o, x, x.Annotations, x.Spec.ExternalID, x.Status.Provisioned != nil)
			}
		}
		for _, x := range binds {
			if o.kind != "ServiceBinding" || !slices.Contains(append(bindingIDs(x), x.Spec.ExternalID), o.id) {
				continue
			}
			if x.Namespace != o.ns && x.Namespace != "t" {
				own = append(own, "binding "+x.Namespace+"/"+x.Name)
			}
			if x.Namespace == o.ns && x.Name == o.name && w.staleSvcatBinding(x) {
				// (It waits for a person, and the broker held nothing of its instance
				// since: see staleSvcatBinding.)
				stale = true
				continue
			}
			if x.Namespace == o.ns && x.Name == o.name {
				mine++
				w.checkMigratedRecord(o, x, x.Annotations, x.Spec.ExternalID, x.Status.Bound != nil)
				if s, err := w.cluster.Core.CoreV1().Secrets(o.ns).Get(context.Background(), x.Spec.SecretName, metav1.GetOptions{}); err != nil || !store.OwnedBy(s, x) {
					w.fail("binding %s/%s, migrated from svcat, does not own its credentials Secret %q (%v)", o.ns, o.name, x.Spec.SecretName, err)
				}
				// (Its credentials may have been rotated since: a new id, the svcat one
				// unbound.)
				if b := x.Status.Bound; b != nil {
					_, heldB = w.ledger.Binding(b.BindingID)
				}
			}
		}
		if len(own) > 0 {
			w.fail("svcat %s %s/%s's id %s is taken by %v, of another namespace (answers: %s)", o.kind, o.ns, o.name, o.id, own, w.answersFor(o.id))
		}
		if stale {
			continue
		}
		if mine == 0 && !o.deleting {
			// Gone through its record (kubectl delete of its ConfigMap), or never
			// migrated: then the broker still holds it, and nobody can delete it; unless
			// the broker answered a deprovision of it done while it held it (a rogue
			// broker's lie, which nobody can know of).
			if o.kind == "ServiceInstance" && heldI && !w.book.lied(o.id) || o.kind == "ServiceBinding" && !w.unbound(o.id) && !w.migration.orphaned[o.id] {
				w.fail("svcat %s %s/%s ends as no record while the broker holds it (answers: %s)", o.kind, o.ns, o.name, w.answersFor(o.id))
			}
			continue
		}
		switch {
		case o.deleting && mine == 0 && heldI && w.book.lied(o.id):
			// The broker answered a deprovision of it done while it held it: nobody
			// can know it holds the instance still.
		case o.deleting && (mine > 0 || heldI):
			w.fail("svcat %s %s/%s, which svcat was deleting, is not deprovisioned: %d records, held by the broker: %t (answers: %s)", o.kind, o.ns, o.name, mine, heldI, w.answersFor(o.id))
		case !o.deleting && mine != 1:
			w.fail("svcat %s %s/%s ends as %d records of its namespace and name, not one (answers: %s)", o.kind, o.ns, o.name, mine, w.answersFor(o.id))
		case !o.deleting && (o.kind == "ServiceInstance" && !heldI || o.kind == "ServiceBinding" && !heldB) && !w.deletedOnce(o.id):
			w.fail("svcat %s %s/%s (id %s) is not held by the broker as its record says, and nobody deleted it (answers: %s)", o.kind, o.ns, o.name, o.id, w.answersFor(o.id))
		}
	}
}

// checkMigratedRecord checks the record an old object became: migrated from it, its id
// in the spec, settled as held (provisioned, bound).
func (w *world) checkMigratedRecord(o oldObject, x metav1.Object, annotations map[string]string, specID string, held bool) {
	if annotations[store.AnnotationMigratedFrom] != o.origin() || specID != o.id || !held {
		w.fail("record %s/%s is not what svcat %s %s/%s became: migrated from %q, spec id %q, held: %t (want %q, %q) (answers: %s)",
			x.GetNamespace(), x.GetName(), o.kind, o.ns, o.name, annotations[store.AnnotationMigratedFrom], specID, held, o.origin(), o.id, w.answersFor(o.id))
	}
}

// unmigrated reports an id of a svcat object that no record of its namespace names
// yet: the tenant does not know it. An id svcat made is bound to nothing, so the first
// record that adopts it keeps it (docs/security.md, "Adopting an id"): a tenant who
// learns it before it is migrated adopts it first, which migration cannot tell from
// the owner's adoption (it asks the broker nothing). Once a record of its namespace
// names it, she may copy it into hers as any other, and its id claim keeps her away.
func (w *world) unmigrated(id string) bool {
	if !w.migrateOn {
		return false
	}
	i := slices.IndexFunc(w.migration.objects, func(o oldObject) bool { return o.id == id })
	if i < 0 {
		return false
	}
	o := w.migration.objects[i]
	ctx := context.Background()
	if o.kind == "ServiceInstance" {
		x, err := w.checker.Instances().Get(ctx, o.ns, o.name)
		return err != nil || x.Spec.ExternalID != id
	}
	x, err := w.checker.Bindings().Get(ctx, o.ns, o.name)
	return err != nil || x.Spec.ExternalID != id
}

// unmigratedUnderDelete reports (and remembers) a svcat binding, not migrated, that the
// broker holds when a DELETE of its instance reaches it: a user deleted the instance's
// record before the binding was migrated. Migration then refuses the binding (its
// instance's deprovision was sent), and svcat's object stays, saying so: the broker
// keeps it under the deleted instance.
func (w *world) unmigratedUnderDelete(id string) bool {
	if !w.unmigrated(id) {
		return false
	}
	if w.migration.orphaned == nil {
		w.migration.orphaned = map[string]bool{}
	}
	w.migration.orphaned[id] = true
	return true
}

// unbound reports whether the broker holds binding id no more.
func (w *world) unbound(id string) bool {
	_, held := w.ledger.Binding(id)
	return !held
}

// svcatOwner reports a uid of one of svcat's objects: the garbage collector sees them
// (they stay while the records are migrated).
func (w *world) svcatOwner(uid types.UID) bool {
	return w.migrateOn && slices.ContainsFunc(w.migration.objects, func(o oldObject) bool { return o.uid() == uid })
}

// leftBySvcat reports an id of a svcat object of a namespace deleted in this seed: the
// model leaves svcat's objects there, so they may never be migrated, and what the
// broker holds under them is left behind, as svcat's controller, gone, would leave it;
// or of a binding its instance's deletion went ahead of (unmigratedUnderDelete).
func (w *world) leftBySvcat(id string) bool {
	return w.migrateOn && w.migration.orphaned[id] || w.migrateOn && slices.ContainsFunc(w.migration.objects, func(o oldObject) bool { return o.id == id && w.kube.terminating == o.ns })
}

// staleSvcatBinding reports a binding migrated from a svcat binding whose instance's id
// a DELETE was sent for (deletedOnce): a user deleted the instance's record (kubectl
// delete of its ConfigMap) while svcat's binding of it was not migrated yet, so no
// binding record held the deletion back, and reconcile deprovisioned it; a later
// "migrate svcat" then made the binding's record (and, without --cleanup having removed
// the old objects, the instance's again) from svcat's word. The broker holds no instance
// for it: its bind or unbind cannot succeed, and it waits for a person ("unbind
// --abandon", as its condition says). The engine cannot know of a binding the broker
// holds that no record names; docs/svcat.md asks for the migration to finish (and
// --cleanup) before records are deleted.
func (w *world) staleSvcatBinding(b *v1alpha1.ServiceBinding) bool {
	if !w.migrateOn || b.Annotations[store.AnnotationMigratedFrom] == "" {
		return false
	}
	for _, o := range w.migration.objects {
		if o.kind != "ServiceBinding" || o.ns != b.Namespace || o.name != b.Name || b.Annotations[store.AnnotationMigratedFrom] != o.origin() {
			continue
		}
		for _, i := range w.migration.objects {
			if i.kind == "ServiceInstance" && i.ns == o.ns && i.name == o.instance {
				return w.deletedOnce(i.id)
			}
		}
	}
	return false
}

// deletedOnce reports an id a DELETE was sent for: the record migrated from a svcat
// object was deleted (kubectl delete of its ConfigMap) and deprovisioned, and a later
// "migrate svcat" without --cleanup having removed the old object made its record again,
// from svcat's word that the broker holds it (docs/svcat.md: run --cleanup once
// migrated). Such a record says what the broker no longer holds until its next call.
func (w *world) deletedOnce(id string) bool {
	t := w.book.ids[id]
	return t != nil && t.deleted
}
