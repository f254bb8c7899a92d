package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A record written directly (not moved in by apply with the old cluster's ticket) that
// names an id generated for a namespace of another cluster sharing the broker, and
// carries a moved-key annotation naming that namespace's key, owns the id only where the
// new cluster's Namespace object says its namespace continues that one
// (AnnotationMovedKeys, which a tenant cannot write): the record's annotation is anyone's
// to write who may write the record. Nothing is sent under the id for it otherwise.
func TestMovedKey_ForgedOnARecordWrittenDirectly_IsNotOwned(t *testing.T) {
	id := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "shop", oldKey)
	here := v1alpha1.NamespaceKey{ClusterID: "cluster-1", UID: "uid-" + ns}
	hereID := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, ns, here)
	otherOld := v1alpha1.NamespaceKey{ClusterID: oldKey.ClusterID, UID: "other-uid"}
	for _, tc := range []struct {
		name, namespace string
		id              string
		key             v1alpha1.NamespaceKey
		// continues are the keys the namespace's Namespace object lists.
		continues []v1alpha1.NamespaceKey
	}{
		{name: "the namespace a move would go to, not continuing the old one", namespace: ns, id: id, key: oldKey},
		{name: "another namespace", namespace: "team-b", id: id, key: oldKey},
		{name: "another namespace continuing another old namespace", namespace: "team-b", id: id, key: oldKey,
			continues: []v1alpha1.NamespaceKey{otherOld}},
		{name: "the annotation naming another key than the id's", namespace: "team-b", id: id, key: otherOld,
			continues: []v1alpha1.NamespaceKey{otherOld}},
		{name: "an id of a namespace of this cluster", namespace: "team-b", id: hereID, key: here,
			continues: []v1alpha1.NamespaceKey{here}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			continuing(f, tc.namespace, tc.continues...)
			forged := func(i *v1alpha1.ServiceInstance) {
				i.Annotations = map[string]string{
					v1alpha1.AnnotationMovedKey: tc.key.String(),
					AnnotationMovedFrom:         tc.key.ClusterID,
				}
			}
			_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy", tc.namespace, tc.id, forged))
			assert.NilError(t, err)

			res := f.stepRecord(forgedInstance("copy", tc.namespace, tc.id, nil))

			assertRefused(t, f, res, tc.namespace, "copy", ReasonRefusedIDNotOwned)
		})
	}
}

// A record moved in with the ticket keeps its id against a copy, annotation and all,
// written directly in another namespace, older or younger.
func TestMovedKey_ACopyInAnotherNamespace_NeverTakesTheMovedID(t *testing.T) {
	for _, copyFirst := range []bool{true, false} {
		name := "copy written after the move"
		if copyFirst {
			name = "copy written before the move"
		}
		t.Run(name, func(t *testing.T) {
			f := movingFixture(t, true, true)
			continuing(f, ns, oldKey)
			id := v1alpha1.NewKeyedNamespaceBoundIDFrom(nil, "shop", oldKey)
			forged := forgedInstance("copy", "team-b", id, func(i *v1alpha1.ServiceInstance) {
				i.Annotations = map[string]string{v1alpha1.AnnotationMovedKey: oldKey.String(), AnnotationMovedFrom: oldKey.ClusterID}
			})
			if copyFirst {
				_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forged)
				assert.NilError(t, err)
				assertRefused(t, f, f.stepRecord(forged), "team-b", "copy", ReasonRefusedIDNotOwned)
			}
			f.broker.GetInstanceReturns(&osb.GetInstanceResponse{PlanID: planSmall}, nil)
			req := moveInRequest()
			req.ExternalID, req.Ticket = id, ticketTo(id)
			res, err := f.engine.MoveInInstance(context.Background(), req)
			assert.NilError(t, err)
			assert.Equal(t, res.State, StateSettled, res.Message)
			if !copyFirst {
				_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forged)
				assert.NilError(t, err)
			}
			f.broker.ResetCalls()
			f.advance(time.Hour) // past the copy's retry
			assertRefused(t, f, f.stepRecord(forged), "team-b", "copy", ReasonRefusedIDNotOwned)
			// The moved record goes on: a plan change is sent under its id.
			f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.PlanID, i.Spec.PlanExternalName = planLarge, "large" })
			f.broker.ResetCalls()
			assert.Assert(t, !f.step("db").Refused)
			updates := f.broker.CallsTo(fake.MethodUpdate)
			assert.Assert(t, is.Len(updates, 1))
			assert.Equal(t, updates[0].Request.(osb.UpdateRequest).InstanceID, id)
		})
	}
}
