package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func TestConsumers_MaxBindings_ReservesPlaces_RefusesBeyond_AndGivesThemBack(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	two := int32(2)
	f.editInstance(func(i *v1alpha1.ServiceInstance) {
		i.Spec.SharedWith = []string{consumerNS}
		i.Spec.MaxBindings = &two
	})
	f.createBinding("one", nil)
	f.consumerBinding(nil, consumerNS, "two")
	f.createBinding("three", func(in *BindingIntent) { in.ExternalID = "bind-three" })

	assert.Equal(t, f.stepBinding("one").State, StateSettled)
	assert.Equal(t, f.stepBindingIn(consumerNS, "two").State, StateSettled)
	res := f.stepBinding("three")
	assert.Assert(t, res.Refused, "%+v", res)
	b, err := f.bindingIn(ns, "three")
	assert.NilError(t, err)
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Equal(t, c.Reason, ReasonRefusedLimitReached)
	assert.Assert(t, is.Contains(c.Message, "limit of 2 bindings (dev/one, team-b/two)"), c.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 2)
	inst := f.get("db")
	assert.Equal(t, len(inst.Status.Consumers), 2)

	// Unbinding one gives its place back; the refused binding gets it at its retry.
	assert.NilError(t, f.st.Bindings().Delete(context.Background(), consumerNS, "two"))
	assert.Equal(t, f.stepBindingIn(consumerNS, "two").State, StateDeleted)
	assert.Equal(t, len(f.get("db").Status.Consumers), 1)
	f.advance(time.Hour)
	res = f.stepBinding("three")
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Equal(t, len(f.get("db").Status.Consumers), 2)
}

func TestConsumers_APlaceWhoseBindingRecordIsGone_IsGivenBackWhenTheLimitIsReached(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	one := int32(1)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &one })
	// A place taken by a bind that was interrupted before its record was... gone.
	_, err := f.st.Instances().UpdateWithRetry(context.Background(), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		i.Status.Consumers = []v1alpha1.ConsumerReservation{{Namespace: ns, Name: "vanished", UID: "uid-gone"}}
		return nil
	})
	assert.NilError(t, err)
	f.createBinding("app", nil)

	res := f.stepBinding("app")

	assert.Equal(t, res.State, StateSettled, res.Message)
	cs := f.get("db").Status.Consumers
	assert.Equal(t, len(cs), 1)
	assert.Equal(t, cs[0].Name, "app")
}

// threeBoundThenLimitedToTwo is bindingFixture with dev/db shared with team-b and bound
// three times without a limit (dev/one, dev/two, team-b/three), then limited to 2
// bindings: places none of them took when it was bound.
func threeBoundThenLimitedToTwo(t *testing.T) *fixture {
	t.Helper()
	f, _ := bindingFixture(t, nil)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
	f.createBinding("one", func(in *BindingIntent) { in.ExternalID = "bind-one" })
	f.createBinding("two", func(in *BindingIntent) { in.ExternalID = "bind-two" })
	f.consumerBinding(nil, consumerNS, "three")
	assert.Equal(t, f.stepBinding("one").State, StateSettled)
	assert.Equal(t, f.stepBinding("two").State, StateSettled)
	assert.Equal(t, f.stepBindingIn(consumerNS, "three").State, StateSettled)
	assert.Equal(t, len(f.get("db").Status.Consumers), 0, "no limit, no places")
	two := int32(2)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &two })
	return f
}

// A limit set on an instance that already has bindings counts them all, from every
// namespace it lets bind: a bind beyond it is refused before anything is recorded (the
// verb's check) and, recorded anyway, at its step, naming the bindings that hold the
// places; nothing is sent to the broker.
func TestConsumers_ALimitSetBelowTheBindingsThatExist_CountsThemAll_AndRefusesNamingThem(t *testing.T) {
	f := threeBoundThenLimitedToTwo(t)
	binds := len(f.broker.CallsTo(fake.MethodBind))
	want := "limit of 2 bindings: 3 bindings hold places (dev/one, dev/two, team-b/three)"

	err := f.engine.CheckBindingLimit(context.Background(), f.get("db"))
	r, ok := AsRefused(err)
	assert.Assert(t, ok, "%v", err)
	assert.Equal(t, r.Reason, ReasonRefusedLimitReached)
	assert.Assert(t, is.Contains(err.Error(), want), err.Error())

	for _, bns := range []string{ns, consumerNS} {
		if bns == ns {
			f.createBinding("four", func(in *BindingIntent) { in.ExternalID = "bind-four" })
		} else {
			f.consumerBinding(nil, consumerNS, "four")
		}
		res := f.stepBindingIn(bns, "four")
		assert.Assert(t, res.Refused, "%s: %+v", bns, res)
		b, err := f.bindingIn(bns, "four")
		assert.NilError(t, err)
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
		assert.Equal(t, c.Reason, ReasonRefusedLimitReached)
		assert.Assert(t, is.Contains(c.Message, want), c.Message)
	}
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), binds, "nothing sent to the broker")

	// Raised to 4, a fourth bind takes the last place; the three bindings made before
	// the limit count as their statuses say, but get no place in the instance's status
	// that way (a status is free to write for whoever may write the binding).
	four := int32(4)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &four })
	f.advance(time.Hour)
	assert.Equal(t, f.stepBindingIn(consumerNS, "four").State, StateSettled)
	assert.DeepEqual(t, consumerNames(f.get("db").Status.Consumers), "team-b/four")
	f.advance(time.Hour)
	res := f.stepBinding("four")
	assert.Assert(t, res.Refused, "%+v", res)
}

