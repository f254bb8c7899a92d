package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb/fake"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// onlyNamespace makes the lists and deletions of ConfigMaps outside namespace only (and
// the catalog namespace, whose brokers and classes every user reads) forbidden, as for
// a tenant who may work only there, until *limited is set to false: those of the engine's
// store and of its metadata client.
func (f *fixture) onlyNamespace(only string) (limited *bool) {
	on := true
	forbidden := func(n, verb string) bool {
		return on && n != only && n != storetest.CatalogNamespace && (verb == "list" || verb == "delete")
	}
	f.cluster.Core.PrependReactor("*", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if forbidden(a.GetNamespace(), a.GetVerb()) {
			return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
		}
		return false, nil, nil
	})
	f.st = store.New(f.cluster.Core, narrowMeta{Interface: f.cluster.Metadata, forbidden: forbidden}, store.WithClock(func() time.Time { return f.now }))
	f.engine.cfg.Store = f.st
	return &on
}

// narrowMeta is a metadata client whose lists and deletions forbidden refuses.
type narrowMeta struct {
	metadata.Interface
	forbidden func(namespace, verb string) bool
}

func (m narrowMeta) Resource(gvr k8sschema.GroupVersionResource) metadata.Getter {
	return narrowMetaGetter{Getter: m.Interface.Resource(gvr), forbidden: m.forbidden}
}

type narrowMetaGetter struct {
	metadata.Getter
	forbidden func(namespace, verb string) bool
}

func (g narrowMetaGetter) Namespace(n string) metadata.ResourceInterface {
	return narrowMetaResource{ResourceInterface: g.Getter.Namespace(n), ns: n, forbidden: g.forbidden}
}

type narrowMetaResource struct {
	metadata.ResourceInterface
	ns        string
	forbidden func(namespace, verb string) bool
}

func (r narrowMetaResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	if r.forbidden(r.ns, "list") {
		return nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
	}
	return r.ResourceInterface.List(ctx, opts)
}

func (r narrowMetaResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	if r.forbidden(r.ns, "delete") {
		return apierrors.NewForbidden(k8sschema.GroupResource{Resource: "configmaps"}, name, errors.New("no"))
	}
	return r.ResourceInterface.Delete(ctx, name, opts, sub...)
}

// tenantNamespaceBroker records a namespace-scoped broker "nb" of namespace team-b, with
// no credentials, and its class.
func (f *fixture) tenantNamespaceBroker() {
	f.t.Helper()
	ctx := store.WithIntent(context.Background())
	_, err := f.st.Brokers().Create(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS, Name: "nb"},
		Spec: v1alpha1.BrokerSpec{URL: "https://tenant-broker.example", Scope: v1alpha1.ScopeNamespace}})
	assert.NilError(f.t, err)
	_, err = f.st.Classes().Create(ctx, &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS, Name: v1alpha1.ClassRecordName("nb", classID)},
		Spec: v1alpha1.ServiceClassSpec{BrokerName: "nb", Scope: v1alpha1.ScopeNamespace, ID: classID, ExternalName: "db", Bindable: true,
			Plans: []v1alpha1.ServicePlan{{ID: planSmall, ExternalName: "small"}}},
	})
	assert.NilError(f.t, err)
}

// tenantInstance records team-b's instance "hers" taking over OSB id (as "provision
// --external-id" does: the record, then its id claim) under the cluster broker, or
// under team-b's own broker.
func (f *fixture) tenantInstance(id string, namespaceBroker bool) {
	f.t.Helper()
	ctx := store.WithIntent(context.Background())
	if namespaceBroker {
		f.tenantNamespaceBroker()
	}
	stored, err := f.st.Instances().Create(ctx, forgedInstance("hers", consumerNS, id, func(i *v1alpha1.ServiceInstance) {
		if namespaceBroker {
			i.Spec.Scope, i.Spec.BrokerName = v1alpha1.ScopeNamespace, "nb"
		}
	}))
	assert.NilError(f.t, err)
	assert.NilError(f.t, f.engine.auth.ClaimRecordSpecIDs(ctx, stored))
}

func (f *fixture) hers() *v1alpha1.ServiceInstance {
	f.t.Helper()
	inst, err := f.st.Instances().Get(context.Background(), consumerNS, "hers")
	assert.NilError(f.t, err)
	return inst
}

// stepHers steps team-b/hers once: as reconcile, or as the tenant's own verb, a process
// of its own (which remembers none of reconcile's checks).
func (f *fixture) stepHers(reconcile bool) Result {
	f.t.Helper()
	ctx, e := context.Background(), New(f.engine.cfg)
	if reconcile {
		ctx, e = AsReconcile(ctx), f.engine
	}
	res, err := e.StepInstance(ctx, f.hers())
	assert.NilError(f.t, err)
	return res
}

