package reconcile

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// visitBroker takes a broker's step (engine.Engine.StepBroker) and makes its item
// final, unless instances still hold the broker being deleted: it is then parked, and
// visited again once the run has no instance or binding of its namespace left to drive.
//
// A broker's step (its catalog's fetch, its deletion) holds one of the run's broker
// slots throughout, its API requests included: its calls go through the catalog's own
// clients, not the engine's, and take no slot of their own.
func (r *Reconciler) visitBroker(ctx context.Context, t *task, o Options) {
	release, err := engine.TakeBrokerSlot(ctx)
	if err != nil {
		t.it.Outcome, t.it.Detail, t.done = InProgress, "interrupted; left pending", true
		return
	}
	defer release()
	ctx = engine.WithBrokerSlots(ctx, nil)
	o.observer().StepStarted(t.ref(), ActionBroker)
	it, waits := r.driveBroker(ctx, t.w, t.it, o.DryRun)
	t.it, t.done = it, true
	if waits && !t.parked {
		t.park, t.parked, t.done = true, true, false
	}
}

// driveBroker reads the broker (unless the run listed it) and takes its step; waits
// reports that instances still hold the broker being deleted.
func (r *Reconciler) driveBroker(ctx context.Context, w work, it Item, dryRun bool) (_ Item, waits bool) {
	b := w.broker
	if b == nil {
		var err error
		b, err = r.Store.Brokers().Get(ctx, w.namespace, w.name)
		if store.IsNotFound(err) {
			it.Outcome, it.Detail = Done, "gone"
			return it, false
		}
		if _, bad := store.Unreadable(err); bad {
			return failed(it, unreadable(err)), false
		}
		if err != nil {
			return failed(it, err), false
		}
	}
	res, err := r.Engine.StepBroker(ctx, b, dryRun)
	it.Steps += res.Steps
	if err != nil {
		return failed(it, err), false
	}
	it.Outcome, it.Detail, it.Until = brokerOutcomes[res.Outcome], res.Message, res.Until
	return it, res.HeldByInstances
}

// brokerOutcomes are the outcomes of a broker's item, by the outcome of its step.
var brokerOutcomes = map[engine.BrokerOutcome]Outcome{
	engine.BrokerDone:       Done,
	engine.BrokerWaiting:    Waiting,
	engine.BrokerInProgress: InProgress,
	engine.BrokerClaimed:    Skipped,
	engine.BrokerRefused:    Refused,
	engine.BrokerWouldDo:    WouldDrive,
}
