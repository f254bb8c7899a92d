package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// This file forgets, on the cluster a namespace's services were moved from, the records
// another cluster has taken over (op_moved.go), without calling the broker: "kubectl
// catalog release". Each record is first marked (AnnotationReleasedTo, the write-ahead of
// the release); a step never calls the broker for a marked record, it drops it (its
// projections, Secret and finalizer) as "deprovision --abandon" does. So once marked, a
// deprovision or unbind here, by a verb, by reconcile or by a namespace's deletion, can
// no longer reach the broker, and the two clusters never both act on one id.

// AnnotationReleasedTo, on a record, is the id of the cluster it was released to: the
// record is dropped without a broker call.
const AnnotationReleasedTo = v1alpha1.AnnotationReleasedTo

// ReleaseConfirmer reads the cluster the records were moved to.
type ReleaseConfirmer interface {
	// ClusterID is that cluster's id.
	ClusterID(ctx context.Context) (string, error)
	// Confirm checks that the cluster holds, settled, a record of kind in namespace under
	// name with OSB id id, moved in from cluster from; the error says what it lacks.
	Confirm(ctx context.Context, kind, namespace, name, id, from string) error
}

// ReleaseRequest asks for the release of a namespace's instances and their bindings.
type ReleaseRequest struct {
	Namespace string
	// Instances are the instances to release with their bindings; empty: all of the
	// namespace's.
	Instances []string
	// Confirm reads the cluster they were moved to; nil refuses the release.
	Confirm ReleaseConfirmer
	// DryRun does every check and writes nothing.
	DryRun bool
}

// ReleasedRecord is a record released, or that would be.
type ReleasedRecord struct {
	Kind, Namespace, Name, ExternalID string
}

// ReleaseResult is what a release did, or would do.
type ReleaseResult struct {
	// To is the id of the cluster the records were released to.
	To       string
	Released []ReleasedRecord
}

// ReleaseMoved forgets the namespace's instances (all, or those named) and their bindings of
// the namespace without calling the broker, once the other cluster confirms it holds
// each of them, settled, under the same OSB id, moved in from this cluster. A record with
// work under way, or one the other cluster does not confirm, refuses the whole release
// and nothing is written. Then every record is marked released (the write-ahead), and
// dropped: bindings first, their Secrets and projections with them, then instances.
func (e *Engine) ReleaseMoved(ctx context.Context, req ReleaseRequest) (ReleaseResult, error) {
	var res ReleaseResult
	if req.Confirm == nil {
		return res, inputErrorf("releasing the services of namespace %q needs the cluster they were moved to, to confirm it holds them: give --confirm-with-kubeconfig (and --confirm-context)", req.Namespace)
	}
	here, err := e.ClusterID(ctx)
	if err != nil {
		return res, err
	}
	if res.To, err = req.Confirm.ClusterID(ctx); err != nil {
		return res, fmt.Errorf("the cluster to confirm with: %w", err)
	}
	if res.To == here {
		return res, inputErrorf("the cluster to confirm with is this cluster (id %s): give the kubeconfig and context of the cluster the services were moved to", here)
	}
	insts, bindings, err := e.releasable(ctx, req)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, b := range bindings {
		res.Released = append(res.Released, ReleasedRecord{Kind: v1alpha1.KindServiceBinding, Namespace: b.Namespace, Name: b.Name, ExternalID: b.CurrentExternalID()})
		if released(b) {
			continue
		}
		if err := req.Confirm.Confirm(ctx, v1alpha1.KindServiceBinding, b.Namespace, b.Name, b.CurrentExternalID(), here); err != nil {
			errs = append(errs, fmt.Errorf("binding %q: %w", b.Name, err))
		}
	}
	for _, inst := range insts {
		res.Released = append(res.Released, ReleasedRecord{Kind: v1alpha1.KindServiceInstance, Namespace: inst.Namespace, Name: inst.Name, ExternalID: inst.CurrentExternalID()})
		if released(inst) {
			continue
		}
		if err := req.Confirm.Confirm(ctx, v1alpha1.KindServiceInstance, inst.Namespace, inst.Name, inst.CurrentExternalID(), here); err != nil {
			errs = append(errs, fmt.Errorf("instance %q: %w", inst.Name, err))
		}
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("nothing was released: the cluster %s does not confirm it holds every record: %w", res.To, errors.Join(errs...))
	}
	if req.DryRun {
		return res, nil
	}
	// The write-ahead: every record is marked before any is dropped.
	for _, b := range bindings {
		if err := markReleased(e, ctx, e.cfg.Store.Bindings(), b, res.To); err != nil {
			return res, err
		}
	}
	for _, inst := range insts {
		if err := markReleased(e, ctx, e.cfg.Store.Instances(), inst, res.To); err != nil {
			return res, err
		}
	}
	for _, b := range bindings {
		if err := e.AbandonBinding(ctx, b); err != nil {
			return res, fmt.Errorf("binding %q is marked released, but its record could not be removed: %w; run this again, or reconcile removes it", b.Name, err)
		}
	}
	for _, inst := range insts {
		if err := e.AbandonInstance(ctx, inst); err != nil {
			return res, fmt.Errorf("instance %q is marked released, but its record could not be removed: %w; run this again, or reconcile removes it", inst.Name, err)
		}
	}
	return res, nil
}

