package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// The mark an adoption of a binding leaves on its instance, which orders the adoption
// against a deletion of the instance.
//
// A deletion sends its DELETE once a list of the instance's bindings found none, with a
// write-ahead guarded by the instance's resourceVersion. A binding made by bind cannot
// slip in between: its record exists before its step reads the instance, and that step
// binds no instance being deleted. An adopted binding is bound at the broker already, so
// its record alone must not land after the deletion's list and before its DELETE. The
// adopter therefore first writes a pending adoption onto the instance (guarded by the
// instance's resourceVersion), then creates the binding's record, then clears the
// pending adoption; a deletion sends no DELETE while an adoption is pending. Whichever
// write lands second sees the first:
//   - a deletion's write-ahead that lands after the mark was made from a read of the
//     instance after it (else it conflicts): the deletion saw the adoption pending and
//     waited, or saw it cleared and listed the bindings after the record was made;
//   - a mark that lands after the write-ahead was made from a read of the instance after
//     it (else it conflicts and is made again): the adopter sees the deprovision and
//     refuses, writing no record.
//
// A deprovision verb starts its lists of the bindings together with the drive's read of
// the instance, so those lists may be older than that read: on an instance under which
// a binding was ever adopted (the annotation is there, pending or not) the deletion's
// step lists them itself, after its read of the instance. No other deletion pays for it.

// AnnotationBindingAdoptions is on an instance under which a binding was adopted
// (AdoptBinding): JSON naming the adoptions under way, each with a lease (its holder and
// how long it holds). A deletion of the instance waits while one is live.
const AnnotationBindingAdoptions = v1alpha1.GroupName + "/binding-adoptions"

// bindingAdoptions is the value of AnnotationBindingAdoptions.
type bindingAdoptions struct {
	// Pending are the adoptions under way, by the binding's namespace/name.
	Pending map[string]store.Lease `json:"pending,omitempty"`
}

// adoptionsOf reads the adoptions marked on inst, and whether it carries the mark at
// all. An unreadable mark counts as a mark with no adoption under way.
func adoptionsOf(inst *v1alpha1.ServiceInstance) (bindingAdoptions, bool) {
	v, ok := inst.GetAnnotations()[AnnotationBindingAdoptions]
	if !ok {
		return bindingAdoptions{}, false
	}
	var a bindingAdoptions
	if json.Unmarshal([]byte(v), &a) != nil {
		return bindingAdoptions{}, true
	}
	return a, true
}

func setAdoptions(inst *v1alpha1.ServiceInstance, a bindingAdoptions) error {
	v, err := json.Marshal(a)
	if err != nil {
		return err
	}
	ann := map[string]string{}
	for k, x := range inst.GetAnnotations() {
		ann[k] = x
	}
	ann[AnnotationBindingAdoptions] = string(v)
	inst.SetAnnotations(ann)
	return nil
}

