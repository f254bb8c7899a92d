package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// A binding record of team-b written by hand after both places of dev/db (limit 2) were
// reserved, whose status says it is bound and rotates (of a bound binding, or of
// itself), asks for a rotation's privilege: a rotation keeps its place above the limit
// when its binding was made before every place reserved under it. Creation times and
// reservation times are both kept in whole seconds, and a reservation's time is its
// writer's clock: a binding created in the second of the last reservation, or while the
// clock of the process that wrote it ran ahead of the API server's, was made after it
// all the same, and its bind is refused like any other beyond the limit. The same
// record created well before the places keeps its rotation's privilege.
func TestConsumers_AForgedRotationMadeAfterThePlaces_IsRefusedAboveTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		// ahead is how far the clock of the process that reserves the places runs
		// ahead of the API server's.
		ahead time.Duration
		// after is when the forged record is created, after the second place.
		after time.Duration
		// self: the rotation names the forged binding itself as its predecessor.
		self bool
	}{
		{name: "in the second of the last place", after: 400 * time.Millisecond},
		{name: "in the second of the last place, rotating itself", after: 400 * time.Millisecond, self: true},
		{name: "a second after the last place", after: 1100 * time.Millisecond},
		{name: "after the last place, reserved by a clock running ahead", ahead: 2 * time.Minute, after: 30 * time.Second},
		{name: "after the last place, reserved by a clock running ahead, rotating itself", ahead: 2 * time.Minute, after: 30 * time.Second, self: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			two := int32(2)
			f.editInstance(func(i *v1alpha1.ServiceInstance) {
				i.Spec.SharedWith = []string{consumerNS}
				i.Spec.MaxBindings = &two
			})
			f.now = f.now.Add(100 * time.Millisecond)
			server := f.engine.cfg.Now
			f.engine.cfg.Now = func() time.Time { return f.now.Add(tc.ahead) }
			for _, name := range []string{"one", "two"} {
				f.consumerBinding(nil, consumerNS, name)
				assert.Equal(t, f.stepBindingIn(consumerNS, name).State, StateSettled)
			}
			f.engine.cfg.Now = server
			assert.Equal(t, consumerNames(f.get("db").Status.Consumers), "team-b/one, team-b/two")
			binds := len(f.broker.CallsTo(fake.MethodBind))

			f.now = f.now.Add(tc.after)
			forged := forgedRotation(t, f, "rotation", tc.self)

			res := f.stepBindingIn(consumerNS, forged.Name)
			assert.Assert(t, res.Refused, "%+v", res)
			assert.Assert(t, is.Contains(res.Message, "limit of 2 bindings"), res.Message)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), binds, "no bind beyond the limit reaches the broker")
			assert.Equal(t, consumerNames(f.get("db").Status.Consumers), "team-b/one, team-b/two")
		})
	}
}

// The neighbour of the test above: the same record, created before any place was
// reserved under the limit (a binding bound before the limit was set, whose rotation
// keeps its place), is not refused, whatever the clocks.
func TestConsumers_ARotationMadeBeforeThePlaces_KeepsItsPlaceAboveTheLimit(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
	f.consumerBinding(nil, consumerNS, "one")
	assert.Equal(t, f.stepBindingIn(consumerNS, "one").State, StateSettled)
	early := forgedRotation(t, f, "early", false)
	f.now = f.now.Add(time.Hour)
	three, two := int32(3), int32(2)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &three })
	f.consumerBinding(nil, consumerNS, "two")
	assert.Equal(t, f.stepBindingIn(consumerNS, "two").State, StateSettled)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &two })
	binds := len(f.broker.CallsTo(fake.MethodBind))

	res := f.stepBindingIn(consumerNS, early.Name)
	assert.Assert(t, !res.Refused, "%+v", res)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), binds+1)
}

// forgedRotation writes, as someone who may write team-b's ConfigMaps, a binding record
// of dev/db named name whose status says it is bound (as team-b/one) and rotates, with
// the rotation's bind in flight: of team-b/one, or of itself when self is set.
func forgedRotation(t *testing.T, f *fixture, name string, self bool) *v1alpha1.ServiceBinding {
	t.Helper()
	ctx := context.Background()
	one, err := f.bindingIn(consumerNS, "one")
	assert.NilError(t, err)
	inst := f.get("db")
	x := NewBinding(BindingIntent{Namespace: consumerNS, Name: name, Instance: "db", InstanceNamespace: ns, SecretName: name, ExternalID: "bind-" + name})
	x.Status.Bound = one.Status.Bound.DeepCopy()
	x.Status.Predecessor = &v1alpha1.BindingReference{Name: "one", ExternalID: one.Spec.ExternalID}
	if self {
		x.Status.Bound.BindingID = "bind-" + name + "-old"
		x.Status.Predecessor = &v1alpha1.BindingReference{Name: name, ExternalID: x.Status.Bound.BindingID}
	}
	x.Status.InFlight = &v1alpha1.Operation{Type: v1alpha1.OperationBind, InstanceID: inst.CurrentExternalID(), BindingID: x.Spec.ExternalID,
		ServiceID: inst.Spec.ClassID, PlanID: inst.Spec.PlanID, RequestID: "forged-" + name, StartedAt: metav1.NewTime(f.now.Add(-time.Hour))}
	_, err = f.st.Bindings().Create(store.WithIntent(ctx), x)
	assert.NilError(t, err)
	b, err := f.bindingIn(consumerNS, name)
	assert.NilError(t, err)
	return b
}

// A binding bound before the limit but created within store.MaxClockSkew of the first
// place reserved under it cannot be told from one written after the place: above the
// limit, its rotation is refused until a place is free, and it keeps what it is bound
// to.
func TestConsumers_ARotationMadeJustBeforeThePlaces_IsRefusedAboveTheLimit_AndKeepsItsBinding(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
	f.consumerBinding(nil, consumerNS, "one")
	assert.Equal(t, f.stepBindingIn(consumerNS, "one").State, StateSettled)
	before, err := f.bindingIn(consumerNS, "one")
	assert.NilError(t, err)
	f.now = f.now.Add(5 * time.Minute)
	two, one := int32(2), int32(1)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &two })
	f.consumerBinding(nil, consumerNS, "two")
	assert.Equal(t, f.stepBindingIn(consumerNS, "two").State, StateSettled)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &one })
	binds := len(f.broker.CallsTo(fake.MethodBind))

	_, err = f.engine.startRotation(store.WithIntent(context.Background()), consumerNS, "one")
	assert.NilError(t, err)
	res := f.stepBindingIn(consumerNS, "one")

	assert.Assert(t, res.Refused, "%+v", res)
	assert.Assert(t, is.Contains(res.Message, "limit of 1 bindings"), res.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), binds)
	after, err := f.bindingIn(consumerNS, "one")
	assert.NilError(t, err)
	assert.Equal(t, after.Status.Bound.BindingID, before.Status.Bound.BindingID, "still bound as before")
	assert.Equal(t, after.Status.Secret.Name, before.Status.Secret.Name)
}
