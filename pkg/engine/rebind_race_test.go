package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// Two drivers of one rebind (the verb's --wait and reconcile) may both read the binding
// it names before either started its rotation: the one that comes second finds it
// started (or done) and never starts it again. Found by the simulation (-sim.rebind
// -sim.asyncbind, seed 6: a step failed with "binding ... is not bound yet, so there
// is nothing to rotate").
func TestRebind_RotationStartedByAnotherDriverMeanwhile_IsNeverStartedTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		// finish: the other driver finished the rotation (new id bound, old unbound),
		// rather than only started it; fresh: this driver reads the binding as it is
		// now (the driver that started the rotation was killed before its bind).
		finish, fresh bool
	}{
		{name: "started by the other driver"},
		{name: "finished by the other driver", finish: true},
		{name: "started by a driver killed before its bind", fresh: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := rebindFixture(t)
			ctx := context.Background()
			before, err := f.cluster.Core.CoreV1().ConfigMaps(ns).Get(ctx, store.ConfigMapName(v1alpha1.KindServiceBinding, "a"), metav1.GetOptions{})
			assert.NilError(t, err)
			a := f.getBinding("a")
			// The rebind names binding a, bound as osb-a.
			f.editInstance(func(i *v1alpha1.ServiceInstance) {
				i.Status.Rebind = &v1alpha1.RebindStatus{Generation: i.Generation, Reason: RebindOnce, RequestedAt: metav1.Now(),
					Current: &v1alpha1.RebindTarget{Namespace: ns, Name: "a", UID: string(a.UID), FromID: "osb-a"}}
			})
			// Another driver starts the rotation of a (and, in one case, finishes it).
			_, err = f.engine.startRotation(ctx, ns, "a")
			assert.NilError(t, err)
			if tc.finish {
				assert.Equal(t, f.driveBinding("a").State, StateSettled)
			}
			// This driver read a before the other one wrote it.
			stale := !tc.fresh
			f.cluster.Core.PrependReactor("get", "configmaps", func(act clienttesting.Action) (bool, runtime.Object, error) {
				if g, ok := act.(clienttesting.GetAction); ok && stale && g.GetName() == before.Name && g.GetNamespace() == ns {
					stale = false
					return true, before.DeepCopy(), nil
				}
				return false, nil, nil
			})

			var r Result
			for range 20 {
				if r, err = f.step("db"), nil; f.get("db").Status.Rebind == nil {
					break
				}
				if f.getBinding("a").HasPendingWork() {
					f.stepBinding("a")
				}
			}

			assert.NilError(t, err)
			assert.Assert(t, f.get("db").Status.Rebind == nil, "%+v", r)
			// a was rotated once (by the other driver's start), b once.
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 2, brokerLog(f))
			assert.DeepEqual(t, brokerLog(f), []string{"bind predecessor=", "unbind osb-a", "bind predecessor=", "unbind osb-b"})
			c := meta.FindStatusCondition(f.get("db").Status.Conditions, ConditionBindingsRebound)
			assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "%+v", c)
			assert.Assert(t, is.Contains(c.Message, "dev/a, dev/b"))
		})
	}
}

// A binding whose rotation (bind --rotate, a scheduled one) is under way when the
// update settles got its new id bound, perhaps, before the update: the rebind lets
// that rotation end, then rotates it again. Found by the simulation (-sim.rebind,
// seed 11: "recorded binding dev/app-2 as rotated under id ..., whose bind reached the
// broker ... before the instance settled that generation").
func TestRebind_BindingRotatingOnItsOwnWhenTheUpdateSettles_IsRotatedAgainAfterIt(t *testing.T) {
	f, _ := rebindFixture(t)
	ctx := context.Background()
	// a's rotation started before the update, and the broker made its new binding then
	// while the answer was lost (a retry to come, answered 200 with those credentials).
	made := map[string]bool{}
	lose := true
	f.broker.OnBind(func(_ context.Context, req *osb.BindRequest) (*osb.BindResponse, error) {
		if made[req.BindingID] {
			return &osb.BindResponse{StatusCode: 200, Credentials: map[string]any{"password": "pw-" + req.BindingID}}, nil
		}
		made[req.BindingID] = true
		if lose {
			return nil, fake.Timeout()
		}
		return &osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": "pw-" + req.BindingID}}, nil
	})
	_, err := f.engine.startRotation(ctx, ns, "a")
	assert.NilError(t, err)
	f.stepBinding("a")
	assert.Assert(t, f.getBinding("a").Status.Retry != nil)
	lose = false

	_, err = f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "db",
		UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: true})
	assert.NilError(t, err)
	for range 40 {
		if f.get("db").Status.Rebind == nil {
			break
		}
		f.advance(time.Minute)
		if f.getBinding("a").HasPendingWork() {
			f.stepBinding("a")
		}
		f.step("db")
	}

	assert.Assert(t, f.get("db").Status.Rebind == nil)
	log := brokerLog(f)
	update := slices.Index(log, "update "+planLarge)
	assert.Assert(t, update >= 0, log)
	a := f.getBinding("a")
	first := -1
	for i, c := range f.broker.Calls() {
		if r, ok := c.Request.(osb.BindRequest); ok && r.BindingID == a.Status.Bound.BindingID && first < 0 {
			first = i
		}
	}
	assert.Assert(t, first > update, "binding a holds id %s, which the broker made before the update: %v", a.Status.Bound.BindingID, log)
	assert.Equal(t, string(f.secretData("a")["password"]), "pw-"+a.Status.Bound.BindingID)
	c := meta.FindStatusCondition(f.get("db").Status.Conditions, ConditionBindingsRebound)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "%+v", c)
}

