package sim

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/enginetest"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// Moving a namespace's services to another cluster in the simulation (-sim.move): a
// second cluster (its own API server, cluster id c-2) reaches the same broker. On the
// old cluster (the world's), dev's user old-dev provisions instances mv-0 and mv-1 with
// --external-id and mv-2 without (a generated id, which cannot move), binds mvb-0 to
// mv-0 with --external-id and mvb-1 to mv-1 without. At any step, the mover exports
// dev's settled mv-* records from the old cluster (with their Secrets, as
// --show-secrets, half the time) and applies the export on the new cluster
// (MoveInInstance, MoveInBinding), killed or interrupted and run again; the releaser
// runs "release" on the old cluster with the new one's confirmation, without any, with
// the old cluster's own, or as a dry run, killed and run again. Reconcile runs on both
// clusters (reconcile-new on the new one). On the new cluster, new-dev binds, unbinds and
// deprovisions the instances released to it; on the old one, old-dev tries to
// deprovision and unbind the moved records after their release, and to deprovision
// them between their export and their apply. The class allows context updates, serves
// GET instance and GET binding as the seed says. Once the faults stop, the releaser
// releases once more (half of the seeds), and what was moved in and not released is
// given back: the new cluster drops its records with --abandon (the move abandoned).
//
// Checked as each request reaches the broker: the mover and the releaser never ask it to
// create, change or delete anything (the mover: GETs and the update carrying only the
// context; the releaser: nothing), nobody sends a provision or bind for a moved id,
// and once an id is released no process of the old cluster sends any request for it.
// Between the apply and the release both clusters hold records of the ids, each with
// its own claims: requests of the two clusters for one id may meet at the broker then
// (moving.md says to release at once), never after. Each context update is sent only by
// the new cluster, and answered as done at most once per instance. After every step:
// a record marked released has no work under way. At quiescence: every moved id the
// broker holds is named by the records of exactly one cluster, the new one's once
// released, the old one's when the move was abandoned; a moved or new binding of the new
// cluster holds in its Secret what the broker holds; the new cluster's records are
// settled.
var moveWorld = flag.Bool("sim.move", false, "move dev's instances and bindings to a second cluster sharing the broker (export, apply, release) while users and reconcile act on both")

const (
	newClusterID = "c-2"
	moverName    = "mover"
	releaserName = "releaser"
	oldDevName   = "old-dev"
	newDevName   = "new-dev"
	newRecName   = "reconcile-new"
)

// withMove reports whether a seed moves records to a second cluster: every seed with
// -sim.move.
func withMove(uint64) bool { return *moveWorld }

// The records that move: instances and their bindings (binding, instance, movable).
var (
	moveInstances = []string{"mv-0", "mv-1", "mv-2"}
	moveBindings  = [][2]string{{"mvb-0", "mv-0"}, {"mvb-1", "mv-1"}}
)

// moveState is what the move world keeps.
type moveState struct {
	on      bool
	cluster *storetest.Cluster
	checker *store.Store
	// retrievable: the class serves GET instance; contexts: it allows context updates.
	retrievable, contexts bool
	// exported is the last export: its instances and bindings.
	exported     []*v1alpha1.ServiceInstance
	exportedB    []*v1alpha1.ServiceBinding
	exportedData map[string]map[string][]byte
	// everExported: instance names exported once (old-dev makes them no more);
	// withdrawn, those old-dev deprovisions between the export and the apply: they are
	// exported and applied no more.
	everExported, withdrawn map[string]bool
	// moved are the ids a record of the new cluster took over (kind by id).
	moved map[string]string
	// released are the ids the old cluster marked released; releasedKeys its ConfigMaps
	// ("namespace/name") so marked.
	released     map[string]bool
	releasedKeys map[string]bool
	// contextDone are the request ids of the context updates answered as done, by
	// instance id.
	contextDone map[string][]string
	// confirmEng is an engine of the new cluster, reading as the user releasing does
	// there ("release --confirm-with-kubeconfig").
	confirmEng *engine.Engine
	// appliedI and appliedB are the manifests the mover applied at least once, by name
	// (the last one applied of each), appliedData their Secrets: at quiescence the
	// mover applies again what an interrupted apply left unfinished, from the file it
	// was in.
	appliedI    map[string]*v1alpha1.ServiceInstance
	appliedB    map[string]*v1alpha1.ServiceBinding
	appliedData map[string]map[string][]byte
	// handedNew are the credentials the broker last handed a process of the new cluster
	// for a binding id (by GET binding or a bind): the new cluster's Secret holds them,
	// the old cluster's what the broker handed the old one.
	handedNew map[string]map[string]any
	// working: the processes applying an export or releasing now.
	applying, releasing map[*proc]bool
	// finishOnly: the apply run again at quiescence touches only the records an
	// interrupted apply left unfinished.
	finishOnly bool
	final      bool
}

