package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

const consumerNS = "team-b"

// consumerBinding records a binding in namespace bns of instance db of namespace dev,
// written by w (this process's store when nil).
func (f *fixture) consumerBinding(w *store.Store, bns, name string) {
	f.t.Helper()
	if w == nil {
		w = f.st
	}
	_, err := w.Bindings().Create(store.WithIntent(context.Background()), NewBinding(BindingIntent{
		Namespace: bns, Name: name, Instance: "db", InstanceNamespace: ns, SecretName: name, ExternalID: "bind-" + bns + "-" + name,
	}))
	assert.NilError(f.t, err)
}

func (f *fixture) bindingIn(bns, name string) (*v1alpha1.ServiceBinding, error) {
	return f.st.Bindings().Get(context.Background(), bns, name)
}

func (f *fixture) stepBindingIn(bns, name string) Result {
	f.t.Helper()
	b, err := f.bindingIn(bns, name)
	assert.NilError(f.t, err)
	res, err := f.engine.StepBinding(context.Background(), b)
	assert.NilError(f.t, err)
	return res
}

// boundFromTeamB is shareFixture with dev/db shared with team-b, and bound there as
// team-b/app.
func boundFromTeamB(t *testing.T) *fixture {
	t.Helper()
	f := shareFixture(t)
	_, err := f.engine.Share(context.Background(), ShareRequest{Namespace: ns, Name: "db", To: consumerNS, DryRun: DryRunNone})
	assert.NilError(t, err)
	f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil)
	f.consumerBinding(nil, consumerNS, "app")
	assert.Equal(t, f.stepBindingIn(consumerNS, "app").State, StateSettled)
	return f
}

// onlyOwnNamespace makes the lists and deletions of ConfigMaps outside namespace dev
// forbidden, as for a user who may work only there, until *limited is set to false.
func (f *fixture) onlyOwnNamespace() (limited *bool) {
	on := true
	f.cluster.Core.PrependReactor("*", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if on && a.GetNamespace() != ns && (a.GetVerb() == "list" || a.GetVerb() == "delete") {
			return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
		}
		return false, nil, nil
	})
	return &on
}

func (f *fixture) editInstance(edit func(*v1alpha1.ServiceInstance)) {
	f.t.Helper()
	_, err := f.st.Instances().UpdateWithRetry(store.WithIntent(context.Background()), ns, "db", func(i *v1alpha1.ServiceInstance) error {
		edit(i)
		return nil
	})
	assert.NilError(f.t, err)
}

func assertBindingRefused(t *testing.T, f *fixture, bns, name, reason string) *v1alpha1.ServiceBinding {
	t.Helper()
	b, err := f.bindingIn(bns, name)
	assert.NilError(t, err)
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "conditions: %+v", b.Status.Conditions)
	assert.Equal(t, c.Reason, reason, c.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 0, "nothing may be sent to the broker for a refused binding")
	assert.Equal(t, len(b.Status.ExternalIDs), 0, "no id is listed as possibly held at the broker")
	return b
}

func TestConsumers_ABindingRecordOfAnUnsharedInstance_IsRefused(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	// Written by hand in team-b: nothing shares db with team-b.
	f.consumerBinding(nil, consumerNS, "forged")

	res := f.stepBindingIn(consumerNS, "forged")

	assert.Assert(t, res.Refused, "%+v", res)
	b := assertBindingRefused(t, f, consumerNS, "forged", ReasonRefusedNotShared)
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
	assert.Assert(t, is.Contains(c.Message, `kubectl catalog share db --to-namespace team-b -n dev`))
	_, err := f.cluster.Core.CoreV1().Secrets(consumerNS).Get(context.Background(), "forged", metav1.GetOptions{})
	assert.Assert(t, err != nil, "no Secret was written")
}