// An update sent while a rebind is under way starts it over: the bindings it rotated
// got their credentials before that update, and are rotated again after it.
func TestRebind_UpdateSentWhileARebindIsUnderWay_RotatesEveryBindingAgainAfterIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		// verb: the new update is "update --rebind"; else spec.rebindOnUpdate: Always.
		verb bool
	}{
		{"update --rebind", true},
		{"spec.rebindOnUpdate Always", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := rebindFixture(t)
			ctx := context.Background()
			a := f.getBinding("a")
			// a was rotated by the rebind of an earlier update; b is next.
			f.editInstance(func(i *v1alpha1.ServiceInstance) {
				if !tc.verb {
					i.Spec.RebindOnUpdate = v1alpha1.RebindAlways
				}
				i.Status.Rebind = &v1alpha1.RebindStatus{Generation: i.Generation, Reason: RebindOnce, AfterUpdate: true, RequestedAt: metav1.Now(),
					Rotated: []string{ns + "/a"}}
			})
			_, err := f.engine.Update(ctx, InstanceUpdateRequest{Namespace: ns, Name: "db",
				UpdateRequest: UpdateRequest{Plan: "large"}, Rebind: tc.verb, Follow: Follow{Wait: true}})
			assert.NilError(t, err)

			assert.Assert(t, f.get("db").Status.Rebind == nil)
			assert.DeepEqual(t, brokerLog(f), []string{"update " + planLarge, "bind predecessor=", "unbind osb-a", "bind predecessor=", "unbind osb-b"})
			assert.Assert(t, f.getBinding("a").Status.Bound.BindingID != a.Status.Bound.BindingID)
		})
	}
}

// "update --rebind" asked again while a rebind is under way, with no change the broker
// is sent (nothing, or a change of the record only: the rebind policy, a limit), joins
// that rebind: it still follows the update it followed, so the generation it follows
// stays, and the bindings it rotated (after that update settled) stay rotated. A rebind
// said to follow the newer generation would have recorded as rotated after it bindings
// whose credentials the broker made before it.
func TestRebind_AskedAgainWithNoBrokerChange_StillFollowsTheUpdateItFollowed(t *testing.T) {
	never := v1alpha1.RebindNever
	two := int32(2)
	for _, tc := range []struct {
		name string
		req  InstanceUpdateRequest
	}{
		{"nothing else", InstanceUpdateRequest{}},
		{"the rebind policy", InstanceUpdateRequest{RebindOnUpdate: &never}},
		{"a limit", InstanceUpdateRequest{Limits: Limits{MaxBindings: &two}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := rebindFixture(t)
			// The instance settled an update at generation 1 and a rebind follows it: a
			// was rotated, b is next.
			var followed int64
			f.editInstance(func(i *v1alpha1.ServiceInstance) {
				followed = i.Generation
				i.Status.Rebind = &v1alpha1.RebindStatus{Generation: i.Generation, Reason: RebindOnce, AfterUpdate: true, RequestedAt: metav1.Now(),
					Rotated: []string{ns + "/a"}}
			})
			// b's rotation waits for an asynchronous bind, so the rebind is still under
			// way when the verb returns.
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 202, Async: true, Operation: "op-b"}, nil)
			f.broker.OnBindingLastOperation(func(context.Context, *osb.BindingLastOperationRequest) (*osb.LastOperationResponse, error) {
				return &osb.LastOperationResponse{State: osb.StateInProgress}, nil
			})
			req := tc.req
			req.Namespace, req.Name, req.Rebind = ns, "db", true
			_, err := f.engine.Update(context.Background(), req)
			assert.NilError(t, err)

			rb := f.get("db").Status.Rebind
			assert.Assert(t, rb != nil)
			assert.Equal(t, rb.Generation, followed, "the rebind follows generation %d, not the update it followed (%d)", rb.Generation, followed)
			assert.DeepEqual(t, rb.Rotated, []string{ns + "/a"})
			assert.DeepEqual(t, brokerLog(f), []string{"bind predecessor="})
		})
	}
}
