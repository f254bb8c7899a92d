package v1alpha1_test

import (
	"testing"

	"github.com/google/uuid"
	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func TestOwnsExternalID_AnIDInTheStatus_IsTheRecordsOnlyWhenBoundToIt(t *testing.T) {
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "alice", UID: "uid-a"},
		Spec:       v1alpha1.ServiceInstanceSpec{ExternalID: "adopted-1"},
	}
	other := uuid.NewString()
	for _, tc := range []struct {
		name string
		id   string
		owns bool
	}{
		{name: "the spec's id", id: "adopted-1", owns: true},
		{name: "generated for its namespace", id: v1alpha1.NewNamespaceBoundID("alice"), owns: true},
		{name: "generated for its uid", id: v1alpha1.NewRecordBoundID("uid-a"), owns: true},
		{name: "generated for another namespace", id: v1alpha1.NewNamespaceBoundID("bob")},
		{name: "generated for another record", id: v1alpha1.NewRecordBoundID("uid-b")},
		{name: "another id, in the status only", id: other},
		{name: "empty", id: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, inst.OwnsExternalID(tc.id), tc.owns)
			b := &v1alpha1.ServiceBinding{ObjectMeta: inst.ObjectMeta, Spec: v1alpha1.ServiceBindingSpec{ExternalID: "adopted-1"}}
			assert.Equal(t, b.OwnsExternalID(tc.id), tc.owns)
		})
	}
}

func TestOwnsExternalID_ASpecNamingAnIDBoundElsewhere_DoesNotOwnIt(t *testing.T) {
	id := v1alpha1.NewNamespaceBoundID("bob")
	inst := &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "alice", UID: "uid-a"}, Spec: v1alpha1.ServiceInstanceSpec{ExternalID: id}}
	assert.Assert(t, !inst.OwnsExternalID(id))
	assert.Assert(t, v1alpha1.IsBoundID(id))
	u := uuid.MustParse(id)
	assert.Equal(t, int(u.Version()), 8)
	assert.Equal(t, u.Variant(), uuid.RFC4122)
}
