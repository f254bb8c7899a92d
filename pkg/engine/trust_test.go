package engine

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

type staticTrust struct{ state TrustState }

func (s staticTrust) TrustState(context.Context) (TrustState, error) { return s.state, nil }

// rbac is an Authorizer answering from a list of what each user may do, and counting
// the questions.
type rbac struct {
	allow map[string][]authorizationv1.ResourceAttributes
	asked []string
}

func (r *rbac) Allowed(_ context.Context, user string, _ []string, a authorizationv1.ResourceAttributes) (bool, string, error) {
	r.asked = append(r.asked, user+" "+a.Verb+" "+a.Resource+" "+a.Namespace+"/"+a.Name)
	for _, x := range r.allow[user] {
		if x == a {
			return true, "", nil
		}
	}
	return false, "RBAC: no rule allows it", nil
}

// writerStore is a store of the same cluster that writes as user, stamping token on
// what it writes as its intent: another person's kubectl catalog.
func writerStore(f *fixture, user, token string) *store.Store {
	return f.cluster.Store(store.WithClock(func() time.Time { return f.now }),
		store.WithIdentity(func(context.Context) (*store.Identity, error) {
			return &store.Identity{Username: user, Groups: []string{"system:authenticated"}}, nil
		}),
		store.WithTrustToken(func(context.Context) (string, error) { return token, nil }))
}

func forgedInstance(name, namespace, id string, edit func(*v1alpha1.ServiceInstance)) *v1alpha1.ServiceInstance {
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db", ClassID: classID,
			PlanExternalName: "small", PlanID: planSmall, ExternalID: id,
		},
	}
	if edit != nil {
		edit(inst)
	}
	return inst
}

func withSecretParameters(inst *v1alpha1.ServiceInstance) {
	inst.Spec.ParametersFrom = []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "root"}}}
}

func (f *fixture) stepRecord(inst *v1alpha1.ServiceInstance) Result {
	f.t.Helper()
	cur, err := f.st.Instances().Get(context.Background(), inst.Namespace, inst.Name)
	assert.NilError(f.t, err)
	res, err := f.engine.StepInstance(context.Background(), cur)
	assert.NilError(f.t, err)
	return res
}

func assertRefused(t *testing.T, f *fixture, res Result, namespace, name, reason string) {
	t.Helper()
	assert.Assert(t, res.Refused, "step result: %+v", res)
	inst, err := f.st.Instances().Get(context.Background(), namespace, name)
	assert.NilError(t, err)
	c := condition(inst, v1alpha1.ConditionRefused)
	assert.Equal(t, c.Status, metav1.ConditionTrue)
	assert.Equal(t, c.Reason, reason, c.Message)
	assert.Equal(t, condition(inst, v1alpha1.ConditionReady).Reason, reason)
	assert.Assert(t, inst.Status.Retry != nil && inst.Status.Retry.NextRetryAt != nil, "a refusal is looked at again later")
	assert.Equal(t, len(f.broker.Calls()), 0, "nothing may be sent to the broker for a refused record")
}

func TestTrust_SecretParametersOfAnUnverifiedAuthor_AreNeverRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trust TrustState
		token string
	}{
		{name: "no trust policy", trust: TrustState{Reason: "not installed"}, token: ""},
		{name: "a token from before the policy in force", trust: TrustState{Token: "new"}, token: "old"},
		{name: "no author at all", trust: TrustState{Token: "new"}, token: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.engine.cfg.Trust = staticTrust{tc.trust}
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("root", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
			assert.NilError(t, err)
			w := writerStore(f, "mallory", tc.token)
			if tc.token == "-" {
				w = f.cluster.Store()
			}
			_, err = w.Instances().Create(store.WithIntent(context.Background()), forgedInstance("evil", ns, "id-evil", withSecretParameters))
			assert.NilError(t, err)

			res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "evil"}})

			assertRefused(t, f, res, ns, "evil", ReasonRefusedAuthorUnverified)
		})
	}
}

func TestTrust_VerifiedAuthor_SecretsReadOnlyWhenTheAuthorMay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed bool
	}{
		{name: "the author may read the Secret", allowed: true},
		{name: "the author may not read the Secret", allowed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
			authz := &rbac{allow: map[string][]authorizationv1.ResourceAttributes{}}
			if tc.allowed {
				authz.allow["bob"] = []authorizationv1.ResourceAttributes{{Namespace: ns, Verb: "get", Resource: "secrets", Name: "root"}}
			}
			f.engine.cfg.Authorizer = authz
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("root", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
			assert.NilError(t, err)
			_, err = writerStore(f, "bob", "tok").Instances().Create(store.WithIntent(context.Background()), forgedInstance("db2", ns, "id-2", withSecretParameters))
			assert.NilError(t, err)

			res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db2"}})

			assert.DeepEqual(t, authz.asked, []string{"bob get secrets dev/root"})
			if !tc.allowed {
				assertRefused(t, f, res, ns, "db2", ReasonRefusedNotAuthorized)
				return
			}
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1)
		})
	}
}

