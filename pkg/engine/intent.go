package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/hint"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// NewInstance builds the record of a new instance of plan of class, with a fresh OSB id
// unless externalID is given. Parameters are a JSON object (nil for none).
func NewInstance(namespace, name string, class *v1alpha1.ServiceClass, plan *v1alpha1.ServicePlan, params []byte, from []v1alpha1.ParametersFromSource, externalID string) *v1alpha1.ServiceInstance {
	if externalID == "" {
		externalID = v1alpha1.NewNamespaceBoundID(namespace)
	}
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope: class.Spec.Scope, BrokerName: class.Spec.BrokerName,
			ClassExternalName: class.Spec.ExternalName, ClassID: class.Spec.ID,
			PlanExternalName: plan.ExternalName, PlanID: plan.ID,
			ParametersFrom: from, ExternalID: externalID,
		},
		Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{Phase: v1alpha1.PhasePending}},
	}
	if len(params) > 0 {
		inst.Spec.Parameters = &runtime.RawExtension{Raw: params}
	}
	return inst
}

// BusyError says an instance has an operation in flight, so its spec may not change
// now.
type BusyError struct {
	Instance *v1alpha1.ServiceInstance
	Now      time.Time
}

func (e *BusyError) Error() string {
	op := e.Instance.Status.InFlight
	what := "being changed"
	switch op.Type {
	case v1alpha1.OperationProvision:
		what = "still provisioning"
	case v1alpha1.OperationUpdate:
		what = "still updating"
	case v1alpha1.OperationDeprovision:
		what = "being deprovisioned"
	}
	id := op.OperationKey
	if id == "" {
		id = op.RequestID
	}
	waitFor, then := WaitForReady, ", then try again"
	if op.Type == v1alpha1.OperationDeprovision {
		waitFor, then = WaitForDelete, ""
	}
	return fmt.Sprintf(`instance %q is %s (operation %s, %s): wait for it with "%s"%s; see "kubectl catalog describe instance %s -n %s"`,
		e.Instance.Name, what, id, e.Now.Sub(op.StartedAt.Time).Round(time.Second),
		WaitCommand(v1alpha1.KindServiceInstance, e.Instance.Namespace, e.Instance.Name, waitFor), then, e.Instance.Name, e.Instance.Namespace)
}

// CheckChangeable refuses to change an instance that has an operation in flight or is
// being deleted: an interrupted call is re-sent identically only while the spec it was
// made from stays as it was.
func CheckChangeable(inst *v1alpha1.ServiceInstance, now time.Time) error {
	if inst.DeletionTimestamp != nil {
		return fmt.Errorf("instance %q is being deprovisioned and cannot be changed: run \"kubectl catalog describe instance %s\"", inst.Name, inst.Name)
	}
	if inst.Status.InFlight != nil {
		return &BusyError{Instance: inst, Now: now}
	}
	return nil
}

// markTouched asks for the instance's parameters to be sent to the broker again (an
// update with every parameter), e.g. after a Secret they come from changed in a way the
// broker must see. It only marks the record, written with ctx (DryRun.writes: the user's
// intent); the next step sends the update.
func (e *Engine) markTouched(ctx context.Context, namespace, name string) (*v1alpha1.ServiceInstance, error) {
	return e.cfg.Store.Instances().UpdateWithRetry(ctx, namespace, name, instanceVerbs{e}.touch)
}

// touchPreview is the instance record as markTouched would leave it, read and changed
// in memory only (a client-side dry run): nothing is written.
func (e instanceVerbs) touchPreview(ctx context.Context, namespace, name string) (*v1alpha1.ServiceInstance, error) {
	inst, err := e.cfg.Store.Instances().Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	inst = inst.DeepCopy()
	if err := e.touch(inst); err != nil {
		return nil, err
	}
	return inst, nil
}

// touch marks the instance's parameters to be sent again, all of them.
func (e instanceVerbs) touch(inst *v1alpha1.ServiceInstance) error {
	if err := CheckChangeable(inst, e.now()); err != nil {
		return err
	}
	if inst.Status.Provisioned == nil {
		return fmt.Errorf("instance %q is not provisioned yet; nothing to re-send: run %s", inst.Name, hint.Quoted(inst.Namespace, "describe", "instance", inst.Name))
	}
	inst.Status.Provisioned.ParametersChecksum = touchedChecksum
	inst.Status.Provisioned.ParameterHashes = nil
	now := metav1.NewTime(e.now())
	inst.Status.Retry = &v1alpha1.RetryState{Reason: ReasonUpdateRequested, LastError: "parameters to be re-sent (touch)", NextRetryAt: &now}
	return nil
}

// touchedChecksum stands for parameters to be sent again, all of them: no checksum of
// any parameters matches it.
const touchedChecksum = "touched"