func (w *world) setupMove() {
	if !withMove(w.seed) {
		return
	}
	m := &w.move
	m.on = true
	m.exportedData, m.everExported, m.moved, m.withdrawn = map[string]map[string][]byte{}, map[string]bool{}, map[string]string{}, map[string]bool{}
	m.released, m.releasedKeys, m.contextDone = map[string]bool{}, map[string]bool{}, map[string][]string{}
	m.applying, m.releasing = map[*proc]bool{}, map[*proc]bool{}
	m.handedNew = map[string]map[string]any{}
	m.appliedI, m.appliedB, m.appliedData = map[string]*v1alpha1.ServiceInstance{}, map[string]*v1alpha1.ServiceBinding{}, map[string]map[string][]byte{}
	m.retrievable, m.contexts = w.rng.IntN(2) == 0, w.rng.IntN(4) > 0
	bindRetrievable := w.rates.asyncBind || w.rng.IntN(2) == 0
	ctx := context.Background()
	cls, err := w.checker.Classes().Get(ctx, storetest.CatalogNamespace, v1alpha1.ClassRecordName(brokerName, classID))
	if err != nil {
		panic(err)
	}
	cls.Spec.InstancesRetrievable, cls.Spec.AllowContextUpdates, cls.Spec.BindingsRetrievable = m.retrievable, m.contexts, bindRetrievable
	if cls, err = w.checker.Classes().Update(ctx, cls); err != nil {
		panic(err)
	}
	m.cluster = storetest.NewCluster()
	m.cluster.SetClock(func() time.Time { return w.t })
	m.checker = m.cluster.Store(store.WithClock(func() time.Time { return w.t }))
	m.confirmEng = enginetest.New(m.checker, nil, func(c *engine.Config) {
		c.Platform, c.Now = engine.StaticPlatform{Cluster: newClusterID}, func() time.Time { return w.t }
	})
	if _, err := m.cluster.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	putWorkloads(m.cluster, "dev") // workloads_test.go
	b, err := w.checker.Brokers().Get(ctx, storetest.CatalogNamespace, brokerName)
	if err != nil {
		panic(err)
	}
	if _, err := m.checker.Brokers().Create(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name}, Spec: b.Spec}); err != nil {
		panic(err)
	}
	if _, err := m.checker.Classes().Create(ctx, &v1alpha1.ServiceClass{ObjectMeta: metav1.ObjectMeta{Namespace: cls.Namespace, Name: cls.Name}, Spec: cls.Spec}); err != nil {
		panic(err)
	}
	w.setupMoveRecords()
	w.broker.OnGetInstance(w.getInstanceHandler())
	update := w.updateHandler(w.ledger)
	w.broker.OnUpdate(func(ctx context.Context, r *osb.UpdateRequest) (*osb.UpdateResponse, error) {
		p := w.current()
		resp, err := update(ctx, r)
		w.noteMoveUpdate(p, r, err)
		return resp, err
	})
	w.procs = append(w.procs,
		w.newProc(oldDevName, modelProc, "dev", "dev"),
		w.newProc(releaserName, modelProc, "dev"),
		w.newProcOn(m.cluster, moverName, modelProc, "dev"),
		w.newProcOn(m.cluster, newDevName, modelProc, "dev", "dev"),
		w.newProcOn(m.cluster, newRecName, modelProc, ""),
	)
	w.logf("move world: instances retrievable %t, bindings retrievable %t, context updates %t", m.retrievable, bindRetrievable, m.contexts)
}

// setupMoveRecords makes dev's records to move on the old cluster, as old-dev's
// provisions and binds make them (through an engine of her own, its broker answering at
// once), and puts what they name at the world's broker.
func (w *world) setupMoveRecords() {
	ctx := context.Background()
	st := w.cluster.Store(store.WithClock(func() time.Time { return w.t }), store.WithIdentity(func(context.Context) (*store.Identity, error) {
		return &store.Identity{Username: oldDevName}, nil
	}))
	b := fake.New()
	b.ProvisionReturns(&osb.ProvisionResponse{StatusCode: http.StatusCreated}, nil)
	var creds map[string]any
	b.OnBind(func(context.Context, *osb.BindRequest) (*osb.BindResponse, error) {
		return &osb.BindResponse{StatusCode: http.StatusCreated, Credentials: creds}, nil
	})
	eng := enginetest.New(st, b, func(c *engine.Config) {
		c.Holder, c.Now, c.IDs = "old-dev@setup", func() time.Time { return w.t }, w.rngReader()
		c.Platform = engine.StaticPlatform{Cluster: enginetest.Cluster, User: &osb.OriginatingIdentity{Username: oldDevName, UID: "u-" + oldDevName}}
	})
	for i, name := range moveInstances {
		id := ""
		if i < 2 {
			id = fmt.Sprintf("mv-instance-%08x", w.rng.Uint32())
		}
		if _, err := eng.Provision(ctx, engine.ProvisionRequest{Namespace: "dev", Name: name, Class: "db", Plan: "small", ExternalID: id}); err != nil {
			panic(fmt.Sprintf("move world: provision %s: %v", name, err))
		}
		var x *v1alpha1.ServiceInstance
		for range 5 {
			var err error
			if x, err = st.Instances().Get(ctx, "dev", name); err != nil {
				panic(err)
			}
			if x.Status.Provisioned != nil && terminal(x, &x.Status.OperationStatus) {
				break
			}
			if _, err := eng.StepInstance(ctx, x); err != nil {
				panic(err)
			}
		}
		if x.Status.Provisioned == nil {
			panic(fmt.Sprintf("move world: instance %s not provisioned: %+v %v", name, x.Status.OperationStatus, b.Calls()))
		}
		w.ledger.PutInstance(fake.Held{ID: x.CurrentExternalID(), Namespace: "dev", PlanID: planSmall})
		w.params[x.CurrentExternalID()] = map[string]any{}
		w.provisionedMaintenance(x.CurrentExternalID(), planSmall, nil)
	}
	for i, nb := range moveBindings {
		id := ""
		if i == 0 {
			id = fmt.Sprintf("mv-binding-%08x", w.rng.Uint32())
		}
		creds = map[string]any{"password": fmt.Sprintf("pw-%d", w.rng.IntN(1_000_000))}
		if _, err := eng.Bind(ctx, engine.BindRequest{Namespace: "dev", Instance: nb[1], Name: nb[0], ExternalID: id}); err != nil {
			panic(fmt.Sprintf("move world: bind %s: %v", nb[0], err))
		}
		var x *v1alpha1.ServiceBinding
		for range 5 {
			var err error
			if x, err = st.Bindings().Get(ctx, "dev", nb[0]); err != nil {
				panic(err)
			}
			if x.Status.Bound != nil && terminal(x, &x.Status.OperationStatus) {
				break
			}
			if _, err := eng.StepBinding(ctx, x); err != nil {
				panic(err)
			}
		}
		if x.Status.Bound == nil {
			panic("move world: binding " + nb[0] + " not bound")
		}
		inst, err := st.Instances().Get(ctx, "dev", nb[1])
		if err != nil {
			panic(err)
		}
		w.ledger.PutBinding(fake.Held{ID: x.Status.Bound.BindingID, InstanceID: inst.CurrentExternalID(), Namespace: "dev", Credentials: creds})
		w.handedOut(x.Status.Bound.BindingID, creds)
	}
}

func (w *world) newProcOn(c *storetest.Cluster, name string, k kind, ns string, sees ...string) *proc {
	p := &proc{w: w, name: name, kind: k, ns: ns, sees: sees, resume: make(chan struct{}), cluster: c}
	p.reset()
	return p
}

// onNew reports a process of the new cluster.
func (p *proc) onNew() bool { return p.cluster != nil }

