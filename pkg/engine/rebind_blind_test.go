package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
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

// A rotation the rebind starts may be refused in a way only a person can lift: under
// its instance's limit, a binding made after a place was kept takes a place like any
// bind (authority.Reserve), and every place is taken. The rebind records that rotation
// as failed (the binding keeps its old id and credentials; its own rotation goes on
// once a place frees) and goes on, rather than wait for a person for ever. Found by the
// simulation (-sim.rebind, seed 1241: "its rebind ... never ended: current ... app-1").
func TestRebind_RotationRefusedAtTheLimit_IsRecordedAsFailedAndTheRebindEnds(t *testing.T) {
	f := keptPlaceAndTwoBindings(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The update settled; its rebind is due.
	f.editInstance(func(i *v1alpha1.ServiceInstance) {
		i.Status.ObservedGeneration = i.Generation
		i.Status.Rebind = &v1alpha1.RebindStatus{Generation: i.Generation, Reason: RebindOnce, AfterUpdate: true, RequestedAt: metav1.NewTime(f.now)}
	})
	var res Result
	var err error
	for range 30 {
		if f.get("db").Status.Rebind == nil {
			break
		}
		res, err = f.engine.StepInstance(ctx, f.get("db"))
		assert.NilError(t, err)
		f.advance(max(res.RequeueAfter, time.Second))
	}

	inst := f.get("db")
	assert.Assert(t, inst.Status.Rebind == nil, "the rebind waits for ever: %s", res.Message)
	c := meta.FindStatusCondition(inst.Status.Conditions, ConditionBindingsRebound)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionFalse, "%+v", c)
	assert.Assert(t, is.Contains(c.Message, "rotation failed, old credentials kept: dev/a, dev/b"))
	for i, name := range []string{"a", "b"} {
		b := f.getBinding(name)
		assert.Equal(t, b.Status.Bound.BindingID, "osb-"+name)
		assert.Equal(t, string(f.secretData(name)["password"]), fmt.Sprintf("pw-%d", i+1))
		assert.Assert(t, is.Contains(meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady).Message, "has reached its limit of 2 bindings"))
	}
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodUnbind)), 0)
}

// keptPlaceAndTwoBindings is a binding fixture whose instance keeps a place for binding
// "kept" (from an earlier limit), with bindings "a" and "b" settled after it and a limit
// of 2 set since: every place is taken. Its broker answers each bind with new
// credentials.
func keptPlaceAndTwoBindings(t *testing.T) *fixture {
	t.Helper()
	f, _ := bindingFixture(t, nil)
	var n atomic.Int32
	f.broker.OnBind(func(_ context.Context, req *osb.BindRequest) (*osb.BindResponse, error) {
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": fmt.Sprintf("pw-%d", n.Add(1))}}, nil
	})
	// A place kept from an earlier limit, before the bindings were made.
	f.createBinding("kept", func(in *BindingIntent) { in.ExternalID = "osb-kept" })
	kept := f.getBinding("kept")
	f.editInstance(func(i *v1alpha1.ServiceInstance) {
		i.Status.Consumers = []v1alpha1.ConsumerReservation{{Namespace: ns, Name: "kept", UID: string(kept.UID), ReservedAt: metav1.NewTime(f.now)}}
	})
	f.advance(time.Hour)
	for _, name := range []string{"a", "b"} {
		f.createBinding(name, func(in *BindingIntent) { in.ExternalID = "osb-" + name })
		assert.Equal(t, f.driveBinding(name).State, StateSettled)
		f.advance(time.Minute)
	}
	two := int32(2)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &two })
	return f
}