// A tenant who may list only her own namespace cannot see who else adopted an OSB id
// bound to nothing: her own process sends nothing under it, and leaves the call to
// reconcile, which sees every namespace and refuses it when another namespace's record
// adopted the id first.
func TestExtID_ATenantWhoCannotListOtherNamespaces_LeavesAnIDHeldElsewhereToReconcile(t *testing.T) {
	for _, tc := range []struct {
		name            string
		namespaceBroker bool
		provisionVerb   bool
	}{
		{name: "provision --external-id, cluster broker", provisionVerb: true},
		{name: "a record naming the id, cluster broker"},
		{name: "a record naming the id, the tenant's namespace broker", namespaceBroker: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.adoptedInstance("db") // dev's record adopted svcatID, with its claim
			f.advance(time.Minute)
			limited := f.onlyNamespace(consumerNS)

			if tc.provisionVerb {
				_, err := f.engine.Provision(ctx, ProvisionRequest{Namespace: consumerNS, Name: "hers", Class: "db", Plan: "small", ExternalID: svcatID})
				assert.NilError(t, err)
			} else {
				f.tenantInstance(svcatID, tc.namespaceBroker)
				f.stepHers(false)
			}

			assert.Equal(t, len(f.broker.Calls()), 0, "her own process sends nothing under an id it cannot tell is hers: %+v", f.broker.Calls())
			hers := f.hers()
			assert.Assert(t, WaitingForReconcile(hers), "%+v", hers.Status.Conditions)
			msg := condition(hers, v1alpha1.ConditionReady).Message
			for _, want := range []string{"you may not list the records of every namespace", svcatID, "reconcile"} {
				assert.Assert(t, is.Contains(msg, want))
			}
			assert.Assert(t, hers.Status.InFlight == nil && len(hers.Status.ExternalIDs) == 0, "nothing written ahead: %+v", hers.Status)

			// Her verb again: still nothing sent.
			f.advance(time.Minute)
			assert.Assert(t, !f.stepHers(false).Refused)
			assert.Equal(t, len(f.broker.Calls()), 0)

			// Reconcile sees every namespace: dev's record adopted the id first.
			*limited = false
			res := f.stepHers(true)
			assertRefused(t, f, res, consumerNS, "hers", ReasonRefusedIDInUse)
			assert.Assert(t, is.Contains(condition(f.hers(), v1alpha1.ConditionRefused).Message, `instance "db" in namespace "`+ns+`" adopted it first`))

			// dev's record goes on.
			assert.NilError(t, f.st.Instances().Delete(ctx, ns, "db"))
			assert.Equal(t, f.step("db").State, StateDeleted)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
		})
	}
}

// An id bound to nothing that no other record uses is provisioned all the same: by
// reconcile, which the tenant's process leaves the calls to, polls included.
func TestExtID_ATenantWhoCannotListOtherNamespaces_AFreeIDIsProvisionedByReconcile(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync", true: "async"}[async], func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if async {
				f.broker.ProvisionReturns(&osb.ProvisionResponse{StatusCode: 202, Async: true, Operation: "op-1"}, nil)
				f.broker.SetPollSequence("op-1", fake.PollStep{Response: &osb.LastOperationResponse{State: osb.StateInProgress}}, fake.Succeeded())
			}
			limited := f.onlyNamespace(consumerNS)
			_, err := f.engine.Provision(ctx, ProvisionRequest{Namespace: consumerNS, Name: "hers", Class: "db", Plan: "small", ExternalID: svcatID})
			assert.NilError(t, err)
			assert.Equal(t, len(f.broker.Calls()), 0)
			assert.Assert(t, WaitingForReconcile(f.hers()))

			*limited = false
			res := f.stepHers(true)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1)
			assert.Equal(t, callInstanceID(f.broker.CallsTo(fake.MethodProvision)[0]), svcatID)
			if async {
				assert.Equal(t, res.State, StateWaiting)
				// The tenant's own process polls nothing under the id either.
				*limited = true
				f.advance(time.Minute)
				f.stepHers(false)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodLastOperation)), 0)
				*limited = false
				for i := 0; i < 5 && f.hers().Status.Phase != v1alpha1.PhaseReady; i++ {
					f.advance(time.Minute)
					res = f.stepHers(true)
				}
			}
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Equal(t, f.hers().Status.Phase, v1alpha1.PhaseReady)
		})
	}
}