// configureMove gives the new cluster's processes its cluster id, and its reconcile the
// configuration of "kubectl catalog reconcile".
func (p *proc) configureMove(c *engine.Config) {
	if !p.onNew() {
		return
	}
	if sp, ok := c.Platform.(engine.StaticPlatform); ok {
		sp.Cluster = newClusterID
		c.Platform = sp
	}
	if p.name == newRecName {
		c.Unattended, c.TargetCacheTTL = true, reconcile.TargetCacheTTL
	}
}

// getInstanceHandler answers GET instance from what the broker holds.
func (w *world) getInstanceHandler() func(context.Context, *osb.GetInstanceRequest) (*osb.GetInstanceResponse, error) {
	return func(ctx context.Context, r *osb.GetInstanceRequest) (*osb.GetInstanceResponse, error) {
		var resp *osb.GetInstanceResponse
		o := w.call(ctx, fake.MethodGetInstance, r.InstanceID, func() outcome {
			if w.faulty() && w.rng.IntN(3) == 0 {
				return outcome{what: "500", err: fake.HTTPError(http.MethodGet, http.StatusInternalServerError, "", "sim: the broker is down")}
			}
			h, ok := w.ledger.Instance(r.InstanceID)
			if !ok {
				return outcome{what: "404 (no such instance)", err: fake.HTTPError(http.MethodGet, http.StatusNotFound, "", "no such instance")}
			}
			resp = &osb.GetInstanceResponse{ServiceID: classID, PlanID: h.PlanID}
			return outcome{what: "200"}
		})
		if o.err != nil {
			return nil, o.err
		}
		return resp, nil
	}
}

// noteMoveUpdate counts the context updates answered as done, and checks that only the
// new cluster sends them and that the mover sends no other update.
func (w *world) noteMoveUpdate(p *proc, r *osb.UpdateRequest, err error) {
	if !w.move.on || p == nil {
		return
	}
	contextOnly := r.PlanID == "" && r.Parameters == nil && r.MaintenanceInfo == nil
	if w.move.applying[p] && !contextOnly {
		w.fail("%s, applying an export, sent an update of instance %s that is not only its context (plan %q, parameters %s)", p.name, r.InstanceID, r.PlanID, r.Parameters)
	}
	if !contextOnly || !p.onNew() || w.move.moved[r.InstanceID] == "" || err != nil {
		return
	}
	if r.Context == nil || r.Context.ClusterID != newClusterID || r.Context.Namespace != "dev" {
		w.fail("the context update of instance %s from %s does not carry the new cluster's context: %+v", r.InstanceID, p.name, r.Context)
	}
	done := w.move.contextDone[r.InstanceID]
	if !slices.Contains(done, r.RequestIdentity) {
		done = append(done, r.RequestIdentity)
		w.move.contextDone[r.InstanceID] = done
	}
	if len(done) > 1 && !w.contextUpdateLiedAbout(r.InstanceID) { // move_rogue_test.go
		w.fail("instance %s's context update was answered as done %d times (request ids %v): at most once per move", r.InstanceID, len(done), done)
	}
	if !w.move.contexts {
		w.fail("a context update of instance %s was sent although the class does not allow context updates", r.InstanceID)
	}
}

// checkMoveCall is checked as each request reaches the broker.
func (w *world) checkMoveCall(p *proc, method, id string) {
	if !w.move.on || p == nil {
		return
	}
	changes := method == fake.MethodProvision || method == fake.MethodBind || method == fake.MethodDeprovision || method == fake.MethodUnbind
	switch {
	case w.move.releasing[p]:
		w.fail("%s %s reached the broker from %s, which runs a release (a release calls no broker)", method, id, p.name)
	case w.move.applying[p] && changes:
		w.fail("%s %s reached the broker from %s, which applies an export (a move provisions, binds and deletes nothing)", method, id, p.name)
	case (method == fake.MethodProvision || method == fake.MethodBind) && w.move.moved[id] != "":
		w.fail("%s %s reached the broker from %s: the id was moved in, the broker holds it already", method, id, p.name)
	case !p.onNew() && w.releasedID(id):
		w.fail("%s %s reached the broker from %s, of the old cluster, after the id was released to the new one", method, id, p.name)
	}
}

// releasedID reports an id the old cluster released: seen marked, or marked now.
func (w *world) releasedID(id string) bool {
	if w.move.released[id] {
		return true
	}
	w.noteReleased()
	return w.move.released[id]
}

// noteReleased notes the ids and records of dev the old cluster marks released.
func (w *world) noteReleased() {
	ctx := context.Background()
	insts, err := w.checker.Instances().List(ctx, "dev", store.Filter{})
	if err != nil {
		panic(err)
	}
	binds, err := w.checker.Bindings().List(ctx, "dev", store.Filter{})
	if _, unreadable := store.Unreadable(err); err != nil && !unreadable {
		panic(err)
	}
	for _, x := range insts {
		if x.Annotations[engine.AnnotationReleasedTo] != "" {
			for _, id := range append(instanceIDs(x), x.Spec.ExternalID) {
				w.move.released[id] = true
			}
			w.move.releasedKeys[x.Namespace+"/"+store.ConfigMapName(v1alpha1.KindServiceInstance, x.Name)] = true
			w.checkReleasedSettled("instance", x, &x.Status.OperationStatus)
		}
	}
	for _, x := range binds {
		if x.Annotations[engine.AnnotationReleasedTo] != "" {
			for _, id := range append(bindingIDs(x), x.Spec.ExternalID) {
				w.move.released[id] = true
			}
			w.move.releasedKeys[x.Namespace+"/"+store.ConfigMapName(v1alpha1.KindServiceBinding, x.Name)] = true
			w.checkReleasedSettled("binding", x, &x.Status.OperationStatus)
		}
	}
	delete(w.move.released, "")
}

// checkReleasedSettled: a record marked released has no work under way (a release is
// refused then), and it is released to the new cluster only.
func (w *world) checkReleasedSettled(kind string, x metav1.Object, st *v1alpha1.OperationStatus) {
	if st.InFlight != nil || st.OrphanMitigation != nil {
		w.fail("%s %s/%s is marked released with work under way (%s)", kind, x.GetNamespace(), x.GetName(), st.Phase)
	}
	if to := x.GetAnnotations()[engine.AnnotationReleasedTo]; to != newClusterID {
		w.fail("%s %s/%s is marked released to %q, not to the new cluster %s", kind, x.GetNamespace(), x.GetName(), to, newClusterID)
	}
}

