package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

// ConfigMaps of another namespace labelled with a record's OSB id bound to it, older
// than the record, cost the check of that id no request each: a bound id is only its
// owner's, so no record of another namespace can be using it, and none is read.
func TestTrust_SquattersOfABoundIDInAnotherNamespace_CostTheIDCheckNoRead(t *testing.T) {
	f := newFixture(t)
	start := f.now
	f.advance(10 * time.Second)
	_, err := f.st.Instances().Create(store.WithIntent(context.Background()), &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gen"},
		Spec: v1alpha1.ServiceInstanceSpec{Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db", ClassID: classID,
			PlanExternalName: "small", PlanID: planSmall, ExternalID: v1alpha1.NewNamespaceBoundID(ns)},
	})
	assert.NilError(t, err)
	res := f.step("gen")
	assert.Equal(t, res.State, StateSettled, res.Message)
	id := f.get("gen").Spec.ExternalID
	assert.Assert(t, v1alpha1.IsBoundID(id), id)

	// Squatters older than the record, in another namespace.
	f.now = start
	const squatters = 30
	for i := range squatters {
		f.squat(fmt.Sprintf("squat-%d", i), id, nil)
	}
	f.now = start.Add(20 * time.Second)
	// A later process: nothing of the id is known yet.
	f.engine = New(f.engine.cfg)
	f.broker.ResetCalls()
	assert.NilError(t, f.st.Instances().Delete(context.Background(), ns, "gen"))
	f.cluster.Core.ClearActions()
	res = f.step("gen")
	assert.Equal(t, res.State, StateDeleted, res.Message)
	reads := 0
	for _, a := range f.cluster.Core.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok && a.GetVerb() == "get" && a.GetNamespace() == "team-b" && a.GetResource().Resource == "configmaps" {
			reads++
			_ = g
		}
	}
	assert.Equal(t, reads, 0, "the id check read each squatter")
	assert.Equal(t, len(f.broker.CallsTo("Deprovision")), 1)
}
