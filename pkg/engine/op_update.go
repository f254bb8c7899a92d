package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/authority"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/engine/credentials"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// InstanceUpdateRequest is what update is asked for: for a brokered instance a plan,
// the maintenance version or parameters (UpdateRequest); for a user-provided one its
// credentials; for either the limits.
type InstanceUpdateRequest struct {
	Namespace, Name string
	UpdateRequest
	Limits      Limits
	Credentials CredentialsInput
	// Rebind asks for the instance's bindings to be rotated once this update settled
	// ("update --rebind"; rebind.go), once.
	Rebind bool
	// RebindOnUpdate, when set, changes spec.rebindOnUpdate ("--rebind=always", ...).
	RebindOnUpdate *v1alpha1.RebindPolicy
	DryRun         DryRun
	Follow         Follow
	// Vouch asks the user before the update makes her the author of what another person
	// wrote into the instance (see Voucher).
	Vouch Voucher
}

// brokered reports whether req changes what only a brokered instance has.
func (req InstanceUpdateRequest) brokered() bool {
	return req.Plan != "" || req.Upgrade || req.Parameters != nil
}

// Update changes an instance's spec as the user's intent and drives the instance (see
// Follow): the plan, maintenance version and parameters of a brokered instance (see
// PrepareUpdate), the credentials of a user-provided one, the limits of either. Notes
// and the line saying what changes go to Follow.Note; nothing to change writes nothing.
// A dry run writes nothing (the server one sends the update as a dry run) and calls no
// broker.
func (e *Engine) Update(ctx context.Context, req InstanceUpdateRequest) (InstanceResult, error) {
	if err := req.Limits.check(); err != nil {
		return InstanceResult{}, err
	}
	if req.brokered() && req.Credentials.given() {
		return InstanceResult{}, inputErrorf("--credentials-*, --syslog-drain-url and --route-service-url change a user-provided instance, which has no plan or parameters: give them without --plan, parameters or --upgrade")
	}
	if !req.DryRun.Enabled() {
		e.readAhead(ctx, req.Namespace, true)
	}
	inst, err := e.cfg.Store.Instances().Get(ctx, req.Namespace, req.Name)
	if err != nil {
		return InstanceResult{}, err
	}
	if err := CheckChangeable(inst, e.now()); err != nil {
		return InstanceResult{}, err
	}
	if inst.IsUserProvided() && (req.Rebind || req.RebindOnUpdate != nil) {
		return InstanceResult{}, inputErrorf("instance %q is user-provided: its bindings get a copy of its credentials whenever they change, so --rebind has nothing to do; give it for an instance of a broker", req.Name)
	}
	// The update is written on the record as read here (its resourceVersion guards
	// the write): what the user vouches for is what is written.
	if _, err := e.vouchBeforeWrite(ctx, inst, "instance", req.DryRun, req.Vouch); err != nil {
		return InstanceResult{}, err
	}
	if inst.IsUserProvided() {
		return instanceVerbs{e}.updateUserProvided(ctx, inst, req)
	}
	if req.Credentials.given() {
		return InstanceResult{}, inputErrorf("instance %q is not user-provided: its credentials come from its broker (rotate a binding's with \"kubectl catalog bind --rotate\")", req.Name)
	}
	prepared, err := e.PrepareUpdate(ctx, inst, req.UpdateRequest)
	if err != nil {
		return InstanceResult{}, err
	}
	for _, n := range prepared.Notes {
		req.Follow.note("%s", n)
	}
	// What changes the spec, for the rebind: the store's spec hash, as it counts the
	// generation. Parameters or a maintenance version the spec already holds are listed as
	// changes, but make no generation and send no update.
	held := specHashOf(inst)
	inst, changes := prepared.Instance, prepared.Changes
	brokerChanges := len(changes) > 0 && specChangedFrom(held, inst)
	changes = append(changes, req.Limits.apply(&inst.Spec)...)
	if p := req.RebindOnUpdate; p != nil && *p != inst.Spec.RebindOnUpdate {
		inst.Spec.RebindOnUpdate = *p
		changes = append(changes, "rebind on update "+string(*p))
	}
	instanceVerbs{e}.noteOverLimit(ctx, inst, req.Limits, req.Follow)
	rebind, err := instanceVerbs{e}.planRebindOnce(ctx, inst, req, len(changes) > 0 && specChangedFrom(held, inst), brokerChanges)
	if err != nil {
		return InstanceResult{}, err
	}
	if len(changes) == 0 && rebind == "" {
		req.Follow.note("Nothing to update for instance %q.", req.Name)
		return InstanceResult{Unchanged: true}, nil
	}
	if req.DryRun.Enabled() {
		what := fmt.Sprintf("instance %q in namespace %q would be updated (%s)", req.Name, req.Namespace, strings.Join(changes, ", "))
		if len(changes) == 0 {
			what = fmt.Sprintf("instance %q in namespace %q would not change", req.Name, req.Namespace)
		}
		if rebind != "" {
			what += ", then " + rebind
		}
		return instanceVerbs{e}.dryRunUpdate(ctx, req.DryRun, inst, changes, what)
	}
	if len(changes) > 0 {
		req.Follow.note("Updating instance %q in namespace %q (%s)...", req.Name, req.Namespace, strings.Join(changes, ", "))
	}
	if rebind != "" {
		req.Follow.note("Once the instance settled, %s, one at a time.", rebind)
	}
	// The instance's first step, moments later, takes the class as read here
	// (preparedReads).
	if prepared.Class != nil {
		e.prepared.keepClass(prepared.Class)
	}
	updated, err := e.cfg.Store.Instances().Update(req.DryRun.writes(ctx), inst)
	if err != nil {
		return InstanceResult{}, updateError(err, req.Name)
	}
	// The first step starts from the record as written (its resourceVersion guards the
	// write-ahead: a change by anyone since, a deletion mark included, makes it
	// conflict and the record is read again), and takes the broker read now, after the
	// write, so that a deregistration marked meanwhile is seen; the list of the check
	// that no older record uses the instance's OSB id goes out with it.
	ctx = withIDListsAhead(e, ctx, idKey{v1alpha1.KindServiceInstance, updated.CurrentExternalID()})
	ctx = withBrokerReadAhead(ctx, e.brokerNamespace(updated), updated.Spec.BrokerName, func(ctx context.Context) (*v1alpha1.Broker, error) {
		return e.cfg.Store.Brokers().Get(ctx, e.brokerNamespace(updated), updated.Spec.BrokerName)
	})
	if rebind != "" {
		ev := NewEvent(req.Namespace, store.ConfigMapName(v1alpha1.KindServiceInstance, req.Name), EventNormal, ReasonRebindRequested, "Rebind",
			"once the instance settled, "+rebind+", one at a time ("+RebindOnce+")")
		ev.UID = updated.GetUID()
		e.event(ctx, ev)
	}
	r, err := e.FollowInstance(ctx, req.Namespace, req.Name, "update", updated, req.Follow)
	return InstanceResult{Result: r, Changes: changes, Rebind: rebind != ""}, err
}