// noteMoved notes the ids the new cluster's records took over.
func (w *world) noteMoved() {
	insts, binds := w.newRecords()
	for _, x := range insts {
		if engine.MovedFrom(x.Annotations) != "" && x.Spec.ExternalID != "" {
			w.move.moved[x.Spec.ExternalID] = "instance"
		}
	}
	for _, x := range binds {
		if engine.MovedFrom(x.Annotations) != "" && x.Spec.ExternalID != "" {
			w.move.moved[x.Spec.ExternalID] = "binding"
		}
	}
}

// checkMoveStep runs after every step that wrote.
func (w *world) checkMoveStep() {
	if !w.move.on {
		return
	}
	w.noteReleased()
	w.noteMoved()
}

// releasedRecord reports a ConfigMap ("namespace/name") of the old cluster marked
// released: dropping it forgets ids the new cluster holds.
func (w *world) releasedRecord(key string) bool {
	return w.move.on && w.move.releasedKeys[key]
}

// movable reports an id made to move (old-dev's --external-id): the tenant of the old
// cluster never learns it. A release leaves no record of the ids on the old cluster, so
// one she adopted there with --external-id once released would be refused only by the
// broker (docs/moving.md, "Limits"): the world leaves that out.
func (w *world) movable(id string) bool {
	return w.move.on && strings.HasPrefix(id, "mv-")
}

// heldByNew reports an id a record of the new cluster names: the old cluster's checks
// leave it to checkMoved.
func (w *world) heldByNew(id string) bool {
	if !w.move.on {
		return false
	}
	insts, binds := w.newRecords()
	for _, x := range insts {
		if x.Spec.ExternalID == id || slices.Contains(instanceIDs(x), id) {
			return true
		}
	}
	for _, x := range binds {
		if x.Spec.ExternalID == id || slices.Contains(bindingIDs(x), id) {
			return true
		}
	}
	return false
}

// bothHoldBeforeRelease reports an overlap at the broker of requests of the two clusters
// for a moved id not released yet: both hold records of it then, each with its claims.
func (w *world) bothHoldBeforeRelease(id string, o *fake.Overlap) bool {
	if !w.move.on || w.move.moved[id] == "" || w.releasedID(id) {
		return false
	}
	return w.procNamed(o.First.By).onNew() != w.procNamed(o.Second.By).onNew()
}

func (w *world) procNamed(name string) *proc {
	for _, p := range w.procs {
		if p.name == name {
			return p
		}
	}
	return &proc{}
}

func (w *world) newRecords() ([]*v1alpha1.ServiceInstance, []*v1alpha1.ServiceBinding) {
	ctx := context.Background()
	insts, err := w.move.checker.Instances().List(ctx, "", store.Filter{})
	if err != nil {
		panic(err)
	}
	binds, err := w.move.checker.Bindings().List(ctx, "", store.Filter{})
	if err != nil {
		panic(err)
	}
	return insts, binds
}

// moveTask is the next task of a process of the move world.
func (w *world) moveTask(p *proc) (string, func(context.Context) error) {
	nothing := func(context.Context) error { return nil }
	switch p.name {
	case oldDevName:
		return w.oldDevTask(p)
	case newDevName:
		return w.newDevTask(p)
	case newRecName:
		p.rec = (&reconcile.Reconciler{Store: p.st, Engine: p.eng, Now: p.now, Logf: func(format string, args ...any) {
			w.logf("%-14s %s", p.name, firstLine(fmt.Sprintf(format, args...)))
		}}).WithRunClock(runClock{p})
		return "reconcile run", func(ctx context.Context) error { return p.reconcileRun(ctx, false) }
	case moverName:
		if w.faults && w.rng.IntN(3) == 0 {
			return "nothing", nothing
		}
		if len(w.move.exported) == 0 || w.rng.IntN(4) == 0 {
			return "export -n dev (old cluster)", func(context.Context) error { w.export(); return nil }
		}
		return "apply -f export (new cluster)", w.apply(p)
	}
	if w.faults && w.rng.IntN(3) > 0 || len(w.move.exported) == 0 {
		return "nothing", nothing
	}
	return w.releaseTask(p)
}

// export is "kubectl catalog export -n dev" of the old cluster's mv-* records: refused
// while one has work under way; with --show-secrets half the time.
func (w *world) export() {
	ctx := context.Background()
	var insts []*v1alpha1.ServiceInstance
	var binds []*v1alpha1.ServiceBinding
	data := map[string]map[string][]byte{}
	secrets := w.rng.IntN(2) == 0
	for _, name := range moveInstances {
		x, err := w.checker.Instances().Get(ctx, "dev", name)
		if err != nil || w.move.withdrawn[name] {
			continue
		}
		if !terminal(x, &x.Status.OperationStatus) || x.Status.Provisioned == nil || x.DeletionTimestamp != nil || x.Annotations[engine.AnnotationReleasedTo] != "" {
			// (Export refuses an instance with work under way: it is left out.)
			continue
		}
		var bs []*v1alpha1.ServiceBinding
		settled := true
		for _, nb := range moveBindings {
			b, err := w.checker.Bindings().Get(ctx, "dev", nb[0])
			if err != nil || b.Spec.InstanceName != name {
				continue
			}
			if !terminal(b, &b.Status.OperationStatus) || b.Status.Bound == nil || b.DeletionTimestamp != nil || len(b.Status.Retired) > 0 {
				settled = false
				break
			}
			bs = append(bs, b)
		}
		if !settled {
			continue
		}
		insts, binds = append(insts, x), append(binds, bs...)
		for _, b := range bs {
			if s, err := w.cluster.Core.CoreV1().Secrets("dev").Get(ctx, b.Spec.SecretName, metav1.GetOptions{}); err == nil && secrets {
				data[b.Name] = s.Data
			}
		}
	}
	if len(insts) == 0 {
		w.logf("%-14s export: nothing settled to export", moverName)
		return
	}
	w.move.exported, w.move.exportedB, w.move.exportedData = insts, binds, data
	var names []string
	for _, x := range insts {
		w.move.everExported[x.Name] = true
		names = append(names, x.Name+"="+x.CurrentExternalID())
	}
	for _, x := range binds {
		names = append(names, x.Name+"="+x.Status.Bound.BindingID)
	}
	w.logf("%-14s exported %v (secrets: %t)", moverName, names, secrets)
}

