package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// threeCopiesThenLimitedToTwo is user-provided instance "db" shared with consumerNS,
// with bindings "one" and "two" of its own namespace and "three" of consumerNS, each
// holding a copy of its credentials, then limited to 2 bindings.
func threeCopiesThenLimitedToTwo(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.engine.cfg.Projector = &recordingProjector{projected: map[string]bool{}}
	f.userProvided(map[string]string{"password": "old"})
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
	f.createBinding("one", func(in *BindingIntent) { in.ExternalID = "id-one" })
	f.createBinding("two", func(in *BindingIntent) { in.ExternalID = "id-two" })
	f.consumerBinding(nil, consumerNS, "three")
	assert.Equal(t, f.driveBinding("one").State, StateSettled)
	assert.Equal(t, f.driveBinding("two").State, StateSettled)
	assert.Equal(t, f.stepBindingIn(consumerNS, "three").State, StateSettled)
	two := int32(2)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.MaxBindings = &two })
	// (Copies made long before the limit: made before any place reserved under it.)
	f.advance(time.Hour)
	return f
}

// A limit lowered below the bindings of a user-provided instance keeps them (they
// stay, as brokered bindings do, docs/instances.md): each gets the copy of the
// instance's new credentials, from its own namespace and from another, and the instance
// settles; a new binding is still refused.
func TestUserProvided_ALimitLoweredBelowItsBindings_TheyStillGetTheNewCredentials(t *testing.T) {
	f := threeCopiesThenLimitedToTwo(t)
	ctx := context.Background()
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.UserProvided.Revision++ })
	assert.NilError(t, f.engine.WriteUserProvidedCredentials(ctx, f.get("db"), toBytes(map[string]string{"password": "new"})))

	res := f.step("db")
	assert.Equal(t, res.State, StateSettled, res.Message)
	for _, name := range []string{"one", "two"} {
		assert.Equal(t, string(f.secretData(name)["password"]), "new", name)
		assert.Assert(t, !f.getBinding(name).HasPendingWork(), name)
	}
	s, err := f.st.GetSecret(ctx, consumerNS, "three")
	assert.NilError(t, err)
	assert.Equal(t, string(s.Data["password"]), "new", "three")

	f.createBinding("four", func(in *BindingIntent) { in.ExternalID = "id-four" })
	res = f.stepBinding("four")
	assert.Assert(t, res.Refused, "a new binding is still refused: %+v", res)
	assertBindingRefused(t, f, ns, "four", ReasonRefusedLimitReached)
}

// A binding whose status claims a copy it never got from this instance (written by hand,
// or pointed at it from another instance) is no binding that stays: under a full limit
// it is refused, and its Secret gets nothing.
func TestUserProvided_ACopyClaimedByItsStatusAlone_TakesAPlaceUnderTheLimit(t *testing.T) {
	f := threeCopiesThenLimitedToTwo(t)
	b := NewBinding(BindingIntent{Namespace: ns, Name: "forged", Instance: "db", SecretName: "forged", ExternalID: "id-forged"})
	b.Status.Bound = &v1alpha1.BoundState{BindingID: "id-forged", UserProvided: true, SourceVersion: "other-secret-uid/1"}
	_, err := f.st.Bindings().Create(store.WithIntent(context.Background()), b)
	assert.NilError(t, err)

	res := f.stepBinding("forged")
	assert.Assert(t, res.Refused, "%+v", res)
	assertBindingRefused(t, f, ns, "forged", ReasonRefusedLimitReached)
	_, err = f.st.GetSecret(context.Background(), ns, "forged")
	assert.Assert(t, store.IsNotFound(err), "no copy was written: %v", err)
}

// A verb whose user may not read the credentials of a settled user-provided instance (a
// touch, a wait that steps it) has nothing to leave to reconcile: the record has no
// pending work, so reconcile would never take it up, and a Ready=False
// "WaitingForReconcile" written there would stay for good. The record is left as it was.
func TestUserProvided_ASettledInstanceSteppedByAUserWhoMayNotReadItsCredentials_StaysAsItWas(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	assert.NilError(t, f.engine.AbandonInstance(context.Background(), f.get("db")))
	res := f.userProvided(map[string]string{"password": upsPassword})
	assert.Equal(t, res.State, StateSettled, res.Message)
	before := f.get("db")
	forbid, _ := f.forbidSecretReads(CredentialsSecretName("db"))
	forbid.Store(true)

	res, err := f.engine.StepInstance(context.Background(), f.get("db"))

	assert.NilError(t, err)
	after := f.get("db")
	assert.Assert(t, !WaitingForReconcile(after), "nothing is left to reconcile: %+v", after.Status.Conditions)
	assert.Equal(t, after.ResourceVersion, before.ResourceVersion, "nothing was written")
	assert.Equal(t, res.State, StateSettled, res.Message)
}