func TestConsumers_ASharedInstance_IsBoundFromTheOtherNamespace_AndUnshareRevokesTheBinding(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
	f.consumerBinding(nil, consumerNS, "app")

	res := f.stepBindingIn(consumerNS, "app")

	assert.Equal(t, res.State, StateSettled, res.Message)
	binds := f.broker.CallsTo(fake.MethodBind)
	assert.Equal(t, len(binds), 1)
	s, err := f.cluster.Core.CoreV1().Secrets(consumerNS).Get(context.Background(), "app", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, string(s.Data["password"]), secretValue)

	// A same-named instance of team-b does not see (or delete) the binding as its own.
	bs, err := f.st.Bindings().List(context.Background(), consumerNS, store.Filter{Instance: "db"})
	assert.NilError(t, err)
	assert.Equal(t, len(bs), 0)

	// Unshare: the instance's next step marks team-b's binding for deletion; its own
	// step removes the Secret and unbinds.
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = nil })
	res = f.step("db")
	assert.Equal(t, res.State, StateSettled, res.Message)
	b, err := f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	assert.Assert(t, b.DeletionTimestamp != nil, "the binding of a namespace no longer granted is marked for deletion")
	res = f.stepBindingIn(consumerNS, "app")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodUnbind)), 1)
	_, err = f.cluster.Core.CoreV1().Secrets(consumerNS).Get(context.Background(), "app", metav1.GetOptions{})
	assert.Assert(t, err != nil, "the Secret is gone")
}

func TestConsumers_AGrantWhoseAuthorIsNotVerifiedOrMayNotWriteTheInstance_DoesNotCount(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		allowed     bool
		reason      string
	}{
		{name: "a grant written without the trust policy in force", token: "old", reason: ReasonRefusedNotShared},
		{name: "a verified author who may not write the instance's record", token: "tok", reason: ReasonRefusedNotShared},
		{name: "a verified author who may", token: "tok", allowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
			authz := &rbac{allow: map[string][]authorizationv1.ResourceAttributes{}}
			if tc.allowed {
				authz.allow["mallory"] = []authorizationv1.ResourceAttributes{{Namespace: ns, Verb: "update", Resource: "configmaps",
					Name: store.ConfigMapName(v1alpha1.KindServiceInstance, "db")}}
			}
			f.engine.cfg.Authorizer = authz
			// mallory re-writes db's spec with a grant to team-b.
			_, err := writerStore(f, "mallory", tc.token).Instances().UpdateWithRetry(store.WithIntent(context.Background()), ns, "db",
				func(i *v1alpha1.ServiceInstance) error {
					i.Spec.SharedWith = []string{consumerNS}
					return nil
				})
			assert.NilError(t, err)
			f.consumerBinding(nil, consumerNS, "app")

			res := f.stepBindingIn(consumerNS, "app")

			if tc.allowed {
				assert.Equal(t, res.State, StateSettled, res.Message)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 1)
				return
			}
			assert.Assert(t, res.Refused, "%+v", res)
			b := assertBindingRefused(t, f, consumerNS, "app", tc.reason)
			c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused)
			assert.Assert(t, is.Contains(c.Message, "does not count"))
		})
	}
}

func TestConsumers_AllowedNamespaces_RefuseOthers(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.editInstance(func(i *v1alpha1.ServiceInstance) {
		i.Spec.SharedWith = []string{consumerNS, "team-c"}
		i.Spec.AllowedNamespaces = []string{consumerNS}
	})
	f.consumerBinding(nil, "team-c", "app")
	f.createBinding("own", nil)

	assert.Assert(t, f.stepBindingIn("team-c", "app").Refused)
	// Another namespace's binding gets the refusal that reveals nothing of the grant.
	assertBindingRefused(t, f, "team-c", "app", ReasonRefusedNotShared)
	assert.Assert(t, f.stepBinding("own").Refused, "the owner's namespace is not in the list either")
	assertBindingRefused(t, f, ns, "own", ReasonRefusedNamespaceNotAllowed)

	f.consumerBinding(nil, consumerNS, "app")
	res := f.stepBindingIn(consumerNS, "app")
	assert.Equal(t, res.State, StateSettled, res.Message)
}

func TestConsumers_DeprovisioningASharedInstance_UnbindsTheOtherNamespacesBindingsFirst(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
	f.consumerBinding(nil, consumerNS, "app")
	assert.Equal(t, f.stepBindingIn(consumerNS, "app").State, StateSettled)
	assert.Equal(t, f.step("db").State, StateSettled)

	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	res := f.step("db")
	assert.Equal(t, res.State, StateWaiting)
	assert.Assert(t, is.Contains(res.Message, "team-b/app"))
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 0)
	assert.Equal(t, f.stepBindingIn(consumerNS, "app").State, StateDeleted)
	assert.Equal(t, f.step("db").State, StateDeleted)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
}

