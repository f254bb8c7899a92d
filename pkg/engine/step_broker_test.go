package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store/storetest"
)

// relistDue marks the registered broker's catalog as due to be fetched again.
func (f *brokerFixture) relistDue() *v1alpha1.Broker {
	f.t.Helper()
	b, err := f.st.Brokers().UpdateWithRetry(context.Background(), storetest.CatalogNamespace, brokerName, func(b *v1alpha1.Broker) error {
		b.Spec.RelistRequests++
		return nil
	})
	assert.NilError(f.t, err)
	return b
}

func TestStepBroker_FetchesADueCatalogUnderAClaim(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	b := f.relistDue()
	assert.Equal(t, f.engine.NextBrokerStep(b).Action, NextFetchCatalog)
	calls := f.catalogCalls()

	res, err := f.engine.StepBroker(context.Background(), b, true)
	assert.NilError(t, err)
	assert.DeepEqual(t, res, BrokerResult{Outcome: BrokerWouldDo, Message: NextFetchCatalog})
	assert.Equal(t, f.catalogCalls(), calls, "a dry run calls no broker")

	res, err = f.engine.StepBroker(context.Background(), b, false)
	assert.NilError(t, err)
	assert.DeepEqual(t, res, BrokerResult{Outcome: BrokerDone, Message: "catalog fetched", Steps: 1})
	assert.Equal(t, f.catalogCalls(), calls+1)
	got, err := f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.NilError(t, err)
	_, claimed := store.LeaseOf(got)
	assert.Assert(t, !claimed, "the claim is released")
	assert.Equal(t, f.engine.NextBrokerStep(got).Action, NextCatalogUpToDate)

	res, err = f.engine.StepBroker(context.Background(), got, false)
	assert.NilError(t, err)
	assert.DeepEqual(t, res, BrokerResult{Outcome: BrokerDone, Message: "catalog up to date"})
}

func TestStepBroker_AnotherDriversClaimIsLeftAlone(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	b := f.relistDue()
	_, err := f.st.Brokers().Claim(context.Background(), b, "someone", brokerClaimTTL)
	assert.NilError(t, err)
	calls := f.catalogCalls()
	res, err := f.engine.StepBroker(context.Background(), b, false)
	assert.NilError(t, err)
	assert.Equal(t, res.Outcome, BrokerClaimed)
	assert.Equal(t, f.catalogCalls(), calls)
}

func TestStepBroker_ABrokerBeingDeletedWaitsForItsInstances(t *testing.T) {
	f := newBrokerFixture(t, authSecret(storetest.CatalogNamespace), catalogNamespace())
	f.registered()
	f.withInstance("db")
	b, err := f.st.Brokers().Get(context.Background(), storetest.CatalogNamespace, brokerName)
	assert.NilError(t, err)
	b.Finalizers = append(b.Finalizers, store.Finalizer)
	b.DeletionTimestamp = &metav1.Time{Time: b.CreationTimestamp.Time}
	assert.Equal(t, f.engine.NextBrokerStep(b).Action, NextReleaseBroker)

	res, err := f.engine.StepBroker(context.Background(), b, false)
	assert.NilError(t, err)
	assert.DeepEqual(t, res, BrokerResult{Outcome: BrokerWaiting, Message: "being deleted: kept until its instance db is deprovisioned", HeldByInstances: true})
}

func TestKeptForInstances(t *testing.T) {
	var insts []*v1alpha1.ServiceInstance
	for _, n := range []string{"g", "f", "e", "d", "c", "b", "a"} {
		insts = append(insts, &v1alpha1.ServiceInstance{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	assert.Equal(t, KeptForInstances(insts[:1]), "kept until its instance g is deprovisioned")
	assert.Equal(t, KeptForInstances(insts), "kept until its 7 instances (a, b, c, d, e and 2 more) are deprovisioned")
}