func TestTrust_TheRunnersOwnSpec_NeedsNoAuthorization(t *testing.T) {
	f := newFixture(t)
	authz := &rbac{}
	f.engine.cfg.Authorizer = authz
	_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("root", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
	assert.NilError(t, err)
	// Written by this process's store on the user's command: the user's own.
	_, err = f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("mine", ns, "id-mine", withSecretParameters))
	assert.NilError(t, err)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"}})

	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Equal(t, len(authz.asked), 0)
}

func TestTrust_RunnersRights_AreNotLentToARecordAnotherPersonMayHaveWritten(t *testing.T) {
	unlabel := func(t *testing.T, f *fixture) {
		cms := f.cluster.Core.CoreV1().ConfigMaps(ns)
		cm, err := cms.Get(context.Background(), store.ConfigMapName(v1alpha1.KindServiceInstance, "evil"), metav1.GetOptions{})
		assert.NilError(t, err)
		delete(cm.Labels, store.LabelManagedBy)
		_, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{})
		assert.NilError(t, err)
	}
	for _, tc := range []struct {
		name    string
		trust   TrustState
		token   string
		edit    func(*testing.T, *fixture)
		refused string // a part of the refusal's message; "" when the runner's rights apply
	}{
		{name: "no trust policy: the runner's command, the runner's rights", trust: TrustState{Reason: "not installed"}},
		{name: "policy in force, a record from before it", trust: TrustState{Token: "new"}, token: "old",
			refused: "your own rights are not lent"},
		{name: "policy in force, another verified author and no way to ask about them", trust: TrustState{Token: "new"}, token: "new",
			refused: "cannot ask the API server"},
		{name: "no trust policy, author annotations without the managed-by label", trust: TrustState{Reason: "not installed"}, token: "old",
			edit: unlabel, refused: "lacks the label " + store.LabelManagedBy},
		{name: "policy in force, author annotations without the managed-by label", trust: TrustState{Token: "new"}, token: "new",
			edit: unlabel, refused: "someone other than its author changed it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.engine.cfg.Trust = staticTrust{tc.trust}
			f.engine.cfg.Authorizer = nil
			_, err := f.cluster.Core.CoreV1().Secrets(ns).Create(context.Background(), secret("root", map[string]string{"password": "hunter2"}), metav1.CreateOptions{})
			assert.NilError(t, err)
			_, err = writerStore(f, "mallory", tc.token).Instances().Create(store.WithIntent(context.Background()), forgedInstance("evil", ns, "id-evil", withSecretParameters))
			assert.NilError(t, err)
			if tc.edit != nil {
				tc.edit(t, f)
			}

			cur, err := f.st.Instances().Get(context.Background(), ns, "evil")
			assert.NilError(t, err)
			res, err := f.engine.StepInstance(WithRunnersRights(context.Background()), cur)
			assert.NilError(t, err)

			if tc.refused == "" {
				assert.Assert(t, !res.Refused, "%+v", res)
				assert.Assert(t, len(f.broker.Calls()) > 0, "the runner's own command is carried out with their rights")
				return
			}
			assertRefused(t, f, res, ns, "evil", ReasonRefusedAuthorUnverified)
			inst, err := f.st.Instances().Get(context.Background(), ns, "evil")
			assert.NilError(t, err)
			assert.Assert(t, is.Contains(condition(inst, v1alpha1.ConditionRefused).Message, tc.refused))
		})
	}
}

// A bind of an instance another namespace shares checks, before it records anything,
// that the binding's author may write records in the binding's namespace. The binding
// about to be recorded is the runner's own (this process writes it, on the user's
// command): with the trust policy in force it is not a record someone else wrote, and is
// not refused for want of an author. A binding record another person wrote there is.
func TestTrust_ABindOfASharedInstance_IsTheRunnersOwn_ARecordAnotherPersonWroteIsNot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writer string // who wrote the binding record: "" for the runner's bind, "-" for no author
		token  string
	}{
		{name: "the runner's bind"},
		{name: "a record without author", writer: "-"},
		{name: "a record from before the policy in force", writer: "mallory", token: "old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := bindingFixture(t, nil)
			f.engine.cfg.Trust = staticTrust{TrustState{Token: "tok"}}
			authz := &rbac{}
			f.engine.cfg.Authorizer = authz
			f.editInstance(func(i *v1alpha1.ServiceInstance) { i.Spec.SharedWith = []string{consumerNS} })
			ctx := context.Background()

			if tc.writer == "" {
				res, err := f.engine.Bind(ctx, BindRequest{Namespace: consumerNS, Instance: "db", InstanceNamespace: ns, Name: "app"})
				assert.NilError(t, err)
				assert.Equal(t, res.Followed.State, StateSettled, res.Followed.Message)
				b, err := f.bindingIn(consumerNS, "app")
				assert.NilError(t, err)
				assert.Equal(t, b.Status.Phase, v1alpha1.PhaseReady)
				assert.Assert(t, f.st.Intended(b), "the binding is written as the user's intent")
				s, err := f.st.GetSecret(ctx, consumerNS, "app")
				assert.NilError(t, err)
				assert.Equal(t, string(s.Data["password"]), secretValue)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 1)
				assert.Equal(t, len(authz.asked), 0, "the runner's own records need no one asked: %v", authz.asked)
				return
			}
			w := writerStore(f, tc.writer, tc.token)
			if tc.writer == "-" {
				w = f.cluster.Store()
			}
			_, err := w.Bindings().Create(store.WithIntent(ctx), NewBinding(BindingIntent{
				Namespace: consumerNS, Name: "forged", Instance: "db", InstanceNamespace: ns, SecretName: "forged", ExternalID: "bind-forged",
			}))
			assert.NilError(t, err)
			b, err := f.bindingIn(consumerNS, "forged")
			assert.NilError(t, err)
			res, err := f.engine.StepBinding(WithRunnersRights(ctx), b)
			assert.NilError(t, err)
			assert.Assert(t, res.Refused, "%+v", res)
			b = assertBindingRefused(t, f, consumerNS, "forged", ReasonRefusedAuthorUnverified)
			assert.Assert(t, is.Contains(meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionRefused).Message, "your own rights are not lent"))
			_, err = f.cluster.Core.CoreV1().Secrets(consumerNS).Get(ctx, "forged", metav1.GetOptions{})
			assert.Assert(t, apierrors.IsNotFound(err), "no Secret was written: %v", err)
		})
	}
}