// planRebindOnce records in inst, about to be written, the rebind "update --rebind"
// asks for (the spec's generation it follows: the one this write makes when it changes
// the spec), and says what it rotates; empty when it was not asked for or the instance
// has no binding. changed: the write changes the spec; brokered: it changes what the
// broker holds, so a refusal of that update drops the rebind. Bad input changes nothing.
func (e instanceVerbs) planRebindOnce(ctx context.Context, inst *v1alpha1.ServiceInstance, req InstanceUpdateRequest, changed, brokered bool) (string, error) {
	if !req.Rebind {
		return "", nil
	}
	if !changed && meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionUpdateFailed) {
		return "", inputErrorf("instance %q: --rebind rotates the bindings after an update, and its last update was refused: go back to what the broker holds with %s, or give the update to make with --rebind",
			req.Name, hint.Quoted(req.Namespace, "update", req.Name, "--revert"))
	}
	if inst.Status.Provisioned == nil {
		// No binding of it holds credentials the broker handed out: they get theirs
		// when they are bound. A rebind recorded now would wait for a provision that
		// may never come, unanswered.
		if !changed {
			return "", inputErrorf("instance %q: --rebind rotates the credentials of its bindings, and the broker has not provisioned it: its bindings have none to rotate yet (see it with %s)",
				req.Name, hint.Quoted(req.Namespace, "describe", "instance", req.Name))
		}
		req.Follow.note("Instance %q is not provisioned: --rebind has nothing to rotate.", req.Name)
		return "", nil
	}
	listed, unseen, err := listBindingsOf(ctx, e.cfg.Store, inst)
	if err != nil {
		return "", err
	}
	var names []string
	for _, b := range listed {
		if rebindCandidate(inst, b) {
			names = append(names, bindingKey(b))
		}
	}
	var blind []string
	for _, ns := range unseen {
		if ns == inst.Namespace || authority.Lets(inst, ns) {
			blind = append(blind, ns)
		}
	}
	if len(names) == 0 && len(blind) == 0 {
		req.Follow.note("Instance %q has no bound binding: --rebind has nothing to rotate.", req.Name)
		return "", nil
	}
	slices.Sort(names)
	gen := inst.Generation
	if changed {
		gen++
	}
	if rb := inst.Status.Rebind; rb != nil {
		// Asked again while one is under way: with an update for the broker, it starts
		// over after that update; else it still follows the update it followed (a change
		// of the record only leaves the broker's credentials as they were), and what it
		// rotated since that update settled stays rotated.
		rb.Reason, rb.AfterUpdate = RebindOnce, rb.AfterUpdate || brokered
		if brokered {
			rb.Generation = max(rb.Generation, gen)
			restartRebind(rb)
		}
	} else {
		inst.Status.Rebind = &v1alpha1.RebindStatus{Generation: gen, Reason: RebindOnce, AfterUpdate: brokered, RequestedAt: metav1.NewTime(e.now())}
	}
	what := fmt.Sprintf("its bindings are rotated (%s)", strings.Join(names, ", "))
	if len(names) == 0 {
		what = "its bindings are rotated"
	}
	if len(blind) > 0 {
		what += fmt.Sprintf(" with those of namespace(s) %s, which you may not list (reconcile rotates them)", strings.Join(blind, ", "))
	}
	return what, nil
}