// apply is "kubectl catalog apply -f" of the last export on the new cluster: each
// record not there yet is moved in; a refusal goes on with the next document.
func (w *world) apply(p *proc) func(context.Context) error {
	return w.applyOf(p, w.move.exported, w.move.exportedB, w.move.exportedData)
}

// applyOf is "kubectl catalog apply -f" of a file with these manifests.
func (w *world) applyOf(p *proc, insts []*v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding, data map[string]map[string][]byte) func(context.Context) error {
	return func(ctx context.Context) error {
		w.move.applying[p] = true
		defer delete(w.move.applying, p)
		from := enginetest.Cluster
		for _, x := range insts {
			// A manifest whose id was released is spent: the new cluster owns the id and
			// may have deprovisioned it since; its user applies it no more (applied again,
			// an id the broker cannot be asked about is taken on her word, moving.md's
			// limit). Only an unfinished record of it is finished.
			spent := w.releasedID(x.CurrentExternalID())
			if _, err := p.st.Instances().Get(ctx, x.Namespace, x.Name); err == nil || w.move.withdrawn[x.Name] || w.move.finishOnly || spent {
				// As apply's plan: a record an interrupted apply left unfinished is finished.
				if missing, _ := p.eng.UnfinishedMoveIn(ctx, v1alpha1.KindServiceInstance, x.Namespace, x.Name); len(missing) == 0 || w.move.withdrawn[x.Name] {
					continue
				}
			}
			w.move.appliedI[x.Name] = x
			res, err := p.eng.MoveInInstance(ctx, engine.MoveInInstanceRequest{
				Namespace: x.Namespace, Name: x.Name, Class: "db", Plan: x.Spec.PlanExternalName, ExternalID: x.CurrentExternalID(), From: from,
				Follow: engine.Follow{Wait: w.rng.IntN(2) == 0},
			})
			w.logf("%-14s move in instance %s: checked %t, context update %t: %v", p.name, x.Name, res.Checked, res.ContextUpdate, err)
			if p.dead || ctx.Err() != nil {
				return ctx.Err()
			}
		}
		for _, x := range binds {
			spent := w.releasedID(x.Status.Bound.BindingID)
			if _, err := p.st.Bindings().Get(ctx, x.Namespace, x.Name); err == nil || w.move.finishOnly || spent {
				if missing, _ := p.eng.UnfinishedMoveIn(ctx, v1alpha1.KindServiceBinding, x.Namespace, x.Name); len(missing) == 0 {
					continue
				}
			}
			w.move.appliedB[x.Name], w.move.appliedData[x.Name] = x, data[x.Name]
			res, err := p.eng.MoveInBinding(ctx, engine.MoveInBindingRequest{
				Namespace: x.Namespace, Name: x.Name, Instance: x.Spec.InstanceName, SecretName: x.Spec.SecretName,
				ExternalID: x.Status.Bound.BindingID, Credentials: data[x.Name], From: from,
			})
			w.logf("%-14s move in binding %s: checked %t, credentials from %q: %v", p.name, x.Name, res.Checked, res.CredentialsFrom, err)
			if p.dead || ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	}
}

// confirmer is the new cluster as "release --confirm-with-kubeconfig" reads it (or, as
// a wrong kubeconfig, the old cluster itself).
type confirmer struct {
	w  *world
	id string
	st *store.Store
}

func (c confirmer) ClusterID(context.Context) (string, error) { return c.id, nil }

func (c confirmer) Confirm(ctx context.Context, kind, namespace, name, id, from string) error {
	var st *v1alpha1.OperationStatus
	var current string
	var made bool
	var x metav1.Object
	if kind == v1alpha1.KindServiceInstance {
		inst, err := c.st.Instances().Get(ctx, namespace, name)
		if err != nil {
			return fmt.Errorf("the new cluster has no instance %q: %w", name, err)
		}
		x, st, current, made = inst, &inst.Status.OperationStatus, inst.CurrentExternalID(), inst.Status.Provisioned != nil
	} else {
		b, err := c.st.Bindings().Get(ctx, namespace, name)
		if err != nil {
			return fmt.Errorf("the new cluster has no binding %q: %w", name, err)
		}
		x, st, current, made = b, &b.Status.OperationStatus, b.CurrentExternalID(), b.Status.Bound != nil
	}
	switch {
	case current != id:
		return fmt.Errorf("the new cluster's record has id %s, not %s", current, id)
	case engine.MovedFrom(x.GetAnnotations()) != from:
		return fmt.Errorf("the new cluster's record was not moved in from %s", from)
	case x.GetDeletionTimestamp() != nil || !made || st.InFlight != nil || st.Retry != nil:
		return fmt.Errorf("the new cluster's record is not settled yet (%s)", st.Phase)
	}
	if c.id == newClusterID {
		// As "release" does, with an engine of that cluster.
		return c.w.move.confirmEng.CheckMoveInFinished(ctx, kind, namespace, name)
	}
	return nil
}

// releaseTask is a "kubectl catalog release" of the exported instances on the old
// cluster: confirmed by the new cluster, by none, by the old one itself, or a dry run.
func (w *world) releaseTask(p *proc) (string, func(context.Context) error) {
	// Those the apply moved in (mostly), or every instance exported.
	var names []string
	some := w.rng.IntN(4) > 0
	for _, x := range w.move.exported {
		if !some || w.appliedOnNew(x.Name) {
			names = append(names, x.Name)
		}
	}
	if len(names) == 0 {
		return "nothing", func(context.Context) error { return nil }
	}
	req := engine.ReleaseRequest{Namespace: "dev", Instances: names, Confirm: confirmer{w, newClusterID, w.move.checker}}
	name := "release " + strings.Join(names, " ") + " --confirm-with-kubeconfig new"
	switch n := w.rng.IntN(10); {
	case n == 0:
		req.Confirm, name = nil, "release "+strings.Join(names, " ")+" (no confirmation)"
	case n == 1:
		req.Confirm, name = confirmer{w, enginetest.Cluster, w.checker}, name+" (the old cluster's kubeconfig)"
	case n == 2:
		req.DryRun, name = true, name+" --dry-run"
	}
	return name, w.release(p, req)
}

func (w *world) release(p *proc, req engine.ReleaseRequest) func(context.Context) error {
	return func(ctx context.Context) error {
		w.move.releasing[p] = true
		defer delete(w.move.releasing, p)
		res, err := p.eng.ReleaseMoved(ctx, req)
		if err == nil && (req.Confirm == nil || req.Confirm.(confirmer).id != newClusterID) {
			w.fail("release %v without the new cluster's confirmation was not refused", req.Instances)
		}
		for _, r := range res.Released {
			if err == nil && !req.DryRun {
				w.move.released[r.ExternalID] = true
			}
		}
		return err
	}
}

// oldDevTask is a task of dev's user of the old cluster: she makes the records to move,
// and tries to deprovision and unbind them once released, or between their export and
// their apply.
func (w *world) oldDevTask(p *proc) (string, func(context.Context) error) {
	ctx := context.Background()
	e := p.eng
	for i, name := range moveInstances {
		if w.move.everExported[name] {
			continue
		}
		if _, err := w.checker.Instances().Get(ctx, "dev", name); err != nil {
			id, flag := "", ""
			if i < 2 {
				id = fmt.Sprintf("mv-instance-%08x", w.rng.Uint32())
				flag = " --external-id " + id
			}
			return "provision " + name + flag, func(ctx context.Context) error {
				_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: "dev", Name: name, Class: "db", Plan: "small", ExternalID: id})
				return err
			}
		}
	}
	for i, nb := range moveBindings {
		if w.move.everExported[nb[1]] {
			continue
		}
		if _, err := w.checker.Bindings().Get(ctx, "dev", nb[0]); err != nil {
			id, flag := "", ""
			if i == 0 {
				id = fmt.Sprintf("mv-binding-%08x", w.rng.Uint32())
				flag = " --external-id " + id
			}
			return "bind " + nb[0] + " to " + nb[1] + flag, func(ctx context.Context) error {
				_, err := e.Bind(ctx, engine.BindRequest{Namespace: "dev", Instance: nb[1], Name: nb[0], ExternalID: id})
				return err
			}
		}
	}
	if w.faults && w.rng.IntN(2) > 0 {
		return "nothing", func(context.Context) error { return nil }
	}
	inst := moveInstances[w.rng.IntN(len(moveInstances))]
	bind := moveBindings[w.rng.IntN(len(moveBindings))][0]
	x, err := w.checker.Instances().Get(ctx, "dev", inst)
	b, berr := w.checker.Bindings().Get(ctx, "dev", bind)
	unbind := func(why string) (string, func(context.Context) error) {
		return "unbind " + bind + " (old cluster, " + why + ")", func(ctx context.Context) error {
			_, err := e.Unbind(ctx, engine.UnbindRequest{Namespace: "dev", Bindings: []string{bind}})
			return err
		}
	}
	deprovision := func(why string) (string, func(context.Context) error) {
		return "deprovision " + inst + " (old cluster, " + why + ")", func(ctx context.Context) error {
			_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: "dev", Name: inst})
			return err
		}
	}
	switch {
	case berr == nil && b.Status.Bound != nil && w.releasedID(b.Status.Bound.BindingID):
		return unbind("released")
	case err == nil && w.releasedID(x.CurrentExternalID()):
		return deprovision("released")
	case berr == nil && bind == "mvb-1" && w.rng.IntN(3) == 0:
		// Its id was generated here: it cannot move; unbound, its instance may.
		return unbind("it cannot move")
	case err == nil && w.move.retrievable && w.move.everExported[inst] && !w.appliedOnNew(inst) && len(w.move.applying) == 0 && w.rng.IntN(12) == 0:
		w.move.withdrawn[inst] = true
		// Between the export and the apply: the move of this one is abandoned (the apply
		// finds the id gone with GET instance; without it, the id is taken on the user's
		// word, moving.md's limit).
		return deprovision("exported, not applied yet")
	}
	return "nothing", func(context.Context) error { return nil }
}