func TestTrust_AnOSBIDAnOlderRecordUses_IsNeverSent(t *testing.T) {
	f := newFixture(t)
	f.provisioned("db", planSmall, "")
	f.advance(time.Minute)
	// A copy of db's id, in another namespace, by someone who read it in describe.
	_, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy", "team-b", instanceOSB, nil))
	assert.NilError(t, err)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDInUse)

	// Deleting the copy must not deprovision db's instance either: it never sent anything,
	// so it goes without a broker call...
	assert.NilError(t, f.st.Instances().Delete(context.Background(), "team-b", "copy"))
	res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Equal(t, len(f.broker.Calls()), 0)
	// ...and a copy whose status claims the broker holds it is refused the DELETE.
	_, err = f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy2", "team-b", instanceOSB, func(i *v1alpha1.ServiceInstance) {
		i.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
	}))
	assert.NilError(t, err)
	assert.NilError(t, f.st.Instances().Delete(context.Background(), "team-b", "copy2"))
	res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy2"}})
	assertRefused(t, f, res, "team-b", "copy2", ReasonRefusedIDInUse)

	// The older record, the id's owner, is not held back.
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
	res = f.step("db")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
}

func TestTrust_AnIDAnOlderRecordMayHoldAtTheBroker_IsNeverSent(t *testing.T) {
	f := newFixture(t)
	// An older record whose earlier attempt (an id the engine generated for it, in its
	// status only) the broker may still hold.
	old, err := f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("old", ns, "id-now", nil))
	assert.NilError(t, err)
	f.engine.ClaimSpecIDs(context.Background(), old)
	then := v1alpha1.NewRecordBoundID(old.UID)
	old.Status.ExternalID = v1alpha1.NewRecordBoundID(old.UID)
	old.Status.ExternalIDs = []string{then, old.Status.ExternalID}
	_, err = f.st.Instances().Update(context.Background(), old)
	assert.NilError(t, err)
	f.advance(time.Minute)
	_, err = f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy", "team-b", then, nil))
	assert.NilError(t, err)
	_, err = f.st.Instances().Create(store.WithIntent(context.Background()), forgedInstance("copy-2", "team-b", "id-now", nil))
	assert.NilError(t, err)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})

	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDNotOwned)
	res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy-2"}})
	assertRefused(t, f, res, "team-b", "copy-2", ReasonRefusedIDInUse)
}

// Reconcile's own list of every record answers the id check for each record it listed,
// the newest too: a copy of its id made after the list, even in the same second, is
// newer. The original goes ahead without a list of its own; the copy, which the list did
// not hold, is checked with one, finds the original and is refused.
func TestTrust_TheRunsListAnswersForTheOriginal_ALaterCopyIsRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	orig, err := f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("orig", ns, "id-shared", nil))
	assert.NilError(t, err)
	f.engine.ClaimSpecIDs(ctx, orig)
	_, idx, err := f.st.ListPendingWithIDs(ctx, "")
	assert.NilError(t, err)
	// Same clock, same second.
	_, err = f.st.Instances().Create(store.WithIntent(ctx), forgedInstance("copy", "team-b", "id-shared", nil))
	assert.NilError(t, err)
	f.engine.UseIDIndex(idx)

	res := f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "copy"}})
	assertRefused(t, f, res, "team-b", "copy", ReasonRefusedIDInUse)

	lists := f.cluster.MetadataLists()
	res = f.stepRecord(&v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orig"}})
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Equal(t, f.cluster.MetadataLists()-lists, 0, "answered from the run's list")
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1, "the original's only")
}