// Bindings of a namespace the instance no longer lets bind (unshared, or left out of
// its allowed namespaces) take no place: they are being removed, and a namespace without
// a grant in force affects the instance no more.
func TestConsumers_BindingsOfANamespaceNoLongerGranted_TakeNoPlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*v1alpha1.ServiceInstance)
	}{
		{"unshared", func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = nil }},
		{"not allowed", func(i *v1alpha1.ServiceInstance) { i.Spec.AllowedNamespaces = []string{ns} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := threeBoundThenLimitedToTwo(t)
			three := int32(3)
			f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &three; tc.edit(i) })
			assert.NilError(t, f.engine.CheckBindingLimit(context.Background(), f.get("db")))
			f.createBinding("four", func(in *BindingIntent) { in.ExternalID = "bind-four" })
			assert.Equal(t, f.stepBinding("four").State, StateSettled)
			// one and two, bound before the limit, count (their statuses say the
			// broker holds them) but are given no place in the instance's status.
			assert.DeepEqual(t, consumerNames(f.get("db").Status.Consumers), "dev/four")
			listed, unseen, err := listBindingsOf(context.Background(), f.engine.cfg.Store, f.get("db"))
			assert.NilError(t, err)
			assert.DeepEqual(t, consumerNames(PlacesTaken(f.get("db"), listed, unseen)), "dev/four, dev/one, dev/two")
		})
	}
}

// A driver who may write the instance but may not list the bindings of a namespace it
// is shared with cannot count them: the bind is left to reconcile, which sees them all
// (and refuses it here).
func TestConsumers_ABindWhoseDriverMayNotListASharedNamespace_IsLeftToReconcile(t *testing.T) {
	f := threeBoundThenLimitedToTwo(t)
	three := int32(4)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &three })
	f.createBinding("four", func(in *BindingIntent) { in.ExternalID = "bind-four" })
	f.createBinding("five", func(in *BindingIntent) { in.ExternalID = "bind-five" })
	limited := f.onlyOwnNamespace()

	res := f.stepBinding("four")

	assert.Assert(t, !res.Refused && res.State == StateWaiting, "%+v", res)
	assert.Assert(t, is.Contains(res.Message, "you may not list the bindings of namespace(s) team-b"), res.Message)
	assert.Assert(t, WaitingForReconcile(f.getBinding("four")))
	*limited = false
	assert.Equal(t, f.stepBinding("four").State, StateSettled)
	f.advance(time.Hour)
	res = f.stepBinding("five")
	assert.Assert(t, res.Refused, "%+v", res)
	assert.Assert(t, is.Contains(res.Message, "dev/four, dev/one, dev/two, team-b/three"), res.Message)
}

// The bindings a lowered limit keeps keep working: rotating one takes no new place, so
// it is not refused above the limit.
func TestConsumers_ARotationAboveALoweredLimit_KeepsItsPlace(t *testing.T) {
	f := threeBoundThenLimitedToTwo(t)
	binds := len(f.broker.CallsTo(fake.MethodBind))
	_, err := f.engine.startRotation(store.WithIntent(context.Background()), consumerNS, "three")
	assert.NilError(t, err)
	res := f.stepBindingIn(consumerNS, "three")
	assert.Assert(t, !res.Refused, "%+v", res)
	b, err := f.bindingIn(consumerNS, "three")
	assert.NilError(t, err)
	assert.Equal(t, b.Status.Bound.BindingID, b.CurrentExternalID(), "rotated")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), binds+1)
	f.createBinding("four", func(in *BindingIntent) { in.ExternalID = "bind-four" })
	assert.Assert(t, f.stepBinding("four").Refused, "a new bind is still refused")
}
