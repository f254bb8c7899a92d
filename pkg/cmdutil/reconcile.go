package cmdutil

import (
	"github.com/kubectl-catalog/kubectl-catalog/pkg/install"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
)

// Reconciler builds what "kubectl catalog reconcile" runs: a reconciler on the engine
// Engine(o) builds, its store and its clock. logf logs what a run's summary cannot
// hold.
func (f *Factory) Reconciler(o EngineOptions, logf func(format string, args ...any)) (*reconcile.Reconciler, error) {
	eng, err := f.Engine(o)
	if err != nil {
		return nil, err
	}
	return &reconcile.Reconciler{Store: eng.Store, Engine: eng.Engine, Now: eng.Now, Logf: logf}, nil
}

// StampCounter is what "reconcile install" and "reconcile uninstall" count the records
// a change of the trust policy strands with: the factory's store.
func (f *Factory) StampCounter() (install.StampCounter, error) {
	st, err := f.Store()
	if err != nil {
		return nil, err
	}
	return st, nil
}