// AbandonInstance drops the instance's records (and its bindings' records) without
// calling the broker: whatever the broker holds stays there, unknown to the catalog.
// It is the way out when a broker is gone for good.
func (e *Engine) AbandonInstance(ctx context.Context, inst *v1alpha1.ServiceInstance) error {
	bs, err := e.cfg.Store.Bindings().List(ctx, inst.Namespace, store.Filter{Instance: inst.Name})
	if err != nil {
		return err
	}
	for _, b := range bs {
		if err := e.AbandonBinding(ctx, b); err != nil {
			return err
		}
	}
	if err := e.cfg.Store.Instances().Delete(ctx, inst.Namespace, inst.Name); err != nil && !store.IsNotFound(err) {
		return err
	}
	if _, err := e.cfg.Store.Instances().RemoveFinalizer(ctx, inst); err != nil && !store.IsNotFound(err) {
		return err
	}
	return nil
}

// InlineParameterHashes are the per-key hashes of inline parameters, as
// status.provisioned.parameterHashes keeps them: comparing the two tells which inline
// parameters of the spec the broker does not hold.
func InlineParameterHashes(inline *runtime.RawExtension) (map[string]string, error) {
	p, err := ResolveParameters(context.Background(), "", inline, nil, nil)
	if err != nil {
		return nil, err
	}
	return p.InlineHashes(), nil
}

// revertSpec sets the instance's spec back to what its broker holds (status.provisioned): the
// plan, the maintenance version, and the parameters as the spec named them when the broker
// accepted them (inline values, and references to Secrets, whose values are read again at
// the next call). It is the user's intent, written like any spec change: the next step
// finds nothing to send and marks the instance Ready without calling the broker, unless a
// parameters Secret's values changed since, which an update then sends. It returns the
// record written and what changed; no change writes nothing.
func (e *Engine) revertSpec(ctx context.Context, namespace, name string) (*v1alpha1.ServiceInstance, []string, error) {
	return e.revertSpecVouched(ctx, namespace, name, Voucher{})
}