// noRotation reports a binding of the move world that reconcile's --rotate-due leaves
// alone on p's cluster: on the old cluster, a binding made to move (rotated there between
// the export and the release, its id would differ from the new cluster's, and the release
// is refused until it is exported and moved again); on the new cluster, a binding moved
// in and not released yet.
func (w *world) noRotation(p *proc, b *v1alpha1.ServiceBinding) bool {
	if !w.move.on || b.Namespace != "dev" {
		return false
	}
	if !p.onNew() {
		return strings.HasPrefix(b.Name, "mvb-")
	}
	return engine.MovedFrom(b.Annotations) != "" && !w.releasedID(b.Spec.ExternalID)
}

// appliedOnNew reports an instance the new cluster has a record of.
func (w *world) appliedOnNew(name string) bool {
	_, err := w.move.checker.Instances().Get(context.Background(), "dev", name)
	return err == nil
}

// newDevTask is a task of dev's user of the new cluster, on the instances released to
// it: bind, unbind, deprovision.
func (w *world) newDevTask(p *proc) (string, func(context.Context) error) {
	nothing := func(context.Context) error { return nil }
	if w.faults && w.rng.IntN(2) > 0 {
		return "nothing", nothing
	}
	ctx := context.Background()
	inst := moveInstances[w.rng.IntN(len(moveInstances))]
	x, err := p.st.Instances().Get(ctx, "dev", inst)
	if err != nil || !w.releasedID(x.Spec.ExternalID) {
		return "nothing", nothing
	}
	e := p.eng
	bind := []string{"mvb-0", "mvb-1", "nb-0", "nb-1"}[w.rng.IntN(4)]
	switch n := w.rng.IntN(10); {
	case n < 5:
		return "bind " + bind + " to " + inst + " (new cluster)", func(ctx context.Context) error {
			_, err := e.Bind(ctx, engine.BindRequest{Namespace: "dev", Instance: inst, Name: bind})
			return err
		}
	case n < 8:
		if w.movedInNotReleased(bind) {
			return "nothing", nothing
		}
		return "unbind " + bind + " (new cluster)", func(ctx context.Context) error {
			_, err := e.Unbind(ctx, engine.UnbindRequest{Namespace: "dev", Bindings: []string{bind}})
			return err
		}
	}
	return "deprovision " + inst + " (new cluster)", func(ctx context.Context) error {
		_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: "dev", Name: inst})
		return err
	}
}