func TestConsumers_ARefusedBindingIsDeletedAtOnce_WithoutABrokerCall(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.consumerBinding(nil, consumerNS, "forged")
	assert.Assert(t, f.stepBindingIn(consumerNS, "forged").Refused)

	assert.NilError(t, f.st.Bindings().Delete(context.Background(), consumerNS, "forged"))
	res := f.stepBindingIn(consumerNS, "forged")

	assert.Equal(t, res.State, StateDeleted, "the refusal's retry does not hold back a deletion that sends nothing: %+v", res)
	assert.Equal(t, len(f.broker.Calls()), 0)
}

// A status is free to write: a binding record forged in team-b with a status saying a
// bind is in flight (an interrupted call to re-send) must not skip the sharing check,
// nor the place under the instance's limit. Of an instance not shared with team-b, such a
// binding of a namespace db shared with before is revoked (the broker may hold what the
// call made): marked for deletion with no Bind sent and no Secret written, then unbound.
// Of a namespace db never granted it is refused, and nothing at all is sent to db's
// broker for it (the cross-namespace rule). Under a limit it stays refused.
func TestConsumers_AForgedBindInFlight_OfAnUnsharedInstance_IsRefusedOrRevoked(t *testing.T) {
	for _, tc := range []struct {
		name         string
		share        bool
		sharedBefore bool
		reason       string // "": revoked
	}{
		{name: "shared before: revoked", sharedBefore: true},
		{name: "never shared: refused", reason: ReasonRefusedNotShared},
		{name: "shared, the limit reached", share: true, reason: ReasonRefusedLimitReached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			db := f.get("db")
			if tc.sharedBefore {
				f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Status.SharedBefore = []string{consumerNS} })
			}
			if tc.share {
				zero := int32(0)
				f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith, i.Spec.MaxBindings = []string{consumerNS}, &zero })
			}
			b := NewBinding(BindingIntent{
				Namespace: consumerNS, Name: "forged", Instance: "db", InstanceNamespace: ns, SecretName: "forged", ExternalID: "bind-forged",
			})
			b.Status.InFlight = &v1alpha1.Operation{
				Type: v1alpha1.OperationBind, InstanceID: db.CurrentExternalID(), BindingID: "bind-forged",
				ServiceID: db.Spec.ClassID, PlanID: db.Spec.PlanID, RequestID: "req-forged", StartedAt: metav1.NewTime(f.now),
			}
			_, err := f.st.Bindings().Create(store.WithIntent(context.Background()), b)
			assert.NilError(t, err)

			res := f.stepBindingIn(consumerNS, "forged")

			if tc.reason == "" {
				assertRevoked(t, f, consumerNS, "forged", res)
				res = f.stepBindingIn(consumerNS, "forged")
				assert.Equal(t, res.State, StateDeleted, res.Message)
				unbinds := f.broker.CallsTo(fake.MethodUnbind)
				assert.Assert(t, len(unbinds) > 0, "what the call may have made is unbound")
				assert.Equal(t, unbinds[0].Request.(osb.UnbindRequest).BindingID, "bind-forged")
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 0, "no bind is sent")
				return
			}
			assert.Assert(t, res.Refused, "%+v", res)
			got, err := f.bindingIn(consumerNS, "forged")
			assert.NilError(t, err)
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRefused)
			assert.Assert(t, c != nil && c.Status == metav1.ConditionTrue, "conditions: %+v", got.Status.Conditions)
			assert.Equal(t, c.Reason, tc.reason, c.Message)
			assert.Equal(t, len(f.broker.Calls()), 0, "nothing may be sent to the broker")
			_, err = f.cluster.Core.CoreV1().Secrets(consumerNS).Get(context.Background(), "forged", metav1.GetOptions{})
			assert.Assert(t, err != nil, "no Secret was written")
		})
	}
}

