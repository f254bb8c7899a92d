package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func adoptedBinding(name, inst, id string) BindingAdoption {
	return BindingAdoption{Record: &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: inst, ExternalID: id, SecretName: name},
	}}
}

// A binding adopted while its instance is being deleted: the deletion's wait for the
// instance's bindings may have listed them before the record was made, and its DELETE
// then reaches the broker under the adopted binding. The adoption is refused (and leaves
// no record) once the instance is marked; before the mark it is adopted as ever, and the
// deletion waits for it.
func TestAdoptBinding_InstanceBeingDeleted(t *testing.T) {
	for _, tc := range []struct {
		name string
		// during: the adoption happens while the deletion's DELETE is about to be sent
		// (after its wait for bindings found none); else before the instance is marked.
		during bool
	}{
		{name: "adopted while the deletion is under way", during: true},
		{name: "adopted before the instance is marked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.provisioned("db", planSmall, "")
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("app", map[string]string{"password": "p"}), metav1.CreateOptions{})
			assert.NilError(t, err)
			var adoptErr error
			adopts := 0
			adopt := func() {
				adopts++
				_, adoptErr = f.engine.AdoptBinding(ctx, adoptedBinding("app", "db", "old-binding"))
			}
			if tc.during {
				f.hook = func(p HookPoint, op *v1alpha1.Operation) {
					if p == HookBeforeBrokerCall && op.Type == v1alpha1.OperationDeprovision && adopts == 0 {
						adopt()
					}
				}
			} else {
				adopt()
				assert.NilError(t, adoptErr)
			}
			assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
			res := f.step("db")
			if !tc.during {
				assert.Equal(t, res.State, StateWaiting, res.Message)
				assert.Assert(t, is.Contains(res.Message, "app"))
				for _, c := range f.broker.Calls() {
					assert.Assert(t, c.Method != "Deprovision", "a DELETE of the instance under its binding")
				}
				b, err := f.st.Bindings().Get(ctx, ns, "app")
				assert.NilError(t, err)
				assert.Assert(t, b.DeletionTimestamp != nil, "the deletion marks the adopted binding")
				return
			}
			assert.Equal(t, adopts, 1)
			assert.ErrorContains(t, adoptErr, "being deleted")
			assert.ErrorContains(t, adoptErr, `"db"`)
			_, err = f.st.Bindings().Get(ctx, ns, "app")
			assert.Assert(t, store.IsNotFound(err), "the refused adoption leaves no record (%v)", err)
			s, err := f.cluster.Core.CoreV1().Secrets(ns).Get(ctx, "app", metav1.GetOptions{})
			assert.NilError(t, err)
			assert.Assert(t, is.Len(s.OwnerReferences, 0), "the Secret is left as it was")
		})
	}
}