// A user who may list every namespace sees who adopted the id: her call goes at once
// when the id is free, and is refused at once when another namespace's record holds it.
func TestExtID_AUserWhoListsEveryNamespace_DecidesAtOnce(t *testing.T) {
	t.Run("free: sent at once", func(t *testing.T) {
		f := newFixture(t)
		res, err := f.engine.Provision(context.Background(), ProvisionRequest{Namespace: consumerNS, Name: "hers", Class: "db", Plan: "small", ExternalID: svcatID})
		assert.NilError(t, err)
		assert.Equal(t, res.State, StateSettled, res.Message)
		assert.Equal(t, len(f.broker.CallsTo(fake.MethodProvision)), 1)
	})
	t.Run("held by dev: refused at once", func(t *testing.T) {
		f := newFixture(t)
		f.adoptedInstance("db")
		f.advance(time.Minute)
		f.tenantInstance(svcatID, false)
		res := f.stepHers(false)
		assertRefused(t, f, res, consumerNS, "hers", ReasonRefusedIDInUse)
	})
}

// A bind under an instance whose id is bound to nothing is a call under that id too: a
// tenant who cannot list other namespaces leaves it to reconcile, which refuses it when
// the id is another namespace's, and binds when it is hers.
func TestExtID_ATenantWhoCannotListOtherNamespaces_LeavesABindUnderSuchAnIDToReconcile(t *testing.T) {
	for _, held := range []bool{true, false} {
		t.Run(map[bool]string{true: "held by dev", false: "hers"}[held], func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if held {
				f.adoptedInstance("db")
				f.advance(time.Minute)
			}
			f.tenantInstance(svcatID, false)
			// Her record says the broker holds it (as a status anyone may write does).
			_, err := f.st.Instances().UpdateWithRetry(ctx, consumerNS, "hers", func(i *v1alpha1.ServiceInstance) error {
				i.Status.Phase, i.Status.ObservedGeneration = v1alpha1.PhaseReady, i.Generation
				i.Status.Provisioned = &v1alpha1.ProvisionedState{PlanID: planSmall}
				i.Status.ExternalIDs = []string{svcatID}
				return nil
			})
			assert.NilError(t, err)
			f.broker.BindReturns(&osb.BindResponse{StatusCode: 201, Credentials: map[string]any{"password": secretValue}}, nil)
			limited := f.onlyNamespace(consumerNS)

			_, err = f.engine.Bind(ctx, BindRequest{Namespace: consumerNS, Instance: "hers", Name: "app"})
			assert.NilError(t, err)

			assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 0, "no bind under an id she cannot tell is hers")
			b, err := f.bindingIn(consumerNS, "app")
			assert.NilError(t, err)
			assert.Assert(t, WaitingForReconcile(b), "%+v", b.Status.Conditions)

			*limited = false
			res, err := f.engine.StepBinding(AsReconcile(ctx), b)
			assert.NilError(t, err)
			if held {
				assert.Assert(t, res.Refused, "%+v", res)
				assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 0)
				return
			}
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Equal(t, len(f.broker.CallsTo(fake.MethodBind)), 1)
		})
	}
}

// A record taken over from svcat (migrate's AdoptInstance) names an id bound to
// nothing: its tenant's own deletion, by a process that cannot list other namespaces,
// sends no DELETE under the id and leaves it to reconcile, which deprovisions it.
func TestExtID_AMigratedRecordsDeletionByATenantWhoCannotListOtherNamespaces_IsLeftToReconcile(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.engine.AdoptInstance(ctx, InstanceAdoption{Record: forgedInstance("hers", consumerNS, svcatID, nil), HeldPlanID: planSmall})
	assert.NilError(t, err)
	assert.Equal(t, f.hers().Status.Phase, v1alpha1.PhaseReady)
	limited := f.onlyNamespace(consumerNS)
	assert.NilError(t, f.st.Instances().Delete(ctx, consumerNS, "hers"))

	res := f.stepHers(false)

	assert.Assert(t, res.State == StateWaiting && !res.Refused, "%+v", res)
	assert.Equal(t, len(f.broker.Calls()), 0)
	assert.Assert(t, WaitingForReconcile(f.hers()))
	*limited = false
	assert.Equal(t, f.stepHers(true).State, StateDeleted)
	assert.Equal(t, len(f.broker.CallsTo(fake.MethodDeprovision)), 1)
	assert.Equal(t, callInstanceID(f.broker.CallsTo(fake.MethodDeprovision)[0]), svcatID)
}
