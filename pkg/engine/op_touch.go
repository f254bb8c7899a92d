package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// TouchRequest is what touch instance is asked for.
type TouchRequest struct {
	Namespace, Name string
	DryRun          DryRun
	Follow          Follow
	// Vouch asks the user before the touch makes her the author of what another person
	// wrote into the instance (see Voucher).
	Vouch Voucher
}

// Touch asks for every parameter of an instance to be sent to its broker again, as an
// update (after a Secret they come from changed, or when the broker lost track of
// them): the record is marked as the user's intent, then driven (see Follow), which
// sends the update. A dry run writes nothing (the server one sends the mark as a dry
// run) and calls no broker.
func (e *Engine) Touch(ctx context.Context, req TouchRequest) (InstanceResult, error) {
	if err := (instanceVerbs{e}).checkTouch(ctx, req.Namespace, req.Name); err != nil {
		return InstanceResult{}, err
	}
	shown, err := instanceVerbs{e}.vouchTouch(ctx, req)
	if err != nil {
		return InstanceResult{}, err
	}
	if req.DryRun.Enabled() {
		return instanceVerbs{e}.dryRunTouch(ctx, req)
	}
	req.Follow.note("Re-sending the parameters of instance %q in namespace %q...", req.Name, req.Namespace)
	// Marked only on the spec checked (and shown) above.
	_, err = e.cfg.Store.Instances().UpdateWithRetry(req.DryRun.writes(ctx), req.Namespace, req.Name, func(x *v1alpha1.ServiceInstance) error {
		if shown != nil {
			if err := shown.still(x); err != nil {
				return err
			}
		}
		return instanceVerbs{e}.touch(x)
	})
	if err != nil {
		return InstanceResult{}, err
	}
	r, err := e.FollowInstance(ctx, req.Namespace, req.Name, "update", nil, req.Follow)
	return InstanceResult{Result: r}, err
}

// vouchTouch checks the instance touch marks before it writes it as the user's intent
// (Engine.vouchBeforeWrite); nil when it is not found, which the write then reports.
func (e instanceVerbs) vouchTouch(ctx context.Context, req TouchRequest) (*shownSpec, error) {
	inst, err := e.cfg.Store.Instances().Get(ctx, req.Namespace, req.Name)
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	shown, err := e.vouchBeforeWrite(ctx, inst, "instance", req.DryRun, req.Vouch)
	return &shown, err
}

// dryRunTouch is the instance record as touch would leave it: for DryRunServer, as the
// API server (validation and admission, the trust policy included) accepted the change
// without storing it.
func (e instanceVerbs) dryRunTouch(ctx context.Context, req TouchRequest) (InstanceResult, error) {
	var inst *v1alpha1.ServiceInstance
	var err error
	if req.DryRun == DryRunServer {
		inst, err = e.markTouched(req.DryRun.writes(ctx), req.Namespace, req.Name)
	} else {
		inst, err = e.touchPreview(ctx, req.Namespace, req.Name)
	}
	if store.IsNotFound(err) {
		return InstanceResult{}, fmt.Errorf(`instance %q not found in namespace %q: list the instances with %s`, req.Name, req.Namespace, hint.Quoted(req.Namespace, "get", "instances"))
	}
	if err != nil {
		return InstanceResult{}, err
	}
	return InstanceResult{DryRun: inst, Summary: fmt.Sprintf("the parameters of instance %q in namespace %q would be re-sent to its broker", req.Name, req.Namespace)}, nil
}

// checkTouch checks what touch makes the next update send, every parameter, against the
// update schema of the instance's plan, as update checks what it sends (see
// planUpdateBody). An instance that touch refuses for another reason, or that is not
// found, is left to markTouched to report.
func (e instanceVerbs) checkTouch(ctx context.Context, namespace, name string) error {
	inst, err := e.cfg.Store.Instances().Get(ctx, namespace, name)
	if err != nil || inst.IsUserProvided() || inst.Status.Provisioned == nil {
		return nil
	}
	update, err := e.updateSchema(ctx, inst)
	if err != nil {
		return err
	}
	params, err := e.resolved(ctx, namespace, rawOf(inst.Spec.Parameters), inst.Spec.ParametersFrom)
	if err == nil {
		_, _, err = planUpdateBody(update, params, nil, nil)
	}
	if err != nil {
		return fmt.Errorf("instance %q not touched: touch sends every parameter, and the plan's update schema refuses them: %w; change them with %s (see the schemas with \"kubectl catalog describe plan %s/%s --show-schemas\")",
			name, err, hint.Quoted(inst.Namespace, "update", name, "-p", "KEY=VALUE"), inst.Spec.ClassExternalName, inst.Spec.PlanExternalName)
	}
	return nil
}

// updateSchema is the update schema of the instance's plan (the spec's); nil when it has
// none.
func (e instanceVerbs) updateSchema(ctx context.Context, inst *v1alpha1.ServiceInstance) (json.RawMessage, error) {
	s, err := e.cfg.Store.PlanSchemas().Get(ctx, e.brokerNamespace(inst), v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID))
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the parameter schemas of instance %q's plan: %w", inst.Name, err)
	}
	if ps := s.ForPlan(inst.Spec.PlanID); ps != nil && ps.InstanceUpdate != nil {
		return ps.InstanceUpdate.Raw, nil
	}
	return nil, nil
}
