package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
)

// A rebind never ends while a namespace whose bindings it rotates could not be listed:
// reconcile, refused a list (an admission webhook's refusal, a role being changed),
// waits and lists again, as the verb leaves it to reconcile; neither says "no binding
// to rotate" over bindings it did not see. Found by the simulation (-sim.rebind, seed
// 1071: "its rebind ... ended and binding dev/app-2, bound when it was asked for, holds
// id ... bound ... before the instance settled that generation").
func TestRebind_BindingsThatCouldNotBeListed_NeverEndTheRebind(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reconcile bool
		// forbidden: the namespace whose lists are refused ("" for every namespace at
		// once, then the instance's sharing namespace one by one).
		forbidden []string
	}{
		{name: "reconcile, the instance's own namespace", reconcile: true, forbidden: []string{ns}},
		{name: "reconcile, a namespace the instance is shared with", reconcile: true, forbidden: []string{"", "team-b"}},
		{name: "the verb, the instance's own namespace", forbidden: []string{ns}},
		{name: "the verb, a namespace the instance is shared with", forbidden: []string{"", "team-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := rebindFixture(t)
			ctx := context.Background()
			if tc.reconcile {
				ctx = AsReconcile(ctx)
			}
			f.editInstance(func(i *v1alpha1.ServiceInstance) {
				i.Spec.SharedWith = []string{"team-b"}
			})
			f.editInstance(func(i *v1alpha1.ServiceInstance) {
				i.Status.ObservedGeneration = i.Generation
				i.Status.Rebind = &v1alpha1.RebindStatus{Generation: i.Generation, Reason: RebindOnce, RequestedAt: metav1.Now()}
			})
			refuse := true
			f.cluster.Core.PrependReactor("list", "configmaps", func(act clienttesting.Action) (bool, runtime.Object, error) {
				if !refuse {
					return false, nil, nil
				}
				for _, n := range tc.forbidden {
					if act.GetNamespace() == n {
						return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "configmaps"}, "", nil)
					}
				}
				return false, nil, nil
			})

			for range 3 {
				res, err := f.engine.StepInstance(ctx, f.get("db"))
				assert.NilError(t, err)
				assert.Equal(t, res.State, StateWaiting, res.Message)
				assert.Assert(t, res.RequeueAfter > 0, res.Message)
				assert.Assert(t, is.Contains(res.Message, tc.forbidden[len(tc.forbidden)-1]))
				inst := f.get("db")
				assert.Assert(t, inst.Status.Rebind != nil, "the rebind ended over bindings it could not list: %s", res.Message)
				assert.Assert(t, meta.FindStatusCondition(inst.Status.Conditions, ConditionBindingsRebound) == nil)
			}
			if tc.forbidden[0] == ns {
				// Nothing of the namespace was seen: nothing was rotated.
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 0)
			}

			// Once they can be listed, the rebind rotates them and ends.
			refuse = false
			for range 20 {
				if f.get("db").Status.Rebind == nil {
					break
				}
				_, err := f.engine.StepInstance(ctx, f.get("db"))
				assert.NilError(t, err)
			}
			inst := f.get("db")
			assert.Assert(t, inst.Status.Rebind == nil)
			c := meta.FindStatusCondition(inst.Status.Conditions, ConditionBindingsRebound)
			assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "%+v", c)
			assert.Assert(t, is.Contains(c.Message, "dev/a, dev/b"))
		})
	}
}