// assertRevoked checks that a binding step revoked ns/name (res is its result): the
// binding is marked for deletion, nothing was bound or fetched, and no Secret written.
func assertRevoked(t *testing.T, f *fixture, ns, name string, res Result) {
	t.Helper()
	assert.Assert(t, !res.Refused && res.State == StateWaiting && strings.HasPrefix(res.Message, "revoked: "), "%+v", res)
	got, err := f.bindingIn(ns, name)
	assert.NilError(t, err)
	assert.Assert(t, got.DeletionTimestamp != nil, "the binding of a namespace the instance does not let bind is marked for deletion")
	// Whoever steps it next from this result (reconcile's queue does) starts its
	// deletion, not the refused step again (-sim.asyncbind seed 3714 polled at once, for
	// ever).
	assert.Assert(t, res.Binding != nil && res.Binding.DeletionTimestamp != nil, "the result is the binding as its deletion mark left it")
	assert.Assert(t, got.Status.Bound == nil || got.Status.Bound.UserProvided, "nothing is bound")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 0, "no bind is sent")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodGetBinding)), 0, "no credentials are fetched")
	_, err = f.cluster.Core.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	assert.Assert(t, err != nil, "no Secret was written")
}

// The same with an asynchronous bind: a forged "bind in progress" of an unshared
// instance, which the broker answers as succeeded, must not fetch the credentials into
// the forger's namespace. Of a namespace db was shared with before, it is revoked, and
// its deletion unbinds what the broker may hold, still without fetching anything.
func TestConsumers_AForgedAsyncBind_OfAnUnsharedInstance_FetchesNoCredentials(t *testing.T) {
	f, _ := bindingFixture(t, func(c *v1alpha1.ServiceClass) { c.Spec.BindingsRetrievable = true })
	f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Status.SharedBefore = []string{consumerNS} })
	f.broker.SetBindingPollSequence("bop-forged", fake.Succeeded(), fake.Succeeded(), fake.Succeeded(), fake.Succeeded())
	f.broker.GetBindingReturns(&osb.GetBindingResponse{Credentials: map[string]any{"password": secretValue}}, nil)
	db := f.get("db")
	b := NewBinding(BindingIntent{
		Namespace: consumerNS, Name: "forged", Instance: "db", InstanceNamespace: ns, SecretName: "forged", ExternalID: "bind-forged",
	})
	b.Status.InFlight = &v1alpha1.Operation{
		Type: v1alpha1.OperationBind, Async: true, OperationKey: "bop-forged", InstanceID: db.CurrentExternalID(), BindingID: "bind-forged",
		ServiceID: db.Spec.ClassID, PlanID: db.Spec.PlanID, RequestID: "req-forged", StartedAt: metav1.NewTime(f.now),
	}
	_, err := f.st.Bindings().Create(store.WithIntent(context.Background()), b)
	assert.NilError(t, err)
	noSecret := func() {
		t.Helper()
		assert.Equal(t, len(f.broker.CallsTo(fake.MethodGetBinding)), 0, "the credentials were fetched")
		_, err := f.cluster.Core.CoreV1().Secrets(consumerNS).Get(context.Background(), "forged", metav1.GetOptions{})
		assert.Assert(t, err != nil, "no Secret was written")
	}

	assertRevoked(t, f, consumerNS, "forged", f.stepBindingIn(consumerNS, "forged"))
	var res Result
	for range 4 {
		if res = f.stepBindingIn(consumerNS, "forged"); res.State == StateDeleted {
			break
		}
		f.advance(time.Hour)
	}
	assert.Equal(t, res.State, StateDeleted, res.Message)
	noSecret()
	unbinds := f.broker.CallsTo(fake.MethodUnbind)
	assert.Assert(t, len(unbinds) > 0, "what the bind may have made is unbound")
	assert.Equal(t, unbinds[0].Request.(osb.UnbindRequest).BindingID, "bind-forged")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 0, "no bind is sent")
}

// cannotAsk is the authorizer of a user who may not create SubjectAccessReviews.
type cannotAsk struct{}

func (cannotAsk) Allowed(context.Context, string, []string, authorizationv1.ResourceAttributes) (bool, string, error) {
	return false, "", errors.New(`subjectaccessreviews.authorization.k8s.io is forbidden: User "bob" cannot create resource "subjectaccessreviews"`)
}

