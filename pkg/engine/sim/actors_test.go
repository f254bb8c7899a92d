package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The records the processes work on: a few names each, so that they meet.
var (
	instanceNames = []string{"db-0", "db-1", "db-2"}
	bindingNames  = []string{"app-0", "app-1"}
)

// taskFor chooses what an idle process does next.
func (w *world) taskFor(p *proc) (string, func(context.Context) error) {
	switch p.kind {
	case modelProc:
		return w.worldTask(p)
	case reconciler, reconcileByHand:
		return "reconcile run", func(ctx context.Context) error { return p.reconcileRun(ctx, false) }
	case tenant:
		if p.ns == "team-b" {
			// Team-b's user editing his bindings' status (crossns_test.go).
			if w.faults && w.chance(w.rates.tenant) {
				return "edit a binding's status", p.editRetired
			}
			return "nothing", func(context.Context) error { return nil }
		}
		if *crossNamespace && w.faults && w.chance(w.rates.tenant/2) {
			return "pin another namespace's instance", p.pin
		}
		if w.faults && w.chance(w.rates.tenant) {
			return "forge a record", p.forge
		}
		return "nothing", func(context.Context) error { return nil }
	}
	if name, task, ok := w.adoptTask(p); ok {
		return name, task // renew_test.go
	}
	inst := instanceNames[w.rng.IntN(len(instanceNames))]
	bind := bindingNames[w.rng.IntN(len(bindingNames))]
	follow := w.follow()
	e, ns := p.eng, p.ns
	if w.brokersOn {
		// Brokers registered, synced and deregistered (brokers_test.go).
		if name, task, ok := w.brokersTask(p, follow); ok {
			return name, task
		}
	}
	if *upShare && (p.ns == "team-b" || p.ns == "dev") && w.rng.IntN(2) == 0 {
		// Shared user-provided instances projected as environment variables (upshare_test.go).
		if p.ns == "team-b" {
			return w.upConsumerTask(p, ns, follow)
		}
		return w.upOwnerTask(e, ns, follow)
	}
	if p.ns == "team-b" {
		return w.bobTask(e, ns, inst, bind, follow)
	}
	return w.userTask(e, ns, inst, bind, follow)
}

// bobTask is a task of the user of team-b, who binds to what dev shares with him.
func (w *world) bobTask(e *engine.Engine, ns, inst, bind string, follow engine.Follow) (string, func(context.Context) error) {
	// Mostly to an instance shared with him now.
	shared := w.sharedWith(ns)
	if len(shared) > 0 && w.rng.IntN(4) > 0 {
		inst = shared[w.rng.IntN(len(shared))]
	}
	if len(shared) > 0 && w.rng.IntN(4) > 0 || w.rng.IntN(2) == 0 {
		return "bind " + bind + " to dev/" + inst, func(ctx context.Context) error {
			_, err := e.Bind(ctx, engine.BindRequest{Namespace: ns, Instance: inst, InstanceNamespace: "dev", Name: bind, Follow: follow,
				Projections: w.fileProjections()})
			return err
		}
	}
	return "unbind " + bind, func(ctx context.Context) error {
		_, err := e.Unbind(ctx, engine.UnbindRequest{Namespace: ns, Bindings: []string{bind}, Follow: follow})
		return err
	}
}

