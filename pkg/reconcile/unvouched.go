package reconcile

import (
	"context"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Unvouched lists the records with work that a run with o would refuse for want of a
// verified author, and could do with the rights of the user running it (see
// engine.Unvouched): none when the trust policy is in force. A person running
// reconcile by hand is shown them and may agree (Options.TrustRecords).
func (r *Reconciler) Unvouched(ctx context.Context, o Options) ([]engine.Unvouched, error) {
	if r.Engine.TrustPolicyInForce(ctx) {
		return nil, nil
	}
	pending, err := r.Store.ListPending(ctx, o.Namespace)
	if err != nil {
		return nil, err
	}
	var out []engine.Unvouched
	for _, p := range pending {
		if !o.Shard.Owns(p.Namespace, p.Name) {
			continue
		}
		var rec v1alpha1.Record
		switch p.Kind {
		case v1alpha1.KindBroker:
			rec, err = r.Store.Brokers().Get(ctx, p.Namespace, p.Name)
		case v1alpha1.KindServiceInstance:
			rec, err = r.Store.Instances().Get(ctx, p.Namespace, p.Name)
		case v1alpha1.KindServiceBinding:
			rec, err = r.Store.Bindings().Get(ctx, p.Namespace, p.Name)
		default:
			continue
		}
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		u, err := r.Engine.UnvouchedRecord(ctx, rec)
		if err != nil {
			return nil, err
		}
		if u != nil {
			out = append(out, *u)
		}
	}
	return out, nil
}