// revertSpecVouched is revertSpec, vouch asking the user before the revert makes her
// the author of what another person wrote into the instance (none: refused).
func (e *Engine) revertSpecVouched(ctx context.Context, namespace, name string, vouch Voucher) (*v1alpha1.ServiceInstance, []string, error) {
	inst, err := e.cfg.Store.Instances().Get(ctx, namespace, name)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckChangeable(inst, e.now()); err != nil {
		return nil, nil, err
	}
	prov := inst.Status.Provisioned
	if prov == nil {
		return nil, nil, fmt.Errorf("instance %q is not provisioned, so the broker holds nothing to go back to: change its spec (%s) or deprovision it", name, hint.Quoted(namespace, "update", name))
	}
	planName := inst.Spec.PlanExternalName
	if prov.PlanID != inst.Spec.PlanID {
		class, err := e.cfg.Store.Classes().Get(ctx, e.brokerNamespace(inst), v1alpha1.ClassRecordName(inst.Spec.BrokerName, inst.Spec.ClassID))
		if err != nil && !store.IsNotFound(err) {
			return nil, nil, err
		}
		var plan *v1alpha1.ServicePlan
		if class != nil && err == nil {
			plan = class.PlanByID(prov.PlanID)
		}
		if plan == nil {
			return nil, nil, fmt.Errorf("the plan instance %q has at the broker (id %s) is not in the catalog: run \"kubectl catalog sync broker %s\"", name, prov.PlanID, inst.Spec.BrokerName)
		}
		planName = plan.ExternalName
	}
	inline, from, err := revertedParameters(inst)
	if err != nil {
		return nil, nil, err
	}
	// What the broker holds sends nothing, unless a parameters Secret changed since: then
	// the update that sends it is checked as any update is (planUpdateParameters).
	held := inst.DeepCopy()
	held.Spec.PlanID = prov.PlanID
	update, err := instanceVerbs{e}.updateSchema(ctx, held)
	if err != nil {
		return nil, nil, err
	}
	// The revert writes the spec as the user's intent, the rest of it (sharing, limits,
	// what else another person wrote) with it: she vouches for it first, as for an update
	// (vouchBeforeWrite), once something is to be reverted, for the spec as the revert
	// writes it (any change meanwhile refuses the write below).
	if reverted := inst.DeepCopy(); len(revertChanges(reverted, prov, planName, inline, from)) > 0 {
		if _, err := e.vouchBeforeWrite(ctx, reverted, "instance", DryRunNone, vouch); err != nil {
			return nil, nil, err
		}
	}
	var changes []string
	stored, err := e.cfg.Store.Instances().UpdateWithRetry(store.WithIntent(ctx), namespace, name, func(x *v1alpha1.ServiceInstance) error {
		if err := CheckChangeable(x, e.now()); err != nil {
			return err
		}
		if x.Status.Provisioned == nil || !reflect.DeepEqual(x.Status.Provisioned, prov) || !reflect.DeepEqual(x.Spec, inst.Spec) {
			return fmt.Errorf("instance %q changed meanwhile: run the command again", name)
		}
		changes = revertChanges(x, prov, planName, inline, from)
		if len(changes) == 0 {
			return errNothingToRevert
		}
		if _, err := (instanceVerbs{e}).planUpdateParameters(ctx, x, nil, update, nil); err != nil {
			return fmt.Errorf("instance %q not reverted: %w", name, err)
		}
		return nil
	})
	if errors.Is(err, errNothingToRevert) {
		return inst, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return stored, changes, nil
}

// revertChanges sets x's spec back to what the broker holds (prov, the plan's name
// planName, the parameters inline and from) and says what changed.
func revertChanges(x *v1alpha1.ServiceInstance, prov *v1alpha1.ProvisionedState, planName string, inline *runtime.RawExtension, from []v1alpha1.ParametersFromSource) []string {
	var changes []string
	if x.Spec.PlanID != prov.PlanID {
		x.Spec.PlanID, x.Spec.PlanExternalName = prov.PlanID, planName
		changes = append(changes, "plan "+planName)
	}
	if x.Spec.MaintenanceInfoVersion != "" && x.Spec.MaintenanceInfoVersion != prov.MaintenanceInfoVersion {
		x.Spec.MaintenanceInfoVersion = prov.MaintenanceInfoVersion
		changes = append(changes, "maintenance version "+orNone(prov.MaintenanceInfoVersion))
	}
	if !sameJSON(x.Spec.Parameters, inline) {
		x.Spec.Parameters = inline
		changes = append(changes, "parameters "+orNone(string(compact(rawOf(inline)))))
	}
	if !reflect.DeepEqual(normalFrom(x.Spec.ParametersFrom), normalFrom(from)) {
		x.Spec.ParametersFrom = from
		changes = append(changes, "parameters from "+secretRefs(from))
	}
	return changes
}

var errNothingToRevert = errors.New("nothing to revert")

// revertedParameters are the parameters the broker holds as the spec is to name them:
// those status.provisioned recorded, else (an instance provisioned by an earlier release)
// the spec's inline parameters the broker holds by their hashes, without those it never
// accepted; a value the broker holds that the spec no longer has cannot be restored.
func revertedParameters(inst *v1alpha1.ServiceInstance) (*runtime.RawExtension, []v1alpha1.ParametersFromSource, error) {
	prov := inst.Status.Provisioned
	if a := prov.Parameters; a != nil {
		var from []v1alpha1.ParametersFromSource
		for i := range a.From {
			from = append(from, *a.From[i].DeepCopy())
		}
		return a.Inline.DeepCopy(), from, nil
	}
	p, err := ResolveParameters(context.Background(), "", inst.Spec.Parameters, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	hashes := p.InlineHashes()
	keep := map[string]json.RawMessage{}
	var unknown []string
	for k, v := range p.All {
		held, ok := prov.ParameterHashes[k]
		switch {
		case prov.ParametersChecksum == touchedChecksum:
			// "touch" dropped the hashes of what the broker holds.
			unknown = append(unknown, k)
		case !ok:
			// Never accepted by the broker: dropped.
		case held != hashes[k]:
			unknown = append(unknown, k)
		default:
			keep[k] = v
		}
	}
	for k := range prov.ParameterHashes {
		if _, ok := p.All[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, nil, fmt.Errorf("the values instance %q has at the broker for parameters %s are not recorded (an earlier release did not keep them): set them with %s",
			inst.Name, strings.Join(unknown, ", "), hint.Quoted(inst.Namespace, "update", inst.Name, "-p", "KEY=VALUE"))
	}
	from := append([]v1alpha1.ParametersFromSource(nil), inst.Spec.ParametersFrom...)
	if len(keep) == 0 {
		return nil, from, nil
	}
	raw, err := json.Marshal(keep)
	if err != nil {
		return nil, nil, err
	}
	return &runtime.RawExtension{Raw: raw}, from, nil
}

func rawOf(r *runtime.RawExtension) []byte {
	if r == nil {
		return nil
	}
	return r.Raw
}

// sameJSON reports whether two inline parameter objects hold the same values (an absent
// object and an empty one are the same).
func sameJSON(a, b *runtime.RawExtension) bool {
	var x, y map[string]any
	if len(bytes.TrimSpace(rawOf(a))) > 0 {
		if err := json.Unmarshal(a.Raw, &x); err != nil {
			return false
		}
	}
	if len(bytes.TrimSpace(rawOf(b))) > 0 {
		if err := json.Unmarshal(b.Raw, &y); err != nil {
			return false
		}
	}
	if len(x) == 0 && len(y) == 0 {
		return true
	}
	return reflect.DeepEqual(x, y)
}

func normalFrom(from []v1alpha1.ParametersFromSource) []v1alpha1.ParametersFromSource {
	if len(from) == 0 {
		return nil
	}
	return from
}

func secretRefs(from []v1alpha1.ParametersFromSource) string {
	var refs []string
	for _, s := range from {
		if r := s.SecretKeyRef; r != nil {
			ref := "Secret " + r.Name
			if r.Key != "" {
				ref += "/" + r.Key
			}
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 {
		return "none"
	}
	return strings.Join(refs, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
