package v1alpha1

import (
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An id bound to a namespace's key is that namespace's only: not a namespace of the
// same name with another uid (deleted and created again), nor one of another cluster
// sharing the broker, nor anyone's by the name alone.
func TestKeyedNamespaceID_IsOnlyTheKeysNamespaces(t *testing.T) {
	key := NamespaceKey{ClusterID: "cluster-1", UID: "uid-1"}
	id := NewKeyedNamespaceBoundIDFrom(nil, "team-a", key)
	assert.Assert(t, IsBoundID(id))
	assert.Assert(t, IDBoundToNamespace(id, key))
	for _, tc := range []struct {
		name  string
		other NamespaceKey
	}{
		{"the namespace created again under its name", NamespaceKey{ClusterID: "cluster-1", UID: "uid-2"}},
		{"the namespace of that name in another cluster", NamespaceKey{ClusterID: "cluster-2", UID: "uid-1"}},
		{"a key that is not known", NamespaceKey{}},
		{"a key of the same uid in another cluster", NamespaceKey{ClusterID: "cluster-2", UID: "uid-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Assert(t, !IDBoundToNamespace(id, tc.other))
			inst := &ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", UID: "rec"}, Spec: ServiceInstanceSpec{ExternalID: id}}
			assert.Assert(t, !inst.OwnsExternalIDIn(id, tc.other))
			b := &ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", UID: "rec"}, Spec: ServiceBindingSpec{ExternalID: id}}
			assert.Assert(t, !b.OwnsExternalIDIn(id, tc.other))
		})
	}
	assert.Assert(t, !IDBoundTo(id, "team-a", ""), "the namespace's name alone makes it no one's")
	inst := &ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", UID: "rec"}}
	assert.Assert(t, !inst.OwnsExternalID(id))
	assert.Assert(t, inst.OwnsExternalIDIn(id, key))
	b := &ServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", UID: "rec"}}
	assert.Assert(t, b.OwnsExternalIDIn(id, key))
}

// Ids of existing records, bound to their namespace's name, stay theirs; a key that is
// not known makes an id of that form, as before.
func TestKeyedNamespaceID_TheNameBoundFormStaysReadable(t *testing.T) {
	old := NewNamespaceBoundID("team-a")
	inst := &ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", UID: "rec"}}
	assert.Assert(t, inst.OwnsExternalIDIn(old, NamespaceKey{ClusterID: "cluster-1", UID: "uid-1"}))
	assert.Assert(t, inst.OwnsExternalID(old))

	fallback := NewKeyedNamespaceBoundIDFrom(nil, "team-a", NamespaceKey{ClusterID: "cluster-1"})
	assert.Assert(t, IDBoundTo(fallback, "team-a", ""))

	// Made where the cluster id could not be read: bound to the namespace's uid alone,
	// which the cluster's id does not change.
	uidOnly := NewKeyedNamespaceBoundIDFrom(nil, "team-a", NamespaceKey{UID: "uid-1"})
	assert.Assert(t, IDBoundToNamespace(uidOnly, NamespaceKey{ClusterID: "cluster-1", UID: "uid-1"}))
	assert.Assert(t, !IDBoundToNamespace(uidOnly, NamespaceKey{ClusterID: "cluster-1", UID: "uid-2"}))
	assert.Assert(t, !IDBoundTo(uidOnly, "team-a", ""))
}
