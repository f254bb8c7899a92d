package engine

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
	"github.com/kubectl-catalog/kubectl-catalog/pkg/store"
)

func adopted(name, id, params string) *v1alpha1.ServiceInstance {
	inst := &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope: v1alpha1.ScopeCluster, BrokerName: brokerName, ClassExternalName: "db", ClassID: classID,
			PlanExternalName: "small", PlanID: planSmall, ExternalID: id,
		},
	}
	if params != "" {
		inst.Spec.Parameters = &runtime.RawExtension{Raw: []byte(params)}
	}
	return inst
}

func TestAdoptInstance_HeldAsSpecified_NoCallOnTheNextStep(t *testing.T) {
	f := newFixture(t)
	inst, err := f.engine.AdoptInstance(context.Background(), InstanceAdoption{
		Record: adopted("db", "old-id", `{"size":3}`), HeldPlanID: planSmall, ParametersHeld: true, DashboardURL: "https://dash",
	})
	assert.NilError(t, err)
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseReady)
	assert.Equal(t, inst.Status.Provisioned.PlanID, planSmall)
	assert.DeepEqual(t, inst.Status.ExternalIDs, []string{"old-id"})
	assert.Assert(t, inst.Annotations[store.AnnotationSpecHash] != "")
	res := f.step("db")
	assert.Equal(t, res.State, StateSettled, res.Message)
	assert.Assert(t, is.Len(f.broker.Calls(), 0), "the broker holds what the spec says: nothing is sent")
}

func TestAdoptInstance_ParametersNotHeld_NextStepSendsTheUpdate(t *testing.T) {
	f := newFixture(t)
	_, err := f.engine.AdoptInstance(context.Background(), InstanceAdoption{
		Record: adopted("db", "old-id", `{"size":3}`), HeldPlanID: planSmall,
	})
	assert.NilError(t, err)
	f.step("db")
	assert.Assert(t, is.Len(f.broker.CallsTo("Update"), 1))
	assert.Equal(t, f.broker.CallsTo("Update")[0].Request.(osb.UpdateRequest).InstanceID, "old-id")
}

func TestAdoptInstance_AsyncProvisionIsPolledWithItsKey(t *testing.T) {
	f := newFixture(t)
	inst, err := f.engine.AdoptInstance(context.Background(), InstanceAdoption{
		Record: adopted("db", "old-id", ""), InFlight: &AdoptedOperation{Type: v1alpha1.OperationProvision, OperationKey: "op-9"},
	})
	assert.NilError(t, err)
	assert.Assert(t, inst.Status.Provisioned == nil)
	assert.Equal(t, inst.Status.InFlight.OperationKey, "op-9")
	assert.Equal(t, inst.Status.Phase, v1alpha1.PhaseProvisioning)
	f.step("db")
	polls := f.broker.CallsTo("LastOperation")
	assert.Assert(t, is.Len(polls, 1))
	assert.Assert(t, is.Len(f.broker.CallsTo("Provision"), 0))
}

func TestAdoptInstance_RefusesAnIDInUse(t *testing.T) {
	f := newFixture(t)
	f.create("db", planSmall, "")
	_, err := f.engine.AdoptInstance(context.Background(), InstanceAdoption{Record: adopted("other", instanceOSB, ""), HeldPlanID: planSmall})
	r, ok := AsRefused(err)
	assert.Assert(t, ok, "%v", err)
	assert.Equal(t, r.Reason, ReasonRefusedIDInUse)
	_, err = f.st.Instances().Get(context.Background(), ns, "other")
	assert.Assert(t, store.IsNotFound(err))
}