// A user binds, from their own namespace, an instance another person shared with it,
// and may not ask the API server whether that person may share it: the grant is neither
// refused nor taken on the user's word; the bind waits for reconcile, which may ask.
func TestConsumers_AGrantTheUserMayNotCheck_IsLeftToReconcile(t *testing.T) {
	f, _ := bindingFixture(t, nil)
	f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
	f.engine.cfg.Authorizer = cannotAsk{}
	_, err := writerStore(f, "mallory", "tok").Instances().UpdateWithRetry(store.WithIntent(context.Background()), ns, "db",
		func(i *v1alpha1.ServiceInstance) error {
			i.Spec.SharedWith = []string{consumerNS}
			return nil
		})
	assert.NilError(t, err)
	f.consumerBinding(nil, consumerNS, "app")
	b, err := f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)

	res, err := f.engine.StepBinding(WithRunnersRights(context.Background()), b)
	assert.NilError(t, err)
	assert.Equal(t, res.State, StateWaiting, res.Message)
	assert.Assert(t, !res.Refused, "%+v", res)
	assert.Assert(t, is.Contains(res.Message, "reconcile"), res.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 0)
	b, err = f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	assert.Assert(t, meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused) == nil, "%+v", b.Status.Conditions)
	ready := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
	assert.Assert(t, ready != nil && ready.Reason == ReasonWaitingForReconcile, "%+v", b.Status.Conditions)

	// Reconcile, which may ask, finds that mallory may write the instance: it binds.
	f.engine.cfg.Authorizer = &rbac{allow: map[string][]authorizationv1.ResourceAttributes{"mallory": {{Namespace: ns, Verb: "update",
		Resource: "configmaps", Name: store.ConfigMapName(v1alpha1.KindServiceInstance, "db")}}}}
	f.engine.auth = newAuthority(f.engine) // forget the answers
	res = f.stepBindingIn(consumerNS, "app")
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 1)
}

// An unshare by a user who may not see team-b leaves team-b's bindings to reconcile; if
// her own step then records the spec as applied (an update's success does as well), the
// settling step, which revokes only a spec new to it, would never revoke them, and
// team-b kept the credentials of an instance no longer shared with it. The withdrawn
// grant stays pending until a driver that sees team-b revokes it.
func TestConsumers_AGrantWithdrawnUnseen_StaysPendingUntilADriverThatSeesRevokesIt(t *testing.T) {
	f := boundFromTeamB(t)
	ctx := context.Background()
	assert.Equal(t, f.step("db").State, StateSettled)
	assert.Assert(t, !f.get("db").HasPendingWork(), "shared, nothing withdrawn: settled")
	limited := f.onlyOwnNamespace()
	u, err := f.engine.Unshare(ctx, UnshareRequest{Namespace: ns, Name: "db", From: consumerNS, DryRun: DryRunNone})
	assert.NilError(t, err)
	assert.Assert(t, u.Withdrawn && u.LeftToReconcile)
	for range 2 {
		assert.Equal(t, f.step("db").State, StateSettled)
	}
	db := f.get("db")
	assert.Equal(t, db.Status.ObservedGeneration, db.Generation)
	assert.Assert(t, db.HasPendingWork() && db.RevokePending(), "her steps could not revoke: still pending, for reconcile")
	b, err := f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	assert.Assert(t, b.DeletionTimestamp == nil)

	*limited = false
	assert.Equal(t, f.step("db").State, StateSettled)

	db = f.get("db")
	assert.Assert(t, !db.HasPendingWork(), "revoked: %+v", db.Status)
	assert.Equal(t, db.Status.RevokedGeneration, db.Generation)
	b, err = f.bindingIn(consumerNS, "app")
	assert.NilError(t, err)
	assert.Assert(t, b.DeletionTimestamp != nil, "team-b's binding is marked for deletion")
	res := f.stepBindingIn(consumerNS, "app")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Check(t, is.Len(f.broker.CallsTo(fake.MethodUnbind), 1))
	_, err = f.cluster.Core.CoreV1().Secrets(consumerNS).Get(ctx, "app", metav1.GetOptions{})
	assert.Assert(t, err != nil, "the Secret is gone")

	// Nothing more is looked at until the spec changes again.
	f.cluster.Core.ClearActions()
	assert.Equal(t, f.step("db").State, StateSettled)
	for _, a := range f.cluster.Core.Actions() {
		assert.Check(t, a.GetVerb() != "list", "a settled instance lists nothing: %v", a)
	}
}