// pendingAdoptions are the bindings (namespace/name) whose adoption under inst is under
// way for this process: a lease is timed on this process's monotonic clock from when it
// first saw it, as a claim is, and holds at most store.MaxClaimTTL.
func (e *Engine) pendingAdoptions(inst *v1alpha1.ServiceInstance) []string {
	a, _ := adoptionsOf(inst)
	var names []string
	for name, l := range a.Pending {
		stamp := l.Holder + " " + l.ExpiresAt.UTC().Format(time.RFC3339Nano)
		if e.cfg.Store.Claims().WorkLeft(store.RefOf(inst), "adopt "+name, stamp, l.ExpiresAt, l.Duration()) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// adoptionRefused says why no binding may be adopted under x any more ("" when one may):
// a deprovision of it was written ahead (it may be at the broker), failed with the
// broker perhaps having deleted it, or is done; or orphan mitigation deletes it. An
// instance marked for deletion with nothing sent yet takes the binding: its deletion
// then waits for the binding and unbinds it first.
func adoptionRefused(x *v1alpha1.ServiceInstance) string {
	st := &x.Status
	switch {
	case st.InFlight != nil && st.InFlight.Type == v1alpha1.OperationDeprovision:
		return "its deprovision is written ahead or under way at the broker"
	case st.Retry != nil && actionOf(st.Retry.Reason) == actionDeprovision:
		return "its deprovision was sent to the broker and failed, so the broker may have deleted it"
	case st.OrphanMitigation != nil:
		return "what its failed provision left is being deleted at the broker (orphan mitigation)"
	case x.DeletionTimestamp != nil && !slices.Contains(instanceIDsAtBroker(x), x.CurrentExternalID()):
		return "the broker deleted it already"
	}
	return ""
}

// errAdoptionRefused marks the refusals of markAdoption.
var errAdoptionRefused = errors.New("adoption refused")

// adoptionMark is a pending adoption markAdoption wrote.
type adoptionMark struct {
	namespace, name, key string
	// start is this process's monotonic clock when the write of the mark began, and
	// ttl how long the mark holds from then.
	start time.Duration
	ttl   time.Duration
}

// markAdoption writes the pending adoption of binding b onto its instance, guarded by
// the instance's resourceVersion (made again on a conflict), unless the instance is
// gone or adoptionRefused.
func (e *Engine) markAdoption(ctx context.Context, b *v1alpha1.ServiceBinding) (adoptionMark, error) {
	ns, name := b.InstanceRef()
	m := adoptionMark{namespace: ns, name: name, key: b.Namespace + "/" + b.Name, ttl: e.cfg.ClaimTTL}
	inst, err := e.cfg.Store.Instances().Get(ctx, ns, name)
	if store.IsNotFound(err) {
		return m, fmt.Errorf("binding %q is not adopted: its instance %q does not exist in namespace %q: take the instance over first, then run this again", b.Name, name, ns)
	}
	if err != nil {
		return m, fmt.Errorf("binding %q is not adopted: reading its instance %q: %w", b.Name, name, err)
	}
	uid := inst.UID
	refused := ""
	m.start = e.cfg.Store.Claims().Now()
	_, err = e.cfg.Store.Instances().UpdateWithRetry(ctx, ns, name, func(x *v1alpha1.ServiceInstance) error {
		if x.UID != uid {
			refused = "it was deleted and made again meanwhile"
			return errAdoptionRefused
		}
		if refused = adoptionRefused(x); refused != "" {
			return errAdoptionRefused
		}
		a, _ := adoptionsOf(x)
		if a.Pending == nil {
			a.Pending = map[string]store.Lease{}
		}
		expires := e.now().Add(m.ttl).Truncate(time.Second).Add(time.Second)
		a.Pending[m.key] = store.Lease{Holder: e.cfg.Holder, ExpiresAt: expires.UTC(), Seconds: int64((m.ttl + time.Second - 1) / time.Second)}
		return setAdoptions(x, a)
	})
	if errors.Is(err, errAdoptionRefused) {
		return m, fmt.Errorf("binding %q is not adopted and nothing was written: its instance %q in namespace %q is being deleted (%s); the broker may still hold binding id %s under it: unbind it at the broker (ask its operator) if the instance's deletion is refused",
			b.Name, name, ns, refused, b.Spec.ExternalID)
	}
	if store.IsNotFound(err) {
		return m, fmt.Errorf("binding %q is not adopted: its instance %q does not exist in namespace %q: take the instance over first, then run this again", b.Name, name, ns)
	}
	if err != nil {
		return m, fmt.Errorf("binding %q is not adopted: marking its instance %q: %w", b.Name, name, err)
	}
	return m, nil
}

// fresh reports whether the mark still holds for most of its time, so that a record
// created now lands while every other process sees the adoption pending.
func (m adoptionMark) fresh(e *Engine) bool {
	return e.cfg.Store.Claims().Now()-m.start < m.ttl*7/8
}

// unmarkAdoption clears the pending adoption m; the mark that a binding was adopted
// stays. A failure leaves the pending adoption to run out.
func (e *Engine) unmarkAdoption(ctx context.Context, m adoptionMark) {
	_, _ = e.cfg.Store.Instances().UpdateWithRetry(context.WithoutCancel(ctx), m.namespace, m.name, func(x *v1alpha1.ServiceInstance) error {
		a, _ := adoptionsOf(x)
		if l, ok := a.Pending[m.key]; !ok || l.Holder != e.cfg.Holder {
			return nil
		}
		delete(a.Pending, m.key)
		return setAdoptions(x, a)
	})
}

// waitForAdoptions keeps the deletion of inst waiting while the adoption of a binding
// under it is under way: the binding's record may not be there yet for the list of its
// bindings to find.
func (e instanceSteps) waitForAdoptions(ctx context.Context, inst *v1alpha1.ServiceInstance) (Result, bool, error) {
	names := e.pendingAdoptions(inst)
	if len(names) == 0 {
		return Result{}, false, nil
	}
	for i, n := range names {
		names[i] = strings.TrimPrefix(n, inst.Namespace+"/")
	}
	msg := fmt.Sprintf("waiting for the adoption of binding(s) %s to finish: they are unbound first", strings.Join(names, ", "))
	return e.blockedByBindings(ctx, inst, msg)
}
