package reconcile

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// engineRecord is a record kind the engine drives step by step: instances and
// bindings.
type engineRecord interface {
	v1alpha1.Record
	OpStatus() *v1alpha1.OperationStatus
}

// kindOps are the store's and the engine's calls for one record kind. They are the
// only place where instances and bindings differ to the scheduler.
type kindOps[T engineRecord] struct {
	get     func(ctx context.Context, namespace, name string) (T, error)
	next    func(T) engine.NextStep
	step    func(context.Context, T) (engine.Result, error)
	stored  func(engine.Result) (T, bool)
	release func(context.Context, T) error
	// takeOver removes a claim whose process has ended (engine.Engine.TakeOverInstance).
	takeOver func(context.Context, T) (T, bool, error)
	// remedy is what a person does about a terminal failure.
	remedy string
}

func (r *Reconciler) instanceOps() *kindOps[*v1alpha1.ServiceInstance] {
	step := r.Engine.StepInstance
	if r.stepInstance != nil {
		step = r.stepInstance
	}
	return &kindOps[*v1alpha1.ServiceInstance]{
		get:  r.Store.Instances().Get,
		next: r.Engine.NextStep,
		step: step,
		stored: func(res engine.Result) (*v1alpha1.ServiceInstance, bool) {
			return res.Instance, res.Instance != nil
		},
		release:  r.Engine.Release,
		takeOver: r.Engine.TakeOverInstance,
		remedy:   "change the spec or deprovision",
	}
}

func (r *Reconciler) bindingOps() *kindOps[*v1alpha1.ServiceBinding] {
	return &kindOps[*v1alpha1.ServiceBinding]{
		get:  r.Store.Bindings().Get,
		next: r.Engine.NextBindingStep,
		step: r.Engine.StepBinding,
		stored: func(res engine.Result) (*v1alpha1.ServiceBinding, bool) {
			return res.Binding, res.Binding != nil
		},
		release:  r.Engine.ReleaseBinding,
		takeOver: r.Engine.TakeOverBinding,
		remedy:   "change the spec or unbind",
	}
}

// record is one instance or binding as the scheduler drives it: the latest copy read
// from or stored by the API server, and the calls of its kind. It is used by one
// worker at a time.
type record interface {
	// read gets the record from the API server; false when it is gone. The first read
	// of a record the run's list read in full takes that copy (fromList).
	read(ctx context.Context) (bool, error)
	// fromList reports whether the copy read last is the run's list's, not the record
	// as it is now.
	fromList() bool
	// loaded reports whether a copy was read or stored.
	loaded() bool
	next() engine.NextStep
	// step takes one engine step and keeps the record the step stored.
	step(ctx context.Context) (engine.Result, error)
	// release drops this run's claim on the record (nothing when it holds none).
	release(ctx context.Context) error
	// takeOver removes another driver's claim left by a process of this host that has
	// ended; true when it did.
	takeOver(ctx context.Context) (bool, error)
	object() engineRecord
	remedy() string
}

// recordOf is the record a work item names, of its kind.
func (r *Reconciler) recordOf(w work) record {
	if w.kind == v1alpha1.KindServiceBinding {
		t := &typed[*v1alpha1.ServiceBinding]{ops: r.bindingOps(), namespace: w.namespace, name: w.name}
		t.listed, t.hasListed = w.listed.(*v1alpha1.ServiceBinding)
		return t
	}
	t := &typed[*v1alpha1.ServiceInstance]{ops: r.instanceOps(), namespace: w.namespace, name: w.name}
	t.listed, t.hasListed = w.listed.(*v1alpha1.ServiceInstance)
	return t
}

// typed implements record for one kind.
type typed[T engineRecord] struct {
	ops             *kindOps[T]
	namespace, name string
	cur             T
	ok              bool
	// listed is the copy of the run's list, which the first read takes instead of a
	// request (hasListed), and isListed says that cur is that copy.
	listed              T
	hasListed, isListed bool
}

func (t *typed[T]) read(ctx context.Context) (bool, error) {
	t.isListed = false
	if t.hasListed {
		t.cur, t.ok, t.isListed, t.hasListed = t.listed, true, true, false
		var zero T
		t.listed = zero
		return true, nil
	}
	x, err := t.ops.get(ctx, t.namespace, t.name)
	if store.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	t.cur, t.ok = x, true
	return true, nil
}

func (t *typed[T]) loaded() bool { return t.ok }

func (t *typed[T]) fromList() bool { return t.isListed }

func (t *typed[T]) next() engine.NextStep { return t.ops.next(t.cur) }

func (t *typed[T]) step(ctx context.Context) (engine.Result, error) {
	res, err := t.ops.step(ctx, t.cur)
	if x, ok := t.ops.stored(res); ok {
		t.cur, t.isListed = x, false
	}
	return res, err
}

func (t *typed[T]) release(ctx context.Context) error {
	if !t.ok {
		return nil
	}
	return t.ops.release(ctx, t.cur)
}

func (t *typed[T]) takeOver(ctx context.Context) (bool, error) {
	x, took, err := t.ops.takeOver(ctx, t.cur)
	if took {
		t.cur = x
	}
	return took, err
}

func (t *typed[T]) object() engineRecord { return t.cur }

func (t *typed[T]) remedy() string { return t.ops.remedy }