// movedInNotReleased reports a binding of dev the new cluster moved in whose id the old
// cluster has not released: the instance drawn being released says nothing of it (it may
// be another instance's), and until its release the old cluster still drives it (a
// rotation there retires the id the new cluster's unbind would delete).
func (w *world) movedInNotReleased(name string) bool {
	b, err := w.move.checker.Bindings().Get(context.Background(), "dev", name)
	return err == nil && engine.MovedFrom(b.Annotations) != "" && !w.releasedID(b.Spec.ExternalID)
}

// quiesceMove, in each round of quiescence: once, a last release (half of the seeds)
// and the give-back of what the new cluster took over and the old one did not release;
// then reconcile on the new cluster until its records settle.
func (w *world) quiesceMove() {
	if !w.move.on {
		return
	}
	byName := func(name string) *proc { return w.procNamed(name) }
	if !w.move.final {
		w.move.final = true
		// An apply that failed is run again by its user: what an interrupted apply left
		// unfinished is finished.
		if len(w.move.appliedI)+len(w.move.appliedB) > 0 {
			w.move.finishOnly = true
			insts, binds := make([]*v1alpha1.ServiceInstance, 0, len(w.move.appliedI)), make([]*v1alpha1.ServiceBinding, 0, len(w.move.appliedB))
			for _, name := range sortedKeys(w.move.appliedI) {
				insts = append(insts, w.move.appliedI[name])
			}
			for _, name := range sortedKeys(w.move.appliedB) {
				binds = append(binds, w.move.appliedB[name])
			}
			w.runToEnd(byName(moverName), "apply -f of each export applied, again (quiescence: finishes what an interrupted apply left)", w.applyOf(byName(moverName), insts, binds, w.move.appliedData))
			w.move.finishOnly = false
		}
		w.noteReleased()
		// A release begun (a record marked) is finished; else half of the seeds release.
		if len(w.move.everExported) > 0 && (len(w.move.released) > 0 || w.rng.IntN(2) == 0) {
			r := byName(releaserName)
			for range 3 {
				w.runNewReconcile()
				names := w.toRelease()
				if len(names) == 0 {
					break
				}
				// One at a time: an instance that cannot be released (a binding of it being
				// deleted here) holds back no other.
				refused := false
				for _, name := range names {
					var err error
					w.runToEnd(r, "release "+name+" --confirm-with-kubeconfig new (quiescence)", func(ctx context.Context) error {
						err = w.release(r, engine.ReleaseRequest{Namespace: "dev", Instances: []string{name}, Confirm: confirmer{w, newClusterID, w.move.checker}})(ctx)
						return err
					})
					refused = refused || err != nil
				}
				if !refused {
					break
				}
			}
		}
		w.noteReleased()
		w.giveBack(byName(newDevName))
	}
	for range 3 {
		w.runNewReconcile()
		if w.newSettled() {
			break
		}
	}
	w.noteReleased()
	w.noteMoved()
}

// toRelease are the instances the last release names: each exported once (not only by
// the last export, which leaves out a record an earlier release marked, or one not
// settled then) that both clusters hold, the old one's not being deleted. A release
// interrupted after it marked an instance's bindings and before the instance is finished
// so: its bindings are the new cluster's already.
func (w *world) toRelease() []string {
	var names []string
	for _, name := range sortedKeys(w.move.everExported) {
		x, err := w.checker.Instances().Get(context.Background(), "dev", name)
		if err == nil && x.DeletionTimestamp == nil && w.appliedOnNew(name) {
			names = append(names, name)
		}
	}
	return names
}

// runNewReconcile runs reconcile on the new cluster once, to its end.
func (w *world) runNewReconcile() {
	r := w.procNamed(newRecName)
	r.rec = (&reconcile.Reconciler{Store: r.st, Engine: r.eng, Now: r.now, Logf: func(format string, args ...any) {
		w.logf("%-14s %s", r.name, firstLine(fmt.Sprintf(format, args...)))
	}}).WithRunClock(runClock{r})
	w.runToEnd(r, "reconcile (quiescence)", func(ctx context.Context) error { return r.reconcileRun(ctx, true) })
}

// giveBack drops, with --abandon on the new cluster, the records moved in whose ids a
// record of the old cluster still names: the move is abandoned, the old cluster keeps
// them.
func (w *world) giveBack(p *proc) {
	insts1, binds1 := w.records()
	named := func(id string) bool {
		return slices.ContainsFunc(insts1, func(x *v1alpha1.ServiceInstance) bool {
			return x.Namespace == "dev" && !v1alpha1.Released(x) && slices.Contains(append(instanceIDs(x), x.Spec.ExternalID), id)
		}) || slices.ContainsFunc(binds1, func(x *v1alpha1.ServiceBinding) bool {
			return x.Namespace == "dev" && !v1alpha1.Released(x) && slices.Contains(append(bindingIDs(x), x.Spec.ExternalID), id)
		})
	}
	insts, binds := w.newRecords()
	for _, x := range binds {
		if engine.MovedFrom(x.Annotations) != "" && named(x.Spec.ExternalID) {
			w.runToEnd(p, "unbind "+x.Name+" --abandon (new cluster: the move is abandoned)", func(ctx context.Context) error {
				_, err := p.eng.Unbind(ctx, engine.UnbindRequest{Namespace: x.Namespace, Bindings: []string{x.Name}, Abandon: true})
				return err
			})
		}
	}
	// An instance moved in whose id the old cluster deprovisioned before releasing it
	// (its record deleted there: kubectl, the namespace's deletion) is answered 404 at
	// every update: moving.md says to drop such a record with --abandon.
	goneBeforeRelease := func(id string) bool {
		_, held := w.ledger.Instance(id)
		return !held && !w.releasedID(id)
	}
	for _, x := range insts {
		if engine.MovedFrom(x.Annotations) != "" && (named(x.Spec.ExternalID) || goneBeforeRelease(x.Spec.ExternalID)) {
			w.noteGivenBack(x, binds, named) // move_giveback_test.go
			w.runToEnd(p, "deprovision "+x.Name+" --abandon (new cluster: the move is abandoned)", func(ctx context.Context) error {
				_, err := p.eng.Deprovision(ctx, engine.DeprovisionRequest{Namespace: x.Namespace, Name: x.Name, Abandon: true})
				return err
			})
		}
	}
}

