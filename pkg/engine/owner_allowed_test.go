package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// ownerNamespaceFixture is instance db of namespace dev, brokered or user-provided,
// shared with team-b, with binding dev/one settled (bound at the broker, or a copy of the
// credentials).
func ownerNamespaceFixture(t *testing.T, userProvided bool) *fixture {
	t.Helper()
	f, _ := bindingFixture(t, nil)
	if userProvided {
		assert.NilError(t, f.engine.AbandonInstance(context.Background(), f.get("db")))
		assert.Equal(t, f.userProvided(map[string]string{"password": "old"}).State, StateSettled)
	}
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
	f.createBinding("one", func(in *BindingIntent) { in.ExternalID = "bind-one" })
	assert.Equal(t, f.driveBinding("one").State, StateSettled)
	f.broker.ResetCalls()
	return f
}

// The instance's own namespace left out of its allowed namespaces: the bindings it has
// there stay, and keep following the instance (a rotation of a brokered one, a copy of new
// credentials of a user-provided one); a new bind there is refused, with the reason that
// names the list and the fix, and nothing is sent.
func TestConsumers_TheOwnersNamespaceLeftOutOfTheAllowedNamespaces_KeepsItsBindings_AndRefusesNewOnes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		userProvided bool
	}{
		{"brokered", false},
		{"user-provided", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ownerNamespaceFixture(t, tc.userProvided)
			f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.AllowedNamespaces = []string{consumerNS} })
			before := f.getBinding("one")

			if tc.userProvided {
				// What "update --credentials-..." does: a new revision, then the Secret.
				f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.UserProvided.Revision++ })
				assert.NilError(t, f.engine.WriteUserProvidedCredentials(context.Background(), f.get("db"), toBytes(map[string]string{"password": "new"})))
				res := f.step("db")
				assert.Equal(t, res.State, StateSettled, res.Message)
				assert.Equal(t, string(f.secretData("one")["password"]), "new")
			} else {
				_, err := f.engine.startRotation(store.WithIntent(context.Background()), ns, "one")
				assert.NilError(t, err)
				res := f.driveBinding("one")
				assert.Equal(t, res.State, StateSettled, res.Message)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 1, "the rotation's bind")
			}
			b, err := f.bindingIn(ns, "one")
			assert.NilError(t, err, "the owner's binding stays")
			assert.Assert(t, b.DeletionTimestamp == nil, "the owner's binding is not revoked")
			assert.Equal(t, b.UID, before.UID)
			assert.Assert(t, meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused) == nil, "%+v", b.Status.Conditions)
			assert.Assert(t, !b.HasPendingWork())
			if !tc.userProvided {
				assert.Equal(t, b.Status.Bound.BindingID, b.CurrentExternalID(), "rotated")
				assert.Assert(t, b.Status.Bound.BindingID != "bind-one")
			}

			f.broker.ResetCalls()
			f.createBinding("two", func(in *BindingIntent) { in.ExternalID = "bind-two" })
			res := f.stepBinding("two")
			assert.Assert(t, res.Refused, "%+v", res)
			r := assertBindingRefused(t, f, ns, "two", ReasonRefusedNamespaceNotAllowed)
			c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionRefused)
			assert.Assert(t, is.Contains(c.Message, `allows bindings only from namespaces team-b, not from "dev"`), c.Message)
			assert.Assert(t, is.Contains(c.Message, "kubectl catalog update db --allowed-namespaces"), c.Message)
			assert.Assert(t, !f.secretExists("two"))
		})
	}
}

// The owner's bindings that stay when the allowed namespaces leave the owner's namespace
// out still hold their places under the instance's limit: the broker holds them, so a
// consumer's bind is refused while they fill it.
func TestConsumers_TheOwnersBindingsLeftOutOfTheAllowedNamespaces_StillHoldTheirPlaces(t *testing.T) {
	for _, tc := range []struct {
		name         string
		userProvided bool
	}{
		{"brokered", false},
		{"user-provided", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ownerNamespaceFixture(t, tc.userProvided)
			one := int32(1)
			f.editInstance(func(i *v1alpha1.ServiceInstance) {
				i.Spec.AllowedNamespaces = []string{consumerNS}
				i.Spec.MaxBindings = &one
			})
			err := f.engine.CheckBindingLimit(context.Background(), f.get("db"))
			r, ok := AsRefused(err)
			assert.Assert(t, ok, "%v", err)
			assert.Equal(t, r.Reason, ReasonRefusedLimitReached)
			assert.Assert(t, is.Contains(err.Error(), "limit of 1 bindings (dev/one)"), err.Error())

			f.consumerBinding(nil, consumerNS, "app")
			res := f.stepBindingIn(consumerNS, "app")
			assert.Assert(t, res.Refused, "%+v", res)
			b := assertBindingRefused(t, f, consumerNS, "app", ReasonRefusedLimitReached)
			c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
			assert.Assert(t, is.Contains(c.Message, "dev/one"), c.Message)
		})
	}
}
