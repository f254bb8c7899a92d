package engine

import (
	"context"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// withInstance records an instance of the registered broker's first class in the user's
// namespace.
func (f *brokerFixture) withInstance(name string) {
	f.t.Helper()
	c := f.classes(storetest.CatalogNamespace)[0]
	_, err := f.st.Instances().Create(context.Background(), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: c.Spec.ExternalName,
			ClassID: c.Spec.ID, PlanExternalName: c.Spec.Plans[0].ExternalName, PlanID: c.Spec.Plans[0].ID, ExternalID: "inst-" + name},
	})
	assert.NilError(f.t, err)
}

func TestDeregister_RemovesTheBrokerAndItsClasses(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	n := len(f.classes(storetest.CatalogNamespace))
	assert.Assert(t, n > 0)

	res, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, DryRun: DryRunNone, Note: f.note})
	assert.NilError(t, err)
	assert.Equal(t, res.Classes, n)
	assert.Equal(t, res.Broker.Name, brokerName)
	_, err = f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.Assert(t, store.IsNotFound(err), "%v", err)
	assert.Equal(t, len(f.classes(storetest.CatalogNamespace)), 0)
	schemas, err := f.st.PlanSchemas().List(context.Background(), storetest.CatalogNamespace, store.Filter{Broker: brokerName})
	assert.NilError(t, err)
	assert.Equal(t, len(schemas), 0)
	assert.DeepEqual(t, f.notes, []string{fmt.Sprintf("Deregistering broker %q (cluster scope, namespace %q)...", brokerName, storetest.CatalogNamespace)})
	assert.Equal(t, len(f.tb.Requests()), 0, "deregister calls the broker")
}

func TestDeregister_NamespaceBroker_ReleasesTheSecretsFinalizer(t *testing.T) {
	f := newBrokerFixture(t, authSecret(ns))
	req := f.registerRequest()
	req.Scope = v1alpha1.ScopeNamespace
	_, err := f.engine.RegisterBroker(context.Background(), req)
	assert.NilError(t, err)

	_, err = f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns})
	assert.NilError(t, err)
	s, err := f.cluster.Core.CoreV1().Secrets(ns).Get(context.Background(), "acme-auth", metav1.GetOptions{})
	assert.NilError(t, err, "the Secret itself stays")
	assert.Equal(t, len(s.Finalizers), 0)
	_, err = f.st.Brokers().Get(context.Background(), ns, brokerName)
	assert.Assert(t, store.IsNotFound(err), "%v", err)
}

func TestDeregister_InstancesExist_RefusedAndNothingChanges(t *testing.T) {
	for _, dry := range []DryRun{DryRunNone, DryRunClient, DryRunServer} {
		t.Run(string(dry), func(t *testing.T) {
			f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
			f.registered()
			f.withInstance("db")
			before := f.snapshot()
			_, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, DryRun: dry})
			assert.ErrorContains(t, err, `broker "acme" still has 1 instance: dev/db; deprovision them first (kubectl catalog deprovision NAME -n NAMESPACE), or deregister anyway with --force`)
			assert.DeepEqual(t, f.snapshot(), before)
			assert.Equal(t, f.cluster.DryRuns(), 0)
		})
	}
}

func TestDeregister_Force_LeavesTheInstancesBehindAndSaysSo(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	for i := range 12 {
		f.withInstance(fmt.Sprintf("db%02d", i))
	}
	_, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, Force: true, Note: f.note})
	assert.NilError(t, err)
	assert.Equal(t, len(f.notes), 2)
	assert.Equal(t, f.notes[1], `Warning: 12 instances of broker "acme" are left behind (dev/db00, dev/db01, dev/db02, dev/db03, dev/db04, dev/db05, dev/db06, dev/db07, dev/db08, dev/db09 and 2 more)`)
	insts, err := f.st.Instances().List(context.Background(), ns, store.Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(insts), 12)
	_, err = f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.Assert(t, store.IsNotFound(err), "%v", err)
}

func TestDeregister_DryRun_CountsTheClassesAndWritesNothing(t *testing.T) {
	for _, dry := range []DryRun{DryRunClient, DryRunServer} {
		t.Run(string(dry), func(t *testing.T) {
			f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
			f.registered()
			n := len(f.classes(storetest.CatalogNamespace))
			before := f.snapshot()
			res, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: brokerName, Namespace: ns, DryRun: dry, Note: f.note})
			assert.NilError(t, err)
			assert.Equal(t, res.Classes, n)
			assert.Equal(t, len(f.notes), 0, "a dry run says no Deregistering line")
			assert.DeepEqual(t, f.snapshot(), before)
			if dry == DryRunServer {
				// The classes, their schemas and the broker record: deletions checked, none stored.
				assert.Assert(t, f.cluster.DryRuns() >= 2*n+1, "dry-run deletions sent: %d", f.cluster.DryRuns())
			} else {
				assert.Equal(t, f.cluster.DryRuns(), 0)
			}
		})
	}
}

func TestDeregister_UnknownBroker_ChangesNothing(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	before := f.snapshot()
	_, err := f.engine.Deregister(context.Background(), DeregisterRequest{Name: "acne", Namespace: ns})
	assert.ErrorContains(t, err, `broker "acne" not found in namespace "dev" or in the catalog namespace "catalog-system"; did you mean "acme"?`)
	assert.DeepEqual(t, f.snapshot(), before)
}