// CheckMoveInFinished, run by an engine of the cluster the records were moved to (the
// ReleaseConfirmer's, with the user's rights there), refuses a record of kind
// namespace/name there that an interrupted apply left unfinished (UnfinishedMoveIn: its
// id claim not made, or a binding's Secret still owned by its instance's record). Released
// then, nothing would finish it but applying the export again, and until then a bind of
// the binding there (a rotation) cannot write its own Secret and fails for good.
func (e *Engine) CheckMoveInFinished(ctx context.Context, kind, namespace, name string) error {
	missing, err := e.UnfinishedMoveIn(ctx, kind, namespace, name)
	if err != nil {
		return fmt.Errorf("whether its move in there is finished could not be read: %w", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("the apply that moved it in there was interrupted before %s: apply the export there again (\"kubectl catalog apply -f\" with the same file), then release again", strings.Join(missing, " and "))
	}
	return nil
}

// releasable reads the instances to release and their bindings of the namespace, and
// refuses those with work under way.
func (e *Engine) releasable(ctx context.Context, req ReleaseRequest) ([]*v1alpha1.ServiceInstance, []*v1alpha1.ServiceBinding, error) {
	var insts []*v1alpha1.ServiceInstance
	if len(req.Instances) == 0 {
		all, err := e.cfg.Store.Instances().List(ctx, req.Namespace, store.Filter{})
		if err != nil {
			return nil, nil, err
		}
		if len(all) == 0 {
			return nil, nil, inputErrorf("namespace %q has no instances to release: check the namespace (-n)", req.Namespace)
		}
		insts = all
	}
	for _, name := range req.Instances {
		inst, err := e.cfg.Store.Instances().Get(ctx, req.Namespace, name)
		if store.IsNotFound(err) {
			return nil, nil, inputErrorf("instance %q does not exist in namespace %q: check its name and namespace (\"kubectl catalog get instances -n %s\")", name, req.Namespace, req.Namespace)
		}
		if err != nil {
			return nil, nil, err
		}
		insts = append(insts, inst)
	}
	var bindings []*v1alpha1.ServiceBinding
	var errs []error
	for _, inst := range insts {
		if err := releaseSettled("instance", inst, inst.Status.Provisioned == nil); err != nil {
			errs = append(errs, err)
		}
		bs, err := e.cfg.Store.Bindings().List(ctx, inst.Namespace, store.Filter{Instance: inst.Name})
		if err != nil {
			return nil, nil, err
		}
		for _, b := range bs {
			if b.Spec.InstanceNamespace != "" && b.Spec.InstanceNamespace != inst.Namespace {
				continue
			}
			if err := releaseSettled("binding", b, b.Status.Bound == nil); err != nil {
				errs = append(errs, err)
			}
			bindings = append(bindings, b)
		}
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("nothing was released: %w", errors.Join(errs...))
	}
	return insts, bindings, nil
}

// releaseSettled refuses the release of a record with work under way: the other cluster
// took it over as it was when exported, and what goes on here would be lost.
func releaseSettled[T driven[T]](kind string, x T, unmade bool) error {
	if released(x) {
		return nil
	}
	st := x.OpStatus()
	switch {
	case x.GetDeletionTimestamp() != nil:
		return fmt.Errorf("%s %q is being deleted here: it cannot be released; let that finish, or give it back to this cluster", kind, x.GetName())
	case unmade || st.InFlight != nil || st.Retry != nil || st.OrphanMitigation != nil:
		return fmt.Errorf("%s %q has work under way here (%s): wait for it (\"kubectl catalog wait %s/%s -n %s\"), then export and move it again", kind, x.GetName(), st.Phase, kind, x.GetName(), x.GetNamespace())
	}
	return nil
}

// released reports a record marked released to another cluster.
func released(x interface{ GetAnnotations() map[string]string }) bool {
	return x.GetAnnotations()[AnnotationReleasedTo] != ""
}

// markReleased writes the release mark on x, refusing a record that has work under way
// or another driver's live claim since it was checked: one write, guarded by its
// resourceVersion, after which no step calls the broker for it.
func markReleased[T driven[T]](e *Engine, ctx context.Context, recs store.Records[T], x T, to string) error {
	_, err := recs.UpdateWithRetry(ctx, x.GetNamespace(), x.GetName(), func(cur T) error {
		if cur.GetUID() != x.GetUID() {
			return fmt.Errorf("%s %q was replaced meanwhile: nothing more was released; run this again", recs.Kind(), x.GetName())
		}
		if l, ok := store.LeaseOf(cur); ok && l.Holder != e.cfg.Holder && e.claimLeft(cur, l) > 0 {
			return fmt.Errorf("%s %q is being worked on by %s: nothing more was released; run this again", recs.Kind(), x.GetName(), l.Holder)
		}
		if err := releaseSettled(recs.Kind(), cur, false); err != nil {
			return err
		}
		a := cur.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[AnnotationReleasedTo] = to
		cur.SetAnnotations(a)
		return nil
	})
	return err
}

// stepReleased drops a record marked released, calling no broker: done reports that the
// step ends here.
func stepReleased[T driven[T]](e *Engine, ctx context.Context, x T) (Result, bool, error) {
	if !released(x) {
		return Result{}, false, nil
	}
	var err error
	switch v := any(x).(type) {
	case *v1alpha1.ServiceInstance:
		err = e.AbandonInstance(ctx, v)
	case *v1alpha1.ServiceBinding:
		err = e.AbandonBinding(ctx, v)
	default:
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, true, err
	}
	return withRecord(Result{State: StateDeleted, Message: fmt.Sprintf("released to cluster %s: dropped without a broker call", x.GetAnnotations()[AnnotationReleasedTo])}, x), true, nil
}