// userTask is a task of a user of the instances of her own namespace.
func (w *world) userTask(e *engine.Engine, ns, inst, bind string, follow engine.Follow) (string, func(context.Context) error) {
	if name, task, ok := w.paramSecretTask(e, ns, inst, follow); ok {
		return name, task
	}
	if name, task, ok := w.abandonTask(e, ns, inst, bind); ok {
		return name, task
	}
	if name, task, ok := w.limitsTask(e, ns, inst, follow); ok {
		return name, task
	}
	if name, task, ok := w.upgradeTask(e, ns, inst, follow); ok {
		return name, task // upgrade_test.go
	}
	if name, task, ok := w.rebindTask(e, ns, inst, follow); ok {
		return name, task
	}
	plan := []string{"small", "large"}[w.rng.IntN(2)]
	// An OSB id bound to nothing, as one taken over from another platform is
	// (--external-id): the spec's id is the record's on the claim of who adopted it first.
	adopted := func(what string) (string, string) {
		if !*foreignIDs || w.rng.IntN(3) > 0 {
			return "", ""
		}
		id := fmt.Sprintf("svcat-%s-%08x", what, w.rng.Uint32())
		return id, " --external-id " + id
	}
	switch n := w.rng.IntN(100); {
	case n < 22:
		id, flag := adopted("instance")
		return "provision " + inst + flag, func(ctx context.Context) error {
			_, err := e.Provision(ctx, engine.ProvisionRequest{Namespace: ns, Name: inst, Class: "db", Plan: plan, ExternalID: id, Follow: follow})
			return err
		}
	case n < 32:
		return "update " + inst + " to " + plan, func(ctx context.Context) error {
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Plan: plan}, Follow: follow})
			return err
		}
	case n < 36:
		return "update " + inst + " parameters", func(ctx context.Context) error {
			params := &engine.ParametersInput{Pairs: []string{fmt.Sprintf("size=%d", w.rng.IntN(3))}}
			_, err := e.Update(ctx, engine.InstanceUpdateRequest{Namespace: ns, Name: inst, UpdateRequest: engine.UpdateRequest{Parameters: params}, Follow: follow})
			return err
		}
	case n < 39:
		return "touch " + inst, func(ctx context.Context) error {
			_, err := e.Touch(ctx, engine.TouchRequest{Namespace: ns, Name: inst, Follow: follow})
			return err
		}
	case n < 42:
		return "update " + inst + " --revert", func(ctx context.Context) error {
			_, err := e.Revert(ctx, engine.RevertRequest{Namespace: ns, Name: inst, Follow: follow})
			return err
		}
	case n < 52:
		return "deprovision " + inst, func(ctx context.Context) error {
			_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: ns, Name: inst, Follow: follow})
			return err
		}
	case n < 67:
		id, flag := adopted("binding")
		return "bind " + bind + " to " + inst + flag, func(ctx context.Context) error {
			_, err := e.Bind(ctx, engine.BindRequest{Namespace: ns, Instance: inst, Name: bind, ExternalID: id, Follow: follow,
				Projections: w.fileProjections()})
			return err
		}
	case n < 74:
		return "unbind " + bind, func(ctx context.Context) error {
			_, err := e.Unbind(ctx, engine.UnbindRequest{Namespace: ns, Bindings: []string{bind}, Follow: follow})
			return err
		}
	case n < 79:
		return "bind --rotate " + bind, func(ctx context.Context) error {
			_, err := e.Rotate(ctx, engine.RotateRequest{Namespace: ns, Name: bind, Follow: follow})
			return err
		}
	case n < 82:
		return "rotation due " + bind, func(ctx context.Context) error {
			_, err := e.RotateScheduled(ctx, ns, bind)
			return err
		}
	case n < 86 && ns == "dev":
		// Taking a grant back, then the instance: its bindings in team-b must go first.
		return "unshare " + inst + " from team-b, then deprovision it", func(ctx context.Context) error {
			if _, err := e.Unshare(ctx, engine.UnshareRequest{Namespace: ns, Name: inst, From: "team-b"}); err != nil {
				return err
			}
			_, err := e.Deprovision(ctx, engine.DeprovisionRequest{Namespace: ns, Name: inst, Follow: follow})
			return err
		}
	case n < 96 && ns == "dev":
		return "share " + inst + " with team-b", func(ctx context.Context) error {
			_, err := e.Share(ctx, engine.ShareRequest{Namespace: ns, Name: inst, To: "team-b"})
			return err
		}
	case ns == "dev":
		return "unshare " + inst + " from team-b", func(ctx context.Context) error {
			_, err := e.Unshare(ctx, engine.UnshareRequest{Namespace: ns, Name: inst, From: "team-b"})
			return err
		}
	}
	return "nothing", func(context.Context) error { return nil }
}

// sharedWith are the names of the instances of dev shared with namespace ns.
func (w *world) sharedWith(ns string) []string {
	insts, err := w.checker.Instances().List(context.Background(), "dev", store.Filter{})
	if err != nil {
		panic(err)
	}
	var out []string
	for _, x := range insts {
		if slices.Contains(x.Spec.SharedWith, ns) {
			out = append(out, x.Name)
		}
	}
	return out
}

