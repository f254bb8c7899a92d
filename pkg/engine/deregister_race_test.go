package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
	"github.com/kubectl-catalog/kubectl-catalog/test/broker"
)

// registeredIn registers the test broker in scope and returns the namespace of its
// record.
func (f *brokerFixture) registeredIn(scope v1alpha1.Scope) string {
	f.t.Helper()
	req := f.registerRequest()
	req.Scope = scope
	res, err := f.engine.RegisterBroker(context.Background(), req)
	assert.NilError(f.t, err)
	f.tb.ClearRequests()
	return res.Broker.Namespace
}

// instanceOf records an instance of the first class of the broker registered in scope,
// its classes in namespace classNS.
func (f *brokerFixture) instanceOf(scope v1alpha1.Scope, classNS, name string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	c := f.classes(classNS)[0]
	inst, err := f.st.Instances().Create(store.WithIntent(context.Background()), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: scope, BrokerName: brokerName, ClassExternalName: c.Spec.ExternalName,
			ClassID: c.Spec.ID, PlanExternalName: c.Spec.Plans[0].ExternalName, PlanID: c.Spec.Plans[0].ID, ExternalID: "inst-" + name},
	})
	assert.NilError(f.t, err)
	return inst
}

// A provision that starts while "deregister" runs, after it looked for the broker's
// instances and before it deleted the broker, is never sent: the broker is marked first,
// and the provision is refused, saying why; the instance, never provisioned, is then
// deprovisioned without its broker. The race is forced with the hook between the last
// look for instances and the deletions.
func TestDeregister_AProvisionStartedAfterTheLookForInstances_IsNeverSent(t *testing.T) {
	for _, scope := range []v1alpha1.Scope{v1alpha1.ScopeCluster, v1alpha1.ScopeNamespace} {
		t.Run(string(scope), func(t *testing.T) {
			f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), authSecret(ns), catalogNamespace())
			classNS := f.registeredIn(scope)
			var raced Result
			var hooked bool
			f.engine.cfg.Hook = func(ctx context.Context, p HookPoint, _ *v1alpha1.Operation) {
				if p != HookDeregisterChecked || hooked {
					return
				}
				hooked = true
				inst := f.instanceOf(scope, classNS, "db")
				var err error
				raced, err = f.engine.StepInstance(ctx, inst)
				assert.NilError(t, err)
			}

			_, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, Scope: scope})

			assert.NilError(t, err)
			assert.Assert(t, hooked)
			assert.Equal(t, len(f.tb.RequestsFor(broker.OpProvision)), 0, "no provision reaches a broker being deregistered")
			assert.Equal(t, len(f.tb.Instances()), 0)
			assert.Assert(t, is.Contains(raced.Message, `broker "acme" is being deregistered`), raced.Message)
			inst, err := f.st.Instances().Get(context.Background(), ns, "db")
			assert.NilError(t, err)
			assert.Equal(t, len(instanceIDsAtBroker(inst)), 0, "no id may be held at the broker")
			_, err = f.st.Brokers().Get(context.Background(), classNS, brokerName)
			assert.Assert(t, store.IsNotFound(err), "%v", err)

			// The instance is deprovisioned without its broker.
			assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "db"))
			res, err := f.engine.StepInstance(context.Background(), f.getInstance(ns, "db"))
			assert.NilError(t, err)
			assert.Equal(t, res.State, StateDeleted, res.Message)
		})
	}
}

// An instance recorded after the broker is marked, before deregister looks for the
// broker's instances again, is found: deregister is refused, the mark removed, nothing
// deleted, and the provision then goes through.
func TestDeregister_AnInstanceRecordedAfterTheMark_RefusesAndUnmarks(t *testing.T) {
	for _, scope := range []v1alpha1.Scope{v1alpha1.ScopeCluster, v1alpha1.ScopeNamespace} {
		t.Run(string(scope), func(t *testing.T) {
			f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), authSecret(ns), catalogNamespace())
			classNS := f.registeredIn(scope)
			f.engine.cfg.Hook = func(ctx context.Context, p HookPoint, _ *v1alpha1.Operation) {
				if p == HookDeregisterMarked {
					f.instanceOf(scope, classNS, "db")
				}
			}

			_, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, Scope: scope})

			assert.ErrorContains(t, err, `broker "acme" still has 1 instance: dev/db`)
			b, err := f.st.Brokers().Get(context.Background(), classNS, brokerName)
			assert.NilError(t, err)
			_, marked := b.Annotations[store.AnnotationDeregistering]
			assert.Assert(t, !marked, "the mark is removed")
			assert.Assert(t, len(f.classes(classNS)) > 0, "no class is deleted")
			f.engine.cfg.Hook = nil
			res, err := f.engine.StepInstance(context.Background(), f.getInstance(ns, "db"))
			assert.NilError(t, err)
			assert.Equal(t, res.State, StateSettled, res.Message)
			assert.Equal(t, len(f.tb.RequestsFor(broker.OpProvision)), 1)
		})
	}
}

// Under --force the instances stay, but nothing new is sent through the broker between
// the mark and the deletion: neither an update nor a bind.
func TestDeregister_Force_AnUpdateOrBindMeanwhile_IsNeverSent(t *testing.T) {
	for _, call := range []string{"update", "bind"} {
		t.Run(call, func(t *testing.T) {
			f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
			classNS := f.registeredIn(v1alpha1.ScopeCluster)
			f.instanceOf(v1alpha1.ScopeCluster, classNS, "db")
			res, err := f.engine.StepInstance(context.Background(), f.getInstance(ns, "db"))
			assert.NilError(t, err)
			assert.Equal(t, res.State, StateSettled, res.Message)
			f.tb.ClearRequests()
			var raced Result
			f.engine.cfg.Hook = func(ctx context.Context, p HookPoint, _ *v1alpha1.Operation) {
				if p != HookDeregisterChecked {
					return
				}
				var err error
				switch call {
				case "update":
					_, err = f.st.Instances().UpdateWithRetry(store.WithIntent(ctx), ns, "db", func(i *v1alpha1.ServiceInstance) error {
						i.Spec.Parameters = &runtime.RawExtension{Raw: []byte(`{"note":"more"}`)}
						return nil
					})
					assert.NilError(t, err)
					raced, err = f.engine.StepInstance(ctx, f.getInstance(ns, "db"))
				case "bind":
					_, err = f.st.Bindings().Create(store.WithIntent(ctx), NewBinding(BindingIntent{Namespace: ns, Name: "app", Instance: "db", SecretName: "app", ExternalID: bindingOSB}))
					assert.NilError(t, err)
					b, gerr := f.st.Bindings().Get(ctx, ns, "app")
					assert.NilError(t, gerr)
					raced, err = f.engine.StepBinding(ctx, b)
				}
				assert.NilError(t, err)
			}

			_, err = f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, Force: true})

			assert.NilError(t, err)
			assert.Assert(t, is.Contains(raced.Message, `broker "acme" is being deregistered`), raced.Message)
			assert.Equal(t, len(f.tb.RequestsFor(broker.OpUpdate))+len(f.tb.RequestsFor(broker.OpBind)), 0)
		})
	}
}

func (f *brokerFixture) getInstance(namespace, name string) *v1alpha1.ServiceInstance {
	f.t.Helper()
	inst, err := f.st.Instances().Get(context.Background(), namespace, name)
	assert.NilError(f.t, err)
	return inst
}
