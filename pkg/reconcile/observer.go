package reconcile

import (
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Ref names one record of a run.
type Ref struct {
	Kind, Namespace, Name string
}

// String is "instance NAMESPACE/NAME" (binding, broker).
func (r Ref) String() string {
	return KindWord(r.Kind) + " " + r.Namespace + "/" + r.Name
}

// RefOf is the record an item is about.
func RefOf(it Item) Ref { return Ref{Kind: it.Kind, Namespace: it.Namespace, Name: it.Name} }

// KindWord is the lower-case word for a record kind: instance, binding, broker.
func KindWord(kind string) string {
	switch kind {
	case v1alpha1.KindServiceInstance:
		return "instance"
	case v1alpha1.KindServiceBinding:
		return "binding"
	}
	return strings.ToLower(kind)
}

// Observer hears what a run does while it does it: "kubectl catalog reconcile" shows
// it as a live line on a terminal, or as log lines. Its methods are called from the
// run's goroutines, for different records at once: they must be safe for concurrent
// use, and quick (a run waits for them). For one record the calls come in order:
// RecordQueued, then StepStarted and StepScheduled any number of times, then
// RecordFinished once.
type Observer interface {
	// RecordQueued: the run has the record to look at: found when it started, or
	// added by it (the bindings an instance's deletion waits for).
	RecordQueued(ref Ref)
	// StepStarted: a worker takes a step on the record; action says which (one of
	// catalog's Next* actions, or a broker's).
	StepStarted(ref Ref, action string)
	// StepScheduled: the step ended and the record waits in the run's queue until at
	// for its next one (a poll, a retry); why says what the last step found.
	StepScheduled(ref Ref, at time.Time, why string)
	// RecordFinished: the run is done with the record; it is the record's line of the
	// summary.
	RecordFinished(it Item)
}

// Broker actions a run reports to its Observer.
const (
	// ActionBroker: fetch the broker's catalog if it is due, or release a broker being
	// deleted.
	ActionBroker = "look at the broker (catalog fetch, finalizer)"
)

// nopObserver is the Observer of a run that has none.
type nopObserver struct{}

func (nopObserver) RecordQueued(Ref)                     {}
func (nopObserver) StepStarted(Ref, string)              {}
func (nopObserver) StepScheduled(Ref, time.Time, string) {}
func (nopObserver) RecordFinished(Item)                  {}
func (o Options) observer() Observer {
	if o.Observer == nil {
		return nopObserver{}
	}
	return o.Observer
}