// reconcilePass is a reconcile run: every record whose next step is due is stepped
// (again at once while it asks to be), as reconcile does with engine.NextStep and
// StepInstance (and their binding twins). Reconcile sees every namespace.
func (p *proc) reconcilePass(ctx context.Context, quiescing bool) error {
	ctx = engine.WithRunnersRights(ctx)
	e := p.eng
	insts, err := p.st.Instances().List(ctx, "", store.Filter{})
	if err != nil {
		return err
	}
	binds, err := p.st.Bindings().List(ctx, "", store.Filter{})
	if err != nil {
		return err
	}
	for _, b := range binds {
		if !quiescing && b.Status.Bound != nil && b.DeletionTimestamp == nil && p.w.chance(20) {
			// --rotate-due: the broker's renew_before has passed.
			p.w.logf("%-14s rotation due %s/%s", p.name, b.Namespace, b.Name)
			if _, err := e.RotateScheduled(ctx, b.Namespace, b.Name); err != nil {
				p.w.logf("%-14s rotation of %s/%s: %s", p.name, b.Namespace, b.Name, firstLine(err.Error()))
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		if !e.NextBindingStep(b).Due(p.now()) {
			continue
		}
		if err := p.stepRecord(ctx, b.Namespace, b.Name, func(ctx context.Context) (engine.Result, error) {
			cur, err := p.st.Bindings().Get(ctx, b.Namespace, b.Name)
			if err != nil {
				return engine.Result{State: engine.StateDeleted}, nil
			}
			return e.StepBinding(ctx, cur)
		}); err != nil && ctx.Err() != nil {
			return err
		}
	}
	for _, inst := range insts {
		if !e.NextStep(inst).Due(p.now()) {
			continue
		}
		if err := p.stepRecord(ctx, inst.Namespace, inst.Name, func(ctx context.Context) (engine.Result, error) {
			cur, err := p.st.Instances().Get(ctx, inst.Namespace, inst.Name)
			if err != nil {
				return engine.Result{State: engine.StateDeleted}, nil
			}
			return e.StepInstance(ctx, cur)
		}); err != nil && ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// stepRecord steps one record, again while the step asks to be called at once.
func (p *proc) stepRecord(ctx context.Context, ns, name string, step func(context.Context) (engine.Result, error)) error {
	p.record = ns + "/" + name
	defer func() { p.record = "" }()
	for range 4 {
		res, err := step(ctx)
		if err != nil {
			p.w.logf("%-14s step %s: %s", p.name, p.record, firstLine(err.Error()))
			p.w.checkStepError(ctx, p.record, err)
			return err
		}
		if res.State != engine.StateWaiting || res.RequeueAfter > 0 {
			return nil
		}
	}
	return nil
}

// forge is the tenant writing what she may write on her own records: any status, any
// labels, claims; whatever she writes, no process may crash, and nothing she writes may
// act on another namespace.
func (p *proc) forge(ctx context.Context) error {
	w := p.w
	insts, err := p.st.Instances().List(ctx, p.ns, store.Filter{})
	if err != nil {
		return err
	}
	binds, err := p.st.Bindings().List(ctx, p.ns, store.Filter{})
	if err != nil {
		return err
	}
	f := forger{w: w}
	var foreignInstances, foreignBindings []string
	f.foreign, foreignInstances, foreignBindings = w.foreignIDs(p.ns)
	// She rewrites the spec of a record of her own (as its author), maybe created long
	// before the other namespace's record, to name the other's id.
	if len(foreignInstances) > 0 && len(insts) > 0 && w.rng.IntN(3) == 0 {
		x := insts[w.rng.IntN(len(insts))].DeepCopy()
		x.Spec.ExternalID = foreignInstances[w.rng.IntN(len(foreignInstances))]
		p.record = x.Namespace + "/" + x.Name
		w.logf("%-14s rewrites instance %s to name id %s", p.name, x.Name, x.Spec.ExternalID)
		_, err := p.st.Instances().Update(ctx, x)
		return err
	}
	if len(foreignBindings) > 0 && len(binds) > 0 && w.rng.IntN(3) == 0 {
		x := binds[w.rng.IntN(len(binds))].DeepCopy()
		x.Spec.ExternalID = foreignBindings[w.rng.IntN(len(foreignBindings))]
		p.record = x.Namespace + "/" + x.Name
		w.logf("%-14s rewrites binding %s to name id %s", p.name, x.Name, x.Spec.ExternalID)
		_, err := p.st.Bindings().Update(ctx, x)
		return err
	}
	if len(insts) > 0 && (len(binds) == 0 || w.rng.IntN(2) == 0) {
		x := insts[w.rng.IntN(len(insts))].DeepCopy()
		f.instance(x)
		p.record = x.Namespace + "/" + x.Name
		w.logf("%-14s forges instance %s", p.name, x.Name)
		_, err := p.st.Instances().Update(ctx, x)
		return err
	}
	if len(binds) == 0 {
		return nil
	}
	x := binds[w.rng.IntN(len(binds))].DeepCopy()
	f.binding(x)
	w.logf("%-14s forges binding %s", p.name, x.Name)
	_, err = p.st.Bindings().Update(ctx, x)
	return err
}

// foreignIDs are the ids of other namespaces than ns that a tenant may have seen
// somewhere (describe, a Secret shared, a log), unless -sim.foreign=false: all of them,
// the instances', the bindings'.
func (w *world) foreignIDs(ns string) (foreign, instances, bindings []string) {
	for _, h := range w.ledger.Instances() {
		if !*foreignIDs {
			break
		}
		if h.Namespace != ns && !w.unmigrated(h.ID) && !w.movable(h.ID) { // (migrate_test.go, move_test.go)
			foreign, instances = append(foreign, h.ID), append(instances, h.ID)
		}
	}
	for _, h := range w.ledger.Bindings() {
		if !*foreignIDs {
			break
		}
		if h.Namespace != ns && !w.unmigrated(h.ID) && !w.movable(h.ID) {
			foreign, bindings = append(foreign, h.ID), append(bindings, h.ID)
		}
	}
	return foreign, instances, bindings
}

// forger forges the status of a tenant's records.
type forger struct {
	w       *world
	foreign []string // ids of other namespaces
}

// someID is an id of another namespace, or a made-up one.
func (f forger) someID() string {
	w := f.w
	if len(f.foreign) > 0 && w.rng.IntN(2) == 0 {
		return f.foreign[w.rng.IntN(len(f.foreign))]
	}
	return fmt.Sprintf("forged-%d", w.rng.IntN(100))
}

// op forges the operation status of a record whose operations are of types.
func (f forger) op(st *v1alpha1.OperationStatus, types []v1alpha1.OperationType) {
	w := f.w
	switch w.rng.IntN(8) {
	case 0:
		st.InFlight = &v1alpha1.Operation{Type: types[w.rng.IntN(len(types))], InstanceID: f.someID(), BindingID: f.someID(), RequestID: "forged"}
	case 1:
		st.InFlight = &v1alpha1.Operation{Type: types[w.rng.IntN(len(types))], Async: true, OperationKey: "op-1", InstanceID: f.someID(), BindingID: f.someID()}
	case 2:
		st.InFlight = &v1alpha1.Operation{Type: "Explode"}
	case 3:
		st.ExternalIDs = append(st.ExternalIDs, f.someID())
	case 4:
		st.ExternalID = f.someID()
	case 5:
		st.OrphanMitigation = &v1alpha1.OrphanMitigationState{Reason: "forged"}
	case 6:
		st.Retry = &v1alpha1.RetryState{Attempts: int32(w.rng.IntN(1 << 30)), Reason: "Forged"}
	default:
		st.Conditions = nil
		st.Phase = "Exploded"
	}
}

func (f forger) instance(x *v1alpha1.ServiceInstance) {
	switch f.w.rng.IntN(4) {
	case 0:
		// The status of issue 27's defect 2: an update in flight, nothing provisioned.
		x.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationUpdate, InstanceID: x.CurrentExternalID(), RequestID: "forged"}
		x.Status.Provisioned = nil
	case 1:
		x.Status.Provisioned = nil
		f.op(&x.Status.OperationStatus, []v1alpha1.OperationType{v1alpha1.OperationProvision, v1alpha1.OperationUpdate, v1alpha1.OperationDeprovision})
	case 2:
		f.op(&x.Status.OperationStatus, []v1alpha1.OperationType{v1alpha1.OperationProvision, v1alpha1.OperationUpdate, v1alpha1.OperationDeprovision})
	default:
		x.Labels = forgeLabels(f.w, x.Labels)
	}
}

func (f forger) binding(x *v1alpha1.ServiceBinding) {
	switch f.w.rng.IntN(4) {
	case 0:
		x.Status.Bound = nil
		f.op(&x.Status.OperationStatus, []v1alpha1.OperationType{v1alpha1.OperationBind, v1alpha1.OperationUnbind})
	case 1:
		x.Status.Retired = append(x.Status.Retired, f.someID())
	case 2:
		f.op(&x.Status.OperationStatus, []v1alpha1.OperationType{v1alpha1.OperationBind, v1alpha1.OperationUnbind})
	default:
		x.Labels = forgeLabels(f.w, x.Labels)
	}
}

func forgeLabels(w *world, l map[string]string) map[string]string {
	l = maps.Clone(l)
	if l == nil {
		l = map[string]string{}
	}
	keys := slices.Sorted(maps.Keys(l))
	if len(keys) > 0 && w.rng.IntN(2) == 0 {
		delete(l, keys[w.rng.IntN(len(keys))])
	} else {
		l["catalog.kubectl.io/instance"] = "db-0"
	}
	return l
}

// readyMessage is the message of a record's Ready condition.
func readyMessage(st *v1alpha1.OperationStatus) (string, bool) {
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	if c == nil {
		return "", false
	}
	return c.Message, c.Status == metav1.ConditionTrue
}
