package engine

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// This file keeps the OSB ids a record may have at its broker. Whether a request reached
// the broker is unknown after a crash between its write-ahead and its outcome, and a
// refused re-send says nothing about the first send: so every id a provision or bind
// was written ahead for stays listed in status.externalIDs until the broker confirms it
// deleted, and a deletion deletes each of them before the finalizer comes off.

// createdID is the id a call may create at the broker: a provision's instance id, a
// bind's binding id; empty for other calls.
func createdID(op *v1alpha1.Operation) string {
	switch {
	case op == nil:
		return ""
	case op.Type == v1alpha1.OperationProvision:
		return op.InstanceID
	case op.Type == v1alpha1.OperationBind:
		return op.BindingID
	}
	return ""
}

// listExternalID records that the broker may hold id.
func listExternalID(st *v1alpha1.OperationStatus, id string) {
	if id != "" && !slices.Contains(st.ExternalIDs, id) {
		st.ExternalIDs = append(st.ExternalIDs, id)
	}
}

// forgetExternalID records that the broker holds nothing under id.
func forgetExternalID(st *v1alpha1.OperationStatus, id string) {
	st.ExternalIDs = slices.DeleteFunc(st.ExternalIDs, func(x string) bool { return x == id })
	if len(st.ExternalIDs) == 0 {
		st.ExternalIDs = nil
	}
}

// leftNothing reports a failed create whose answer means, in the OSB spec's terms, that
// the broker holds nothing under its id: a 4xx (which leaves the broker's resources
// unchanged), or a request never sent. Any other failure that needs no orphan mitigation
// (a 200 whose body does not decode, a 1xx) may come from a broker that created the
// resource: its id stays among those the broker may hold, so that the create is re-sent
// under it and a deletion deletes it.
func leftNothing(callErr error) bool {
	o := osb.OutcomeOf(0, callErr)
	return o.NotSent || !o.NoAnswer && !o.Malformed && o.StatusCode >= 400 && o.StatusCode < 500
}

// instanceIDsAtBroker is every OSB instance id the broker may hold for inst, the id in
// use first when it is one of them. Records written before status.externalIDs existed
// are covered by what the rest of their status says.
func instanceIDsAtBroker(inst *v1alpha1.ServiceInstance) []string {
	st := inst.Status
	cur := inst.CurrentExternalID()
	held := st.Provisioned != nil || st.OrphanMitigation != nil || (st.InFlight != nil && st.InFlight.InstanceID == cur)
	var more []string
	if st.InFlight != nil {
		more = append(more, st.InFlight.InstanceID)
	}
	return idsAtBroker(&st.OperationStatus, cur, held, more...)
}

// bindingIDsAtBroker is every OSB binding id the broker may hold for b: the listed ones,
// the ids a rotation retired, the bound one, the one of an uncertain bind, the id in use
// first when it is one of them.
func bindingIDsAtBroker(b *v1alpha1.ServiceBinding) []string {
	st := b.Status
	cur := b.CurrentExternalID()
	// A copy of a user-provided instance's credentials is held by no broker.
	brokered := st.Bound != nil && !st.Bound.UserProvided
	held := st.OrphanMitigation != nil || (brokered && st.Bound.BindingID == cur) ||
		(st.InFlight != nil && st.InFlight.BindingID == cur)
	var more []string
	more = append(more, st.Retired...)
	if brokered {
		more = append(more, st.Bound.BindingID)
	}
	if st.InFlight != nil {
		more = append(more, st.InFlight.BindingID)
	}
	return idsAtBroker(&st.OperationStatus, cur, held, more...)
}

func idsAtBroker(st *v1alpha1.OperationStatus, current string, currentHeld bool, more ...string) []string {
	var ids []string
	add := func(id string) {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if currentHeld || slices.Contains(st.ExternalIDs, current) {
		add(current)
	}
	for _, id := range st.ExternalIDs {
		add(id)
	}
	for _, id := range more {
		add(id)
	}
	return ids
}

// SettleIDClaims is reconcile's first pass over OSB ids, with idx the index of its list
// of namespace ("" for all): once a process, the id claims of every record whose spec
// names an id bound to nothing and that has none yet (authority.ClaimSpecIDs), before
// any record is stepped; and, every run, the release of id claims whose record is gone.
func (e *Engine) SettleIDClaims(ctx context.Context, namespace string, idx *store.IDIndex) error {
	if store.IsDryRun(ctx) {
		return nil
	}
	return e.auth.ClaimSpecIDs(ctx, namespace, idx)
}

// namespaceKey is the key of namespace ns (v1alpha1.NamespaceKey) as p reads it: the
// cluster id (none when it cannot be read) and the namespace's uid; not Valid when p
// cannot tell the uid (an error, or a
// platform that answers the namespace's name for a uid it may not read): the new
// record's id is then bound to the namespace's name, as in earlier releases.
func namespaceKey(ctx context.Context, p Platform, ns string) v1alpha1.NamespaceKey {
	if p == nil {
		return v1alpha1.NamespaceKey{}
	}
	cluster, err := p.ClusterID(ctx)
	if err != nil {
		cluster = "" // bound to the namespace's uid alone
	}
	uid, err := p.NamespaceUID(ctx, ns)
	if err != nil || uid == ns {
		return v1alpha1.NamespaceKey{}
	}
	return v1alpha1.NamespaceKey{ClusterID: cluster, UID: types.UID(uid)}
}
