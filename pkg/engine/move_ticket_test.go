package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

var oldKey = v1alpha1.NamespaceKey{ClusterID: "old-cluster", UID: "old-uid"}

// ticketTo is the old cluster's ticket moving ids to namespace ns of cluster-1 (the
// fixture's cluster).
func ticketTo(ids ...string) *MoveTicket {
	return &MoveTicket{FromClusterID: oldKey.ClusterID, FromNamespace: "shop", FromNamespaceUID: oldKey.UID,
		ToClusterID: "cluster-1", ToNamespace: ns, IDs: ids}
}

// continuing makes namespace of the fixture's cluster continue the namespaces of other
// clusters keys names, as an administrator's AnnotationMovedKeys on its Namespace says.
func continuing(f *fixture, namespace string, keys ...v1alpha1.NamespaceKey) {
	p := f.engine.cfg.Platform.(StaticPlatform)
	p.NamespaceMoved = map[string]string{}
	for k, v := range f.engine.cfg.Platform.(StaticPlatform).NamespaceMoved {
		p.NamespaceMoved[k] = v
	}
	for _, k := range keys {
		p.NamespaceMoved[namespace] = v1alpha1.MovedKeysAnnotation(map[string]string{v1alpha1.AnnotationMovedKeys: p.NamespaceMoved[namespace]}, k)
	}
	f.engine.cfg.Platform = p
}

func TestCheckMoveTicket(t *testing.T) {
	id := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "shop", oldKey)
	otherNs := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "other", v1alpha1.NamespaceKey{ClusterID: "old-cluster", UID: "other-uid"})
	for _, tc := range []struct {
		name   string
		ticket *MoveTicket
		id     string
		want   string
	}{
		{name: "the ticket names this cluster, namespace and id", ticket: ticketTo(id), id: id},
		{name: "no ticket", id: id, want: "holds no move ticket"},
		{name: "another cluster", id: id, want: `names cluster "cluster-2"`,
			ticket: func() *MoveTicket { t := ticketTo(id); t.ToClusterID = "cluster-2"; return t }()},
		{name: "another namespace", id: id, want: `names namespace "elsewhere"`,
			ticket: func() *MoveTicket { t := ticketTo(id); t.ToNamespace = "elsewhere"; return t }()},
		{name: "the id is not in it", ticket: ticketTo("some-other-id"), id: id, want: "does not name it"},
		{name: "an id of another namespace named in the ticket", ticket: ticketTo(otherNs), id: otherNs, want: `not an id of namespace "shop"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMoveTicket(tc.ticket, "cluster-1", ns, "instance", "db", tc.id)
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, "nothing was written")
		})
	}
}

func TestMoveTicket_ConfigMapRoundTrip(t *testing.T) {
	in := ticketTo("b", "a", "a")
	got := MoveTicketFrom(in.ConfigMap(), oldKey.UID)
	assert.DeepEqual(t, got.IDs, []string{"a", "b"})
	assert.Equal(t, got.ToClusterID, "cluster-1")
	assert.Equal(t, got.ToNamespace, ns)
	assert.Equal(t, got.FromNamespace, "shop")
	assert.Assert(t, MoveTicketFrom(nil, "") == nil)
}

// An instance whose id kubectl catalog generated on the old cluster moves in with that
// cluster's ticket naming this cluster, this namespace and the id; without one, or with
// one for another place or other ids, it is refused and nothing is written.
func TestMoveInInstance_GeneratedID_NeedsTheOldClustersTicket(t *testing.T) {
	id := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "shop", oldKey)
	for _, tc := range []struct {
		name   string
		ticket *MoveTicket
		want   string
		// continues are the keys the namespace's Namespace object lists (nil: oldKey).
		continues []v1alpha1.NamespaceKey
	}{
		{name: "a ticket for this namespace", ticket: ticketTo(id)},
		{name: "no ticket", want: "holds no move ticket"},
		{name: "a ticket for another namespace", want: "names namespace",
			ticket: func() *MoveTicket { t := ticketTo(id); t.ToNamespace = "elsewhere"; return t }()},
		{name: "a ticket for another cluster", want: "names cluster",
			ticket: func() *MoveTicket { t := ticketTo(id); t.ToClusterID = "cluster-2"; return t }()},
		{name: "a ticket without the id", ticket: ticketTo("x"), want: "does not name it"},
		{name: "a ticket, the namespace continuing another one", ticket: ticketTo(id), want: "does not say it continues",
			continues: []v1alpha1.NamespaceKey{{ClusterID: oldKey.ClusterID, UID: "other-uid"}}},
		{name: "a ticket, the namespace continuing none", ticket: ticketTo(id), want: "kubectl annotate namespace " + ns,
			continues: []v1alpha1.NamespaceKey{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := movingFixture(t, true, true)
			if tc.continues == nil {
				tc.continues = []v1alpha1.NamespaceKey{oldKey}
			}
			continuing(f, ns, tc.continues...)
			f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
			req := moveInRequest()
			req.ExternalID, req.Ticket, req.DryRun = id, tc.ticket, DryRunClient
			before := f.snapshot()
			_, err := f.engine.MoveInInstance(context.Background(), req)
			if tc.want == "" {
				assert.NilError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.want)
			}
			assert.DeepEqual(t, f.snapshot(), before)
			for _, m := range []string{fake.MethodProvision, fake.MethodUpdate, fake.MethodBind, fake.MethodDeprovision} {
				assert.Assert(t, is.Len(f.broker.CallsTo(m), 0), m)
			}
		})
	}
}

// Moved in with its ticket, an instance under an id generated on the old cluster is
// driven here as its own: the context update is sent under the id.
func TestMoveInInstance_GeneratedID_IsTheRecordsOwnAfterTheMove(t *testing.T) {
	f := movingFixture(t, true, true)
	continuing(f, ns, oldKey)
	f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
	id := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "shop", oldKey)
	req := moveInRequest()
	req.ExternalID, req.Ticket = id, ticketTo(id)
	res, err := f.engine.MoveInInstance(context.Background(), req)
	assert.NilError(t, err)
	assert.Equal(t, res.State, StateSettled, res.Message)
	updates := f.broker.CallsTo(fake.MethodUpdate)
	assert.Assert(t, is.Len(updates, 1))
	assert.Equal(t, updates[0].Request.(osb.UpdateRequest).InstanceID, id)
	f.broker.ResetCalls()
	assert.Equal(t, f.step("db").State, StateSettled)
}