// updateUserProvided changes the credentials (and limits) of a user-provided instance:
// the spec's revision first, so the change is the user's and the instance stays pending
// until every binding has the new credentials; then the credentials Secret; then the
// instance is driven, which copies them to every binding it can (reconcile does the rest).
func (e instanceVerbs) updateUserProvided(ctx context.Context, inst *v1alpha1.ServiceInstance, req InstanceUpdateRequest) (InstanceResult, error) {
	if req.brokered() {
		return InstanceResult{}, inputErrorf("instance %q is user-provided: it has no plan or parameters; change its credentials with --credentials-json, --credentials-file, --credentials-from-secret or --credentials-keys", req.Name)
	}
	changes := req.Limits.apply(&inst.Spec)
	e.noteOverLimit(ctx, inst, req.Limits, req.Follow)
	var data map[string][]byte
	if req.Credentials.given() {
		var err error
		if data, err = e.readCredentials(ctx, req.Namespace, req.Credentials); err != nil {
			return InstanceResult{}, err
		}
		if data == nil {
			// Only a URL changes: the other credentials stay.
			cur, err := e.cfg.Store.ReadOwnedSecret(ctx, inst, inst.Spec.UserProvided.CredentialsSecret)
			if err != nil {
				return InstanceResult{}, fmt.Errorf("cannot read the credentials of instance %q to change its URLs: %w", req.Name, err)
			}
			data = cur.Data
		}
		if data, err = req.Credentials.withURLs(data, req.Credentials.sources() == 0); err != nil {
			return InstanceResult{}, err
		}
		inst.Spec.UserProvided.Revision++
		changes = append(changes, "credentials "+strings.Join(credentials.Keys(data), ", "))
	}
	if len(changes) == 0 {
		req.Follow.note("Nothing to update for instance %q.", req.Name)
		return InstanceResult{Unchanged: true}, nil
	}
	if req.DryRun.Enabled() {
		what := fmt.Sprintf("user-provided instance %q in namespace %q would be updated (%s)", req.Name, req.Namespace, strings.Join(changes, ", "))
		if data != nil {
			what += fmt.Sprintf(", its credentials written to Secret %q", inst.Spec.UserProvided.CredentialsSecret)
		}
		return e.dryRunUpdate(ctx, req.DryRun, inst, changes, what)
	}
	req.Follow.note("Updating user-provided instance %q in namespace %q (%s)...", req.Name, req.Namespace, strings.Join(changes, ", "))
	stored, err := e.cfg.Store.Instances().Update(req.DryRun.writes(ctx), inst)
	if err != nil {
		return InstanceResult{}, updateError(err, req.Name)
	}
	if data != nil {
		if err := e.WriteUserProvidedCredentials(ctx, stored, data); err != nil {
			return InstanceResult{}, fmt.Errorf("the credentials of instance %q could not be written to Secret %q (its bindings keep the old ones): %w", req.Name, inst.Spec.UserProvided.CredentialsSecret, err)
		}
	}
	r, err := e.FollowInstance(ctx, req.Namespace, req.Name, "update", nil, req.Follow)
	return InstanceResult{Result: r, Changes: changes}, err
}