// runToEnd runs a task of p to its end, nothing else moving but the broker's late work.
func (w *world) runToEnd(p *proc, name string, task func(context.Context) error) {
	w.begin(p, name, task)
	for p.alive && !w.stuck {
		w.t = w.t.Add(time.Second)
		if w.t.Before(p.waiting) && !p.inCall {
			w.t = p.waiting
		}
		w.landLateWork(false)
		w.tick()
		if p.alive {
			w.run(p)
		}
	}
}

// newSettled reports whether every record of the new cluster is terminal (true outside
// the move world).
func (w *world) newSettled() bool {
	if !w.move.on {
		return true
	}
	insts, binds := w.newRecords()
	for _, x := range insts {
		if !terminal(x, &x.Status.OperationStatus) {
			return false
		}
	}
	for _, x := range binds {
		if !terminal(x, &x.Status.OperationStatus) && !w.waitsForAPerson(x) {
			return false
		}
	}
	return true
}

// handedToNew notes the credentials the broker handed a process of the new cluster for
// binding id, and reports whether it did: the two clusters' Secrets of one moved id hold
// what each was handed (a rogue answer to the mover's GET binding is no credential the
// old cluster was given).
func (w *world) handedToNew(id string, creds map[string]any) bool {
	p := w.current()
	if !w.move.on || p == nil || !p.onNew() {
		return false
	}
	if creds == nil {
		creds = map[string]any{}
	}
	w.move.handedNew[id] = creds
	return true
}

// checkMoved is the check of the move world at quiescence.
func (w *world) checkMoved(insts []*v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding) {
	if !w.move.on {
		return
	}
	ninsts, nbinds := w.newRecords()
	names := func(id string, is []*v1alpha1.ServiceInstance, bs []*v1alpha1.ServiceBinding) []string {
		var out []string
		for _, x := range is {
			if x.Spec.ExternalID == id || slices.Contains(instanceIDs(x), id) {
				out = append(out, "instance "+x.Namespace+"/"+x.Name)
			}
		}
		for _, x := range bs {
			if x.Spec.ExternalID == id || slices.Contains(bindingIDs(x), id) {
				out = append(out, "binding "+x.Namespace+"/"+x.Name)
			}
		}
		return out
	}
	for _, id := range sortedKeys(w.move.moved) {
		kind := w.move.moved[id]
		var held bool
		if kind == "instance" {
			_, held = w.ledger.Instance(id)
		} else {
			_, held = w.ledger.Binding(id)
		}
		old, now := names(id, insts, binds), names(id, ninsts, nbinds)
		switch {
		case w.move.released[id] && len(old) > 0:
			w.fail("%s %s was released to the new cluster, and the old cluster's %v still names it", kind, id, old)
		case held && len(old) > 0 && len(now) > 0:
			w.fail("%s %s is named by both clusters' records at quiescence: old %v, new %v (answers: %s)", kind, id, old, now, w.answersFor(id))
		case held && len(old)+len(now) == 0 && !w.book.lied(id) && !w.abandoned[id]:
			w.fail("the broker holds moved %s %s and neither cluster's records name it (answers: %s)", kind, id, w.answersFor(id))
		}
	}
	w.checkNewEvents(ninsts, nbinds)
	for _, x := range ninsts {
		w.checkFinal("instance (new cluster)", x, &x.Status.OperationStatus, instanceIDs(x))
	}
	for _, x := range nbinds {
		if !w.waitsForAPerson(x) {
			w.checkFinal("binding (new cluster)", x, &x.Status.OperationStatus, bindingIDs(x))
		}
		b := x.Status.Bound
		if b == nil {
			continue
		}
		h, held := w.ledger.Binding(b.BindingID)
		if !held || w.book.lied(b.BindingID) {
			continue
		}
		creds := h.Credentials
		if t := w.book.ids[b.BindingID]; t != nil && (t.unheldSuccess || t.rogue) {
			// (Answers off the spec, a GET binding's among them, may disagree with what
			// the broker keeps: a Secret an interrupted apply wrote from a rogue answer
			// is adopted as it is when applied again, whatever a later answer says.)
			continue
		}
		if handed, ok := w.move.handedNew[b.BindingID]; ok {
			creds = handed
		}
		s, err := w.move.cluster.Core.CoreV1().Secrets(x.Namespace).Get(context.Background(), x.Spec.SecretName, metav1.GetOptions{})
		if err != nil {
			w.fail("binding %s/%s of the new cluster is bound as %s but its Secret %q cannot be read: %v", x.Namespace, x.Name, b.BindingID, x.Spec.SecretName, err)
			continue
		}
		if !store.OwnedBy(s, x) {
			w.fail("binding %s/%s of the new cluster does not own its Secret %q (owners: %v)", x.Namespace, x.Name, x.Spec.SecretName, s.OwnerReferences)
		}
		want := ""
		if p, ok := creds["password"]; ok {
			want = fmt.Sprint(p)
		}
		if got := string(s.Data["password"]); got != want {
			w.fail("binding %s/%s of the new cluster is bound as %s but its Secret holds other credentials than the broker holds", x.Namespace, x.Name, b.BindingID)
		}
	}
}

// checkNewEvents is checkEvents for the new cluster's records and Events.
func (w *world) checkNewEvents(insts []*v1alpha1.ServiceInstance, binds []*v1alpha1.ServiceBinding) {
	type ref struct {
		ns, name string
		uid      types.UID
	}
	live := map[ref]bool{}
	for _, x := range insts {
		live[ref{x.Namespace, store.ConfigMapName(v1alpha1.KindServiceInstance, x.Name), x.UID}] = true
	}
	for _, x := range binds {
		live[ref{x.Namespace, store.ConfigMapName(v1alpha1.KindServiceBinding, x.Name), x.UID}] = true
	}
	last := map[ref]recordedEvent{}
	for _, r := range w.recorded {
		if w.procNamed(r.by).onNew() {
			last[ref{r.ev.Namespace, r.ev.Name, r.ev.UID}] = r
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(last), func(a, b ref) int { return strings.Compare(a.ns+"/"+a.name, b.ns+"/"+b.name) }) {
		r := last[k]
		if !live[k] || !strings.HasSuffix(r.ev.Reason, "Requested") || r.ev.Reason == "RotationRequested" {
			continue
		}
		w.fail("the last Event about %s/%s of the new cluster is %s (by %s): no Event says what came of that call", k.ns, k.name, r.ev.Reason, r.by)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