// noteOverLimit says, when l sets a limit inst's bindings already exceed, which
// bindings hold the places: they stay, and new binds are refused (PlacesTaken counts
// every binding of the instance that exists, from every namespace it lets bind).
func (e instanceVerbs) noteOverLimit(ctx context.Context, inst *v1alpha1.ServiceInstance, l Limits, f Follow) {
	if l.MaxBindings == nil || inst.Spec.MaxBindings == nil {
		return
	}
	listed, unseen, err := listBindingsOf(ctx, e.cfg.Store, inst)
	if err != nil {
		return
	}
	limit := *inst.Spec.MaxBindings
	places := PlacesTaken(inst, listed, unseen)
	if int32(len(places)) > limit {
		f.note("Instance %q has %d bindings (%s), more than the limit of %d: they stay, and new binds are refused until fewer than %d remain.",
			inst.Name, len(places), consumerNames(places), limit, limit)
	}
	if blind := Uncounted(inst, unseen); len(blind) > 0 {
		f.note("Bindings of namespace(s) %s, which you may not list, count against the limit too.", strings.Join(blind, ", "))
	}
}

// updateError is the error of an instance record's update: a conflict says to run the
// command again.
func updateError(err error, name string) error {
	if store.IsConflict(err) {
		return fmt.Errorf("instance %q changed while it was being updated: run the command again", name)
	}
	return err
}

// dryRunUpdate is the result of a dry run of inst's update: for DryRunServer, the record
// as the API server (validation and admission, the trust policy included) accepted it
// without storing it. No broker is called and no Secret is written.
func (e instanceVerbs) dryRunUpdate(ctx context.Context, d DryRun, inst *v1alpha1.ServiceInstance, changes []string, summary string) (InstanceResult, error) {
	out := inst
	if d == DryRunServer {
		updated, err := e.cfg.Store.Instances().Update(d.writes(ctx), inst)
		if err != nil {
			if store.IsConflict(err) {
				return InstanceResult{}, updateError(err, inst.Name)
			}
			return InstanceResult{}, fmt.Errorf("instance %q would not be updated: %w", inst.Name, err)
		}
		out = updated
	}
	return InstanceResult{DryRun: out, Summary: summary, Changes: changes}, nil
}

// RevertRequest is what update --revert is asked for.
type RevertRequest struct {
	Namespace, Name string
	Follow          Follow
	// Vouch asks the user before the revert makes her the author of what another
	// person wrote into the instance, as for Update (see Voucher).
	Vouch Voucher
}

// Revert sets the instance's spec back to what its broker holds (see revertSpec) and
// drives the instance, which then settles without a broker call (or sends the update a
// changed parameters Secret needs). Nothing to revert writes nothing; it is an error
// when the instance's refused update came from elsewhere than its spec.
func (e *Engine) Revert(ctx context.Context, req RevertRequest) (InstanceResult, error) {
	inst, changes, err := e.revertSpecVouched(ctx, req.Namespace, req.Name, req.Vouch)
	if err != nil {
		return InstanceResult{}, err
	}
	if len(changes) == 0 {
		if meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionUpdateFailed) {
			return InstanceResult{}, fmt.Errorf(`instance %q already asks for the plan and parameters the broker holds: the refused update came from the values of a parameters Secret or from "touch": put the Secret's values back and run %s, or change the spec`, req.Name, hint.Quoted(req.Namespace, "touch", "instance", req.Name))
		}
		req.Follow.note("Nothing to revert: instance %q asks for what the broker holds.", req.Name)
		return InstanceResult{Unchanged: true}, nil
	}
	// The values come from the record's status: say what was written as your intent.
	req.Follow.note("Reverting instance %q in namespace %q to what the broker holds (%s)...", req.Name, req.Namespace, strings.Join(changes, "; "))
	r, err := e.FollowInstance(ctx, req.Namespace, req.Name, "update", nil, req.Follow)
	return InstanceResult{Result: r, Changes: changes}, err
}

// specHashOf is inst's spec as the store hashes it to count its generation; empty when
// it cannot be hashed.
func specHashOf(inst *v1alpha1.ServiceInstance) string {
	h, _ := store.SpecHash(inst)
	return h
}

// specChangedFrom reports whether inst's spec differs from the one hashed as held (a
// spec that cannot be hashed counts as changed).
func specChangedFrom(held string, inst *v1alpha1.ServiceInstance) bool {
	h := specHashOf(inst)
	return held == "" || h == "" || h != held
}
